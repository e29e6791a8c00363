// The machine a plan is costed for: ranks, their compute and memory, and the links between them.
//   Mesh m = Mesh::modelled(1024);              // 128 nodes of 8 ranks, defaults below
//   double t = m.transfer_time(0, 9, 1 << 20);  // latency + bytes / bandwidth of the link used
//   Mesh here = Mesh::this_machine(2);          // one node: every transfer is shared memory
//   Mesh g = Mesh::of_axes({{"nodes", 16, net}, {"gpus", 8, nvlink}});   // tp.mesh{nodes=16, gpus=8}
// With named axes (as JAX's Mesh and DTensor's DeviceMesh), rank r has coordinates in row-major
// order over the axes, outermost first, and two ranks talk over the link of the outermost axis
// on which their coordinates differ.
// The defaults below are a modelled rank's (docs/planner.md, known limits): sgemm ~67-135 GFLOP/s
// per core, ~11 GB/s of memory bandwidth, OpenMPI shared-memory ping-pong ~5 GB/s and ~0.5 us; the
// inter-node link is a modelled cluster network (25 GB/s, 2 us). The running machine's mesh takes
// its measured rates instead (engine/session/machine_rates.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tapestry::plan {

struct Link {
  double bandwidth = 5e9;   // bytes/s
  double latency = 0.5e-6;  // s per message
  double time(double bytes) const { return bytes > 0 ? latency + bytes / bandwidth : 0.0; }
  bool operator==(const Link&) const = default;
};

struct MeshAxis {
  std::string name;
  int size = 1;
  Link link;
  bool operator==(const MeshAxis&) const = default;
};

struct Mesh {
  int ranks = 1;
  int devices_per_rank = 1;
  double flops_per_s = 100e9;        // per rank, fp32
  double mem_bytes_per_s = 11e9;     // per rank: bounds memory-bound blocks and combines
  double mem_bytes_per_rank = 16e9;  // capacity: beyond it a plan pays memory_penalty
  // Stored pieces may wait on disk between their readers (the session spills them under
  // --memory-per-rank): a plan needs only what its steps hold at once (peak_memory's
  // out_of_core count), and one that needs more may run in bands (bands.hpp).
  bool spill = false;
  int ranks_per_node = 8;
  Link intra{5e9, 0.5e-6};  // shared-memory MPI between ranks of one node
  Link inter{25e9, 2e-6};   // the network between nodes
  // Named axes, outermost first (their sizes multiply to `ranks`); empty: nodes of
  // ranks_per_node ranks joined by `inter`, `intra` within a node.
  std::vector<MeshAxis> axes;

  // A modelled cluster of nodes of 8 ranks (ranks must be >= 1).
  static Mesh modelled(int ranks);
  // All ranks on this machine: every link is shared memory.
  static Mesh this_machine(int ranks);
  // A mesh of named axes (each size >= 1), the other rates the defaults below.
  static Mesh of_axes(std::vector<MeshAxis> axes);

  int node_of(int rank) const { return rank / ranks_per_node; }
  const Link& link(int from, int to) const;
  // The axes as "nodes=16 x gpus=8", or "" without named axes.
  std::string axes_string() const;
  double transfer_time(int from, int to, double bytes) const { return link(from, to).time(bytes); }
  // Compute time of a block: the roofline of its flops and the bytes it touches.
  double compute_time(double flops, double bytes) const;

  bool operator==(const Mesh&) const = default;
  size_t hash() const;  // for the plan cache
};

std::string to_string(const Mesh& m);

}  // namespace tapestry::plan
