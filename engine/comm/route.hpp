// Which transport moves a slice: NCCL when both ends hold it in device memory, MPI otherwise.
//   Route r = route(src_on_device, dst_on_device, have_nccl);   // Route::Nccl / Route::Mpi
//   if (r.stage_to_host) copy the device slice to the host first; if (r.stage_to_device) after.
// The executor's seam (docs/gpu.md): sharded_run asks this per transfer once block values can
// live on the device; a mixed pair goes over MPI with the device side staged through the host.
#pragma once

namespace tapestry::comm {

enum class Path { Mpi, Nccl };

struct Route {
  Path path = Path::Mpi;
  bool stage_to_host = false;    // the sender copies device -> host before MPI
  bool stage_to_device = false;  // the receiver copies host -> device after MPI
};

inline Route route(bool src_on_device, bool dst_on_device, bool have_nccl) {
  if (src_on_device && dst_on_device && have_nccl) return {Path::Nccl, false, false};
  return {Path::Mpi, src_on_device, dst_on_device};
}

}  // namespace tapestry::comm
