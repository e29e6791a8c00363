// Device peers of the simulated device under mpirun: NCCL's rules kept over MPI, so the
// executor's order of posting is checked across processes exactly as a GPU cluster needs it.
//   std::unique_ptr<DevicePeers> p = mpi_simulated_peers(rank, size);   // collective
// - A send is MPI_Issend: it completes only once its receive is matched (NCCL does not buffer).
// - Every message travels on a communicator of its own under one tag, so MPI matches each
//   pair's messages in posting order (NCCL's order matching); each carries its label, and a
//   receive that meets another label fails instead of taking the wrong data.
// - A rank's operations complete in the order it posted them, as on a CUDA stream.
// - Exchanges and reductions (has_exchanges, can_reduce) are one MPI collective each
//   (comm::MpiGroups: MPI_Ibcast / MPI_Iallgatherv / MPI_Ialltoallv, MPI_Ireduce /
//   MPI_Iallreduce / MPI_Ireduce_scatter) on a communicator of the members, created when the
//   group first meets (once every member's note says it posted one: never a wait inside MPI
//   for a member whose run failed) and cached, as NCCL's are. Each is preceded on that communicator by an
//   all-gather of the members' labels, so members that posted different collectives there
//   fail at once instead of merging the wrong data.
// The simulated device's memory is host memory, which MPI reads and writes directly.
#pragma once

#include <memory>

#include "engine/device/peers.hpp"

namespace tapestry::comm {

// Collective over MPI_COMM_WORLD (MPI must be running); rank and size are checked against it.
std::unique_ptr<DevicePeers> mpi_simulated_peers(int rank, int size);

}  // namespace tapestry::comm
