#include <doctest/doctest.h>

#include "engine/io/chunk_grid.hpp"
#include "engine/io/parallel_io.hpp"

using namespace tapestry;
using namespace tapestry::io;

namespace {

std::vector<plan::Shard> rows(const std::vector<std::pair<int64_t, int64_t>>& blocks, int64_t cols) {
  std::vector<plan::Shard> out;
  int r = 0;
  for (const auto& [lo, hi] : blocks) out.push_back(plan::Shard{7, poly::Box({lo, 0}, {hi, cols - 1}), r++});
  return out;
}

}  // namespace

TEST_CASE("io.chunk_grid.every_chunk_once") {
  std::vector<poly::Box> seen;
  for_each_chunk({10, 7}, {4, 3}, [&](const poly::Box& b) { seen.push_back(b); });
  REQUIRE(seen.size() == 9);
  CHECK(seen[0] == poly::Box({0, 0}, {3, 2}));
  CHECK(seen[2] == poly::Box({0, 6}, {3, 6}));  // clipped at the edge
  CHECK(seen[8] == poly::Box({8, 6}, {9, 6}));
  int n = 0;
  for_each_chunk({}, {}, [&](const poly::Box& b) {
    CHECK(b.rank() == 0);
    ++n;
  });
  CHECK(n == 1);
}

TEST_CASE("io.chunk_grid.default_nests_in_shards") {
  // 1000 rows of 1 KiB over 4 ranks: 250-row shards; 1 MiB is 1024 rows, so one chunk per shard.
  CHECK(
      chunks_for_shards({1000, 256}, DType::F32, rows({{0, 249}, {250, 499}, {500, 749}, {750, 999}}, 256)) ==
      std::vector<int64_t>{250, 256});
  // 4 KiB rows: 256 rows wanted, more than a shard holds: a chunk per shard again.
  CHECK(chunks_for_shards({1000, 1024}, DType::F32,
                          rows({{0, 249}, {250, 499}, {500, 749}, {750, 999}}, 1024)) ==
        std::vector<int64_t>{250, 1024});
  // 16 KiB rows: 64 wanted; 50 divides 250 (125 is too many): every chunk inside one shard.
  const auto even = rows({{0, 249}, {250, 499}, {500, 749}, {750, 999}}, 4096);
  const std::vector<int64_t> c = chunks_for_shards({1000, 4096}, DType::F32, even);
  CHECK(c == std::vector<int64_t>{50, 4096});
  CHECK(chunk_writers({1000, 4096}, c, even).shared.empty());
  // Uneven rows (334/333/333 share only 1): the ~1 MiB size, a straddling chunk per boundary.
  const auto uneven = rows({{0, 333}, {334, 666}, {667, 999}}, 4096);
  const std::vector<int64_t> u = chunks_for_shards({1000, 4096}, DType::F32, uneven);
  CHECK(u == std::vector<int64_t>{64, 4096});
  CHECK(chunk_writers({1000, 4096}, u, uneven).shared.size() == 2);
  // A column split: chunks as wide as a shard.
  const std::vector<plan::Shard> cols{{7, poly::Box({0, 0}, {9, 49}), 0},
                                      {7, poly::Box({0, 50}, {9, 99}), 1}};
  CHECK(chunks_for_shards({10, 100}, DType::F64, cols) == std::vector<int64_t>{10, 50});
}

TEST_CASE("io.chunk_grid.writers") {
  // Rows 0..3 on rank 0, 4..9 on rank 1, chunks of 3 rows: rows 3..5 straddle.
  const auto s = rows({{0, 3}, {4, 9}}, 4);
  const ChunkWriters w = chunk_writers({10, 4}, {3, 2}, s);
  REQUIRE(w.shared.size() == 2);
  CHECK(w.shared[0] == poly::Box({3, 0}, {5, 1}));
  CHECK(w.shared[1] == poly::Box({3, 2}, {5, 3}));
  REQUIRE(w.owned.size() == 6);
  CHECK(w.owned[0].rank == 0);
  CHECK(w.owned[0].box == poly::Box({0, 0}, {2, 1}));
  CHECK(w.owned[5].rank == 1);
  CHECK(w.owned[5].box == poly::Box({9, 2}, {9, 3}));  // the edge chunk, clipped
  // Replicated: every rank holds every chunk; they take turns.
  const std::vector<plan::Shard> rep{{7, poly::Box({0}, {9}), 0}, {7, poly::Box({0}, {9}), 1}};
  const ChunkWriters r = chunk_writers({10}, {5}, rep);
  REQUIRE(r.owned.size() == 2);
  CHECK(r.owned[0].rank == 0);
  CHECK(r.owned[1].rank == 1);
  // The straddling chunks of a row merge into one box to gather.
  CHECK(merge_boxes(w.shared) == std::vector<poly::Box>{poly::Box({3, 0}, {5, 3})});
  CHECK(merge_boxes({poly::Box({0, 0}, {1, 1}), poly::Box({4, 0}, {5, 1})}).size() == 2);
}

TEST_CASE("io.parallel_io.csv_steps_on_the_wire") {
  IoTask t;
  t.kind = IoTask::Write;
  t.format = IoTask::Csv;
  t.path = "out.csv.partial-1";
  t.key = 42;
  t.header.shape = {10, 3};
  t.step = IoTask::Place;
  t.delimiter = '\t';
  t.aux_key = 43;
  t.offsets = {12, 400};
  t.shards = rows({{0, 4}, {5, 9}}, 3);
  const std::vector<IoTask> back = decode_io(encode_io({t}));
  REQUIRE(back.size() == 1);
  CHECK(back[0].format == IoTask::Csv);
  CHECK(back[0].step == IoTask::Place);
  CHECK(back[0].delimiter == '\t');
  CHECK(back[0].aux_key == 43);
  CHECK(back[0].offsets == std::vector<int64_t>{12, 400});
  CHECK(back[0].shards.size() == 2);
  CHECK(back[0].shards[1].box == poly::Box({5, 0}, {9, 2}));
}
