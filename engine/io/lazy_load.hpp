// Lazy loads: a file's array as a graph leaf (Op::Load, engine/ir/load_attrs.hpp) that reads
// nothing until observed, and then only the boxes the plan needs, on the ranks that need them.
//   NodeRef w = lazy_raw("w.npy", read_npy_header("w.npy"));          // .npy, safetensors
//   NodeRef u = lazy_hdf5("sim.h5", "/fields/u", read_hdf5_info(...));  // chunked or contiguous
//   NodeRef z = lazy_zarr("data.zarr", read_zarr_meta("data.zarr"));
//   NodeRef t = lazy_csv("t.csv", index_csv("t.csv", {}));               // rows found, not parsed
// Each records the file's modification time and size: a later load of a rewritten file is a
// new node, and reading a file that changed under a node fails naming it ("changed since it
// was loaded") rather than mixing two versions.
#pragma once

#include <string>
#include <vector>

#include "engine/io/csv.hpp"
#include "engine/io/hdf5.hpp"
#include "engine/io/npy.hpp"
#include "engine/io/zarr.hpp"
#include "engine/ir/node.hpp"

namespace tapestry::io {

NodeRef lazy_raw(const std::string& path, const NpyHeader& h);
NodeRef lazy_hdf5(const std::string& path, const std::string& dataset, const Hdf5Info& info);
NodeRef lazy_zarr(const std::string& dir, const ZarrMeta& m);
// A CSV table indexed at the load; each box parses only its own rows.
NodeRef lazy_csv(const std::string& path, const CsvIndex& ix);

// The bytes an observation of `roots` reads from files: every load node it reaches that holds
// no value, once; divided by `mpi_ranks` (> 1 under mpirun: this process reads its share).
int64_t load_bytes(const std::vector<NodeRef>& roots, int mpi_ranks);

}  // namespace tapestry::io
