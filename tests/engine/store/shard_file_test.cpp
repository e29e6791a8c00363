#include <doctest/doctest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "engine/ir/error.hpp"
#include "engine/ir/value.hpp"
#include "engine/store/shard_file.hpp"

using namespace tapestry;

namespace {

std::shared_ptr<Value> iota(const Shape& s, float start) {
  auto v = Value::alloc(DType::F32, s);
  for (int64_t i = 0; i < v->v.numel(); ++i) v->data<float>()[i] = start + static_cast<float>(i);
  return v;
}

bool same(const View& a, const View& b) {
  return a.shape == b.shape && a.dtype == b.dtype &&
         std::memcmp(a.byte_ptr(), b.byte_ptr(), static_cast<size_t>(a.numel()) * dtype_size(a.dtype)) == 0;
}

}  // namespace

TEST_CASE("engine.store.shard_file.pieces_travel_to_a_buddy_under_the_senders_rank") {
  ShardStore mine, buddy;
  const poly::Box top({0, 0}, {1, 2}), bottom({2, 0}, {3, 2});
  mine.put(1, 7, top, iota({2, 3}, 0)->v);
  mine.put(1, 7, bottom, iota({2, 3}, 6)->v);
  mine.put(1, 8, top, iota({2, 3}, 100)->v);
  const std::vector<char> msg = encode_pieces(mine, {7}, 1);
  CHECK(decode_pieces_into(msg, buddy, 1) == 2 * 6 * 4);
  // Kept under rank 1: the buddy's own rank never reads them, a restore does.
  CHECK(buddy.bytes(1, 7) == 48);
  CHECK(buddy.bytes(2, 7) == 0);
  CHECK_FALSE(buddy.has(8));
  CHECK(same(*buddy.find(1, 7, bottom), *mine.find(1, 7, bottom)));
  buddy.drop(7);  // a replica goes with its key
  CHECK_FALSE(buddy.has(7));
}

TEST_CASE("engine.store.shard_file.pieces_written_after_a_prefix_equal_the_message") {
  // A replica message is {epoch u64, pieces}: the pieces are written in place after it.
  ShardStore mine, buddy;
  mine.put(2, 5, poly::Box({0, 0}, {2, 1}), iota({3, 2}, 10)->v);
  mine.put(2, 6, poly::Box({0}, {3}), iota({4}, 20)->v);
  ByteWriter w;
  w.put<uint64_t>(41);
  encode_pieces_to(w, mine, {5, 6}, 2);
  const std::vector<char> msg = w.take(), alone = encode_pieces(mine, {5, 6}, 2);
  REQUIRE(msg.size() == sizeof(uint64_t) + alone.size());
  CHECK(std::equal(alone.begin(), alone.end(), msg.begin() + sizeof(uint64_t)));
  CHECK(decode_pieces_into(std::span<const char>(msg).subspan(sizeof(uint64_t)), buddy, 2) == (6 + 4) * 4);
  CHECK(same(*buddy.find(2, 6, poly::Box({0}, {3})), *mine.find(2, 6, poly::Box({0}, {3}))));
}

TEST_CASE("engine.store.shard_file.bad_bytes_are_rejected") {
  ShardStore s;
  s.put(0, 3, poly::Box({0}, {3}), iota({4}, 1)->v);
  std::vector<char> msg = encode_pieces(s, {3}, 0);
  ShardStore t;
  std::vector<char> cut(msg.begin(), msg.end() - 5);
  CHECK_THROWS_AS(decode_pieces_into(cut, t, 0), Error);
  msg[8] ^= 0x7f;  // the piece count
  CHECK_THROWS_AS(decode_pieces_into(msg, t, 0), Error);
}

TEST_CASE("engine.store.shard_file.salvage_and_load_into_another_store") {
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("tapestry-salvage-test-" + std::to_string(getpid())))
          .string();
  ShardStore rank0, rank1;  // rank 1 keeps a replica of rank 0's piece
  const poly::Box a({0}, {4}), b({5}, {9});
  rank0.put(0, 11, a, iota({5}, 0)->v);
  rank1.put(1, 11, b, iota({5}, 5)->v);
  rank1.put(0, 11, a, iota({5}, 0)->v);
  salvage_store(rank1, dir, 1);  // rank 0 was lost: only rank 1 salvaged
  const auto have = salvaged_pieces(dir);
  CHECK(have.count({11, 0}) == 1);
  CHECK(have.count({11, 1}) == 1);
  CHECK(std::filesystem::exists(dir + "/w1.done"));
  ShardStore fresh0, fresh1;
  CHECK(load_salvaged(fresh0, dir, 11, 0, 0));  // from the buddy's copy
  CHECK(load_salvaged(fresh1, dir, 11, 1, 1));  // from its own file
  CHECK_FALSE(load_salvaged(fresh1, dir, 12, 1, 1));
  CHECK(same(*fresh0.find(0, 11, a), *rank0.find(0, 11, a)));
  CHECK(same(*fresh1.find(1, 11, b), *rank1.find(1, 11, b)));
  std::filesystem::remove_all(dir);
}
