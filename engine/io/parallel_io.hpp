// Parallel I/O of sharded tensors (.npy, and any raw C-order data or HDF5 dataset), one rank's part: the
// boxes of a job this rank reads or writes, and the job's wire encoding (the Io command of
// engine/dist/worker.hpp).
//   IoTask t = read_task("w.npy", read_npy_header("w.npy"), leaf, 4);   // rows over 4 ranks
//   run_io_part({t}, rank, store);     // this rank's boxes, into / from its shard store
// engine/session/sharded_io.hpp runs every rank's part (over MPI or loopback).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/io/npy.hpp"
#include "engine/ir/node.hpp"
#include "engine/plan/sharded_graph.hpp"
#include "engine/store/shard_store.hpp"

namespace tapestry::io {

struct IoTask {
  enum Kind : uint8_t { Read = 1, Write = 2 };
  Kind kind = Read;
  std::string path;
  uint64_t key = 0;  // the shard store key (a stored leaf's id)
  // Raw: C-order bytes at header.data_offset (.npy, safetensors, contiguous HDF5); Hdf5: the
  // dataset `dataset` (read through the library; written raw into its allocated chunks); Zarr:
  // the chunks of the zarr array at `path` (a write's shards are whole chunks); Csv: text rows.
  enum Format : uint8_t { Raw = 0, Hdf5 = 1, Zarr = 2, Csv = 3 };
  Format format = Raw;
  NpyHeader header;
  std::string dataset;
  std::vector<plan::Shard> shards;  // the boxes, each with the rank that reads/writes it
  // Csv writes go in two steps, because where a rank's rows start depends on how long every
  // earlier rank's text is. Render: each rank formats its shards' rows (kept in its process)
  // and stores each text's length under `aux_key` (box {i} for shard i) for rank 0 to gather.
  // Place: each rank writes shard i's text at offsets[i]. Discard: forget the texts.
  enum Step : uint8_t { Whole = 0, Render = 1, Place = 2, Discard = 3 };
  Step step = Whole;
  char delimiter = ',';
  uint64_t aux_key = 0;
  std::vector<int64_t> offsets;
};

std::vector<char> encode_io(const std::vector<IoTask>& tasks);
// Throws Error ("io message rejected: ...") when the bytes are not well formed.
std::vector<IoTask> decode_io(std::span<const char> bytes);

// This rank's part of `tasks`: reads into / writes from `store` on `rank`. The rank
// `fail_rank` fails instead (TAPESTRY_IO_FAULT, the tests' way to fail one rank; -1: none).
void run_io_part(const std::vector<IoTask>& tasks, int rank, ShardStore& store, int fail_rank = -1);

// Writes `v` (box's extents) to `box` of t's file as a write task's shard would be written.
void write_box(const IoTask& t, const poly::Box& box, const View& v);

// The default layout of a loaded tensor: rows (dimension 1) split as evenly as the ranks allow.
std::vector<plan::Shard> row_split(uint64_t key, const Shape& shape, int ranks);

// A read task of `path` (header already validated) into a new stored leaf with row_split.
IoTask read_task(const std::string& path, const NpyHeader& h, const NodeRef& leaf, int ranks);

}  // namespace tapestry::io
