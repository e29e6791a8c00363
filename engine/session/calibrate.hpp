// Measuring the machine's rates for the planner, in well under a second.
//   MachineRates r = calibrate(machine_key(threads));        // sgemm and copy on this rank
//   r.link = ping_pong(*mpi, &r.link_measured);               // under mpirun: ranks 0 and 1
// The compute rate is the best of a few 768^3 sgemms through the CPU kernels (cpu::run_matmul,
// the path a rank's matmul blocks take, with the kernels' threads); the memory rate the best of
// a few 32 MiB copies, counting bytes read and written, as the roofline's bytes are counted.
#pragma once

#include <string>

#include "engine/comm/mpi.hpp"
#include "engine/session/machine_rates.hpp"

namespace tapestry {

MachineRates calibrate(const std::string& key);

// A ping-pong between MPI ranks 0 and 1 of the job (collective over the job: every rank calls
// it; ranks past 1 only wait): latency from 8-byte round trips, bandwidth from 1 MiB ones, one
// way. Returns the built-in link, *measured = false, on a job of one rank.
plan::Link ping_pong(comm::Mpi& mpi, bool* measured);

}  // namespace tapestry
