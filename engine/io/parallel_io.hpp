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
  // dataset `dataset` through the library; Zarr: the chunks of the zarr array at `path`.
  enum Format : uint8_t { Raw = 0, Hdf5 = 1, Zarr = 2 };
  Format format = Raw;
  NpyHeader header;
  std::string dataset;
  std::vector<plan::Shard> shards;  // the boxes, each with the rank that reads/writes it
};

std::vector<char> encode_io(const std::vector<IoTask>& tasks);
// Throws Error ("io message rejected: ...") when the bytes are not well formed.
std::vector<IoTask> decode_io(std::span<const char> bytes);

// This rank's part of `tasks`: reads into / writes from `store` on `rank`. The rank
// `fail_rank` fails instead (TAPESTRY_IO_FAULT, the tests' way to fail one rank; -1: none).
void run_io_part(const std::vector<IoTask>& tasks, int rank, ShardStore& store, int fail_rank = -1);

// The default layout of a loaded tensor: rows (dimension 1) split as evenly as the ranks allow.
std::vector<plan::Shard> row_split(uint64_t key, const Shape& shape, int ranks);

// A read task of `path` (header already validated) into a new stored leaf with row_split.
IoTask read_task(const std::string& path, const NpyHeader& h, const NodeRef& leaf, int ranks);

}  // namespace tapestry::io
