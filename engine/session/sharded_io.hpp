// Parallel .npy I/O of sharded tensors: every rank reads or writes only its own boxes.
//   NodeRef leaf = load_npy_sharded(session, "w.npy", 4);   // rows split over 4 ranks, in their shard stores
//   save_npy_sharded(session, {{"out.npy", leaf}});         // rank 0 writes the header, each rank its boxes
// Over MPI the ranks' parts travel as one Io command (engine/dist/worker.hpp) and every rank
// answers with a status; over loopback (TAPESTRY_RANKS) this process does every rank's part.
// Nothing passes through rank 0 but headers. A failure on any rank throws "rank r: ..." after
// every rank has answered: a load keeps no shard, a save leaves no file (it writes a temporary
// beside the path and renames it once all ranks succeeded).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "engine/io/parallel_io.hpp"
#include "engine/io/zarr.hpp"

namespace tapestry {
class Session;
}

namespace tapestry::io {

// Every rank's part, on `ranks` ranks (the MPI job when it has that many, else loopback).
void run_io(Session& s, const std::vector<IoTask>& tasks, int ranks);

// Loads `path` onto `ranks` ranks (> 1): returns a stored leaf registered in the session.
NodeRef load_npy_sharded(Session& s, const std::string& path, int ranks);

// Loads the raw C-order tensors `hs` describe (any file: .npy, safetensors) onto `ranks` ranks
// in one job: a stored leaf per header, each with its rows split over the ranks.
// With another format, each rank reads its rows through that format's reader instead (an HDF5
// dataset by hyperslab, a zarr array's chunks).
std::vector<NodeRef> load_raw_sharded(Session& s, const std::string& path, const std::vector<NpyHeader>& hs,
                                      int ranks, IoTask::Format format = IoTask::Raw,
                                      const std::string& dataset = {});

// The stored leaf `x` stands for (itself, or the leaf it was stored as); nullptr if none.
NodeRef stored_leaf_of(Session& s, const NodeRef& x);

// Writes each stored leaf (each with a layout, no value on rank 0) to its path in parallel:
// headers by rank 0, boxes by their ranks, renames once all ranks reported success.
void save_npy_sharded(Session& s, const std::vector<std::pair<std::string, NodeRef>>& files);

// Writes one file holding several tensors at known places (a safetensors file, an HDF5
// file): `create(tmp)` makes the temporary (header, size) and returns where each part goes;
// each part is written there, a stored leaf's boxes by their ranks, a node holding a value by
// this process. Renamed over `path` once every rank succeeded; on a failure no file is left
// and `path` is unchanged.
// With format Hdf5 the parts are the chunked `dataset`'s (written raw into its chunks).
void save_parts_sharded(Session& s, const std::string& path,
                        const std::function<std::vector<NpyHeader>(const std::string&)>& create,
                        const std::vector<NodeRef>& parts, IoTask::Format format = IoTask::Raw,
                        const std::string& dataset = {});

// Writes the stored leaf `x` as the zarr array `m` describes (m.chunks: the grid) into a fresh
// store swapped in at `path` once every rank succeeded: each chunk a rank holds whole is
// encoded and written by that rank (engine/io/chunk_grid.hpp); a chunk no rank holds whole is
// gathered to rank 0 (only its box) and written there. On a failure `path` is unchanged.
void save_zarr_sharded(Session& s, const std::string& path, const NodeRef& x, const ZarrMeta& m);

// Writes the stored leaf `x` (1-D or 2-D) as CSV text: each rank formats the rows it holds,
// rank 0 gathers their lengths and gives each rank its offset (a prefix sum, after the header
// row `names` makes), then each rank writes its text there; renamed over `path` once all
// succeeded. A layout whose shards are not blocks of whole rows is first stored as one.
void save_csv_sharded(Session& s, const std::string& path, const NodeRef& x, char delimiter,
                      const std::vector<std::string>& names);

// Bytes this process writes of `bytes` on `ranks` ranks (under mpirun its share), for the
// progress bar.
int64_t io_share(Session& s, int64_t bytes, int ranks);

}  // namespace tapestry::io
