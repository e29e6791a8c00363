// ShardStore's spilling (engine/store/shard_store.hpp, used by engine/session/spill.hpp): the
// coldest unread pieces go to files and come back equal; a piece a reader holds stays; a write
// that fails names the tensor and leaves the piece in memory.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "engine/ir/error.hpp"
#include "engine/ir/value.hpp"
#include "engine/store/shard_store.hpp"

using namespace tapestry;

namespace {

std::shared_ptr<Value> iota(const Shape& s, float start) {
  auto v = Value::alloc(DType::F32, s);
  for (int64_t i = 0; i < v->v.numel(); ++i) v->data<float>()[i] = start + static_cast<float>(i);
  return v;
}

std::vector<float> floats(const View& v) {
  std::vector<float> out(static_cast<size_t>(v.numel()));
  std::memcpy(out.data(), v.byte_ptr(), out.size() * sizeof(float));
  return out;
}

struct TempDir {
  std::string path =
      (std::filesystem::temp_directory_path() / ("spill-test-" + std::to_string(getpid()))).string();
  ~TempDir() { std::filesystem::remove_all(path); }
  size_t files() const {
    if (!std::filesystem::exists(path)) return 0;
    size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(path)) ++n;
    return n;
  }
};

std::string name_of(uint64_t key) { return "tp.env.t" + std::to_string(key); }

const poly::Box kBox({0, 0}, {3, 3});  // a 4 x 4 piece: 64 bytes

}  // namespace

TEST_CASE("engine.store.shard_store.spills_the_coldest_and_reads_it_back") {
  TempDir dir;
  ShardStore st;
  st.put(0, 1, kBox, iota({4, 4}, 0)->v);
  st.put(0, 2, kBox, iota({4, 4}, 100)->v);
  CHECK(st.find(0, 1, kBox).has_value());  // 1 read last: 2 is the coldest
  const int64_t live = Buffer::live_bytes();
  CHECK(st.spill_coldest(1, dir.path, false, name_of) == 64);
  CHECK(Buffer::live_bytes() == live - 64);
  CHECK(st.spills() == 1);
  CHECK(st.spill_bytes() == 64);
  CHECK(dir.files() == 1);
  CHECK(st.bytes(0, 2) == 64);  // still its piece, on disk
  {
    const std::optional<View> back = st.find(0, 2, kBox);
    REQUIRE(back.has_value());
    CHECK(floats(*back) == floats(iota({4, 4}, 100)->v));
  }
  CHECK(st.readbacks() == 1);
  CHECK(dir.files() == 1);  // read back, its file is kept: the piece cannot change
  // Spilled again once nothing reads it: the memory goes, nothing is written.
  const int64_t live2 = Buffer::live_bytes();
  CHECK(st.find(0, 1, kBox).has_value());  // 1 is now warmer than 2
  CHECK(st.spill_coldest(1, dir.path, false, name_of) == 64);
  CHECK(Buffer::live_bytes() == live2 - 64);
  CHECK(st.spills() == 2);
  CHECK(st.spill_bytes() == 64);  // written once
  CHECK(dir.files() == 1);
  const std::optional<View> again = st.find(0, 2, kBox);
  REQUIRE(again.has_value());
  CHECK(floats(*again) == floats(iota({4, 4}, 100)->v));
  st.drop(2);
  CHECK(dir.files() == 0);  // dropping the tensor removes the file
}

TEST_CASE("engine.store.shard_store.a_read_piece_is_not_spilled") {
  TempDir dir;
  ShardStore st;
  st.put(0, 1, kBox, iota({4, 4}, 0)->v);
  const std::optional<View> reader = st.find(0, 1, kBox);  // a plan's window on it
  REQUIRE(reader.has_value());
  CHECK(st.spill_coldest(64, dir.path, false, name_of) == 0);
  CHECK(st.spills() == 0);
  CHECK(dir.files() == 0);
}

TEST_CASE("engine.store.shard_store.a_failed_spill_names_the_tensor_and_keeps_it") {
  TempDir dir;
  ShardStore st;
  st.put(3, 5, kBox, iota({4, 4}, 7)->v);
  std::string msg;
  try {
    st.spill_coldest(64, dir.path, true, name_of);
  } catch (const Error& e) {
    msg = e.what();
  }
  CHECK(msg.find("cannot spill tp.env.t5 (its piece on rank 3, 64 B)") != std::string::npos);
  CHECK(msg.find("No space left on device") != std::string::npos);
  CHECK(st.spills() == 0);
  CHECK(dir.files() == 0);
  const std::optional<View> v = st.find(3, 5, kBox);
  REQUIRE(v.has_value());
  CHECK(floats(*v) == floats(iota({4, 4}, 7)->v));
}

TEST_CASE("engine.store.shard_store.dropping_a_spilled_tensor_removes_its_file") {
  TempDir dir;
  {
    ShardStore st;
    st.put(0, 1, kBox, iota({4, 4}, 0)->v);
    st.put(0, 2, kBox, iota({4, 4}, 0)->v);
    CHECK(st.spill_coldest(128, dir.path, false, name_of) == 128);
    CHECK(dir.files() == 2);
    st.drop(1);
    CHECK(dir.files() == 1);
  }
  CHECK(dir.files() == 0);  // and the store's end, the rest
}
