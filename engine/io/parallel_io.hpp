// Parallel .npy I/O of sharded tensors: every rank reads or writes only its own boxes.
//   NodeRef leaf = load_npy_sharded("w.npy", 4);   // rows split over 4 ranks, in their shard stores
//   save_npy_sharded("out.npy", leaf);             // rank 0 writes the header, each rank its boxes
// Over MPI the ranks' parts travel as one Io command (engine/exec/worker.hpp) and every rank
// answers with a status; over loopback (TAPESTRY_RANKS) this process does every rank's part.
// Nothing passes through rank 0 but headers. A failure on any rank throws "rank r: ..." after
// every rank has answered: a load keeps no shard, a save leaves no file (it writes a temporary
// beside the path and renames it once all ranks succeeded).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/io/npy.hpp"
#include "engine/ir/node.hpp"
#include "engine/plan/sharded_graph.hpp"

namespace tapestry::io {

struct IoTask {
  enum Kind : uint8_t { Read = 1, Write = 2 };
  Kind kind = Read;
  std::string path;
  uint64_t key = 0;                  // the shard store key (a stored leaf's id)
  NpyHeader header;
  std::vector<plan::Shard> shards;   // the boxes, each with the rank that reads/writes it
};

std::vector<char> encode_io(const std::vector<IoTask>& tasks);
// Throws Error ("io message rejected: ...") when the bytes are not well formed.
std::vector<IoTask> decode_io(std::span<const char> bytes);

// This rank's part of `tasks`: reads into / writes from shard_store() on `rank`.
// TAPESTRY_IO_FAULT=RANK makes that rank fail (tests).
void run_io_part(const std::vector<IoTask>& tasks, int rank);

// Every rank's part, on `ranks` ranks (the MPI job when it has that many, else loopback).
void run_io(const std::vector<IoTask>& tasks, int ranks);

// The default layout of a loaded tensor: rows (dimension 1) split as evenly as the ranks allow.
std::vector<plan::Shard> row_split(uint64_t key, const Shape& shape, int ranks);

// A read task of `path` (header already validated) into a new stored leaf with row_split.
IoTask read_task(const std::string& path, const NpyHeader& h, const NodeRef& leaf, int ranks);

// Loads `path` onto `ranks` ranks (> 1): returns a registered stored leaf.
NodeRef load_npy_sharded(const std::string& path, int ranks);

// The stored leaf `x` stands for (itself, or the leaf it was stored as); nullptr if none.
NodeRef stored_leaf_of(const NodeRef& x);

// Writes each stored leaf (each with a layout, no value on rank 0) to its path in parallel:
// headers by rank 0, boxes by their ranks, renames once all ranks reported success.
void save_npy_sharded(const std::vector<std::pair<std::string, NodeRef>>& files);

}  // namespace tapestry::io
