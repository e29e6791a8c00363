// gpu.nccl: the NCCL transport across ranks, one per GPU (tests/gpu/nccl.sh launches it).
//   gpu_nccl --count      # GPUs here (no MPI)       mpirun -n 2 gpu_nccl   # the checks
// Checks all-reduce (sum, max), reduce-scatter and a ring of send/recv against values each rank
// can compute for itself; any mismatch fails the job with the rank and element.
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "engine/comm/nccl.hpp"
#include "kernels/cuda/cuda_backend.hpp"

using namespace tapestry;

namespace {
int failures = 0;
void expect(bool ok, int rank, const char* what, int64_t i, double got, double want) {
  if (ok) return;
  if (failures++ < 10) std::fprintf(stderr, "rank %d: %s[%lld] = %g, want %g\n", rank, what, (long long)i, got, want);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--count") == 0) return std::printf("%d\n", cuda::cuda_device_count()), 0;
  if (argc > 1 && std::strcmp(argv[1], "--why") == 0) return std::printf("%s\n", cuda::cuda_unavailable_reason().c_str()), 0;
  MPI_Init(&argc, &argv);
  int status = 0;
  try {
    comm::NcclComm nc = comm::NcclComm::bootstrap();
    comm::NcclTransport t(nc);
    const int r = t.rank(), p = t.size();
    const int64_t n = 1 << 20;
    cuda::DeviceBuffer buf(n * sizeof(float)), out(n / p * sizeof(float)), rx(n * sizeof(float));
    std::vector<float> h(n);
    auto fill = [&](float base) {
      for (int64_t i = 0; i < n; ++i) h[i] = base + float(i % 97);
      auto v = Value::alloc(DType::F32, {n});
      std::memcpy(v->data<float>(), h.data(), n * sizeof(float));
      cuda::to_device(v->view(), cuda::dview(buf.get(), DType::F32, {n}));
    };
    auto fetch = [&](void* d, int64_t len) {
      auto v = Value::alloc(DType::F32, {len});
      cuda::to_host(cuda::dview(d, DType::F32, {len}), v->view());
      return std::vector<float>(v->data<float>(), v->data<float>() + len);
    };
    // all-reduce sum: sum over ranks of (rank + i % 97)
    fill(float(r));
    t.all_reduce(cuda::dview(buf.get(), DType::F32, {n}), Op::Sum);
    t.synchronize();
    auto got = fetch(buf.get(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double want = p * (p - 1) / 2.0 + p * double(i % 97);
      expect(got[i] == want, r, "all_reduce", i, got[i], want);
    }
    // all-reduce max
    fill(float(r));
    t.all_reduce(cuda::dview(buf.get(), DType::F32, {n}), Op::Max);
    t.synchronize();
    got = fetch(buf.get(), n);
    for (int64_t i = 0; i < n; ++i) expect(got[i] == float(p - 1) + float(i % 97), r, "max", i, got[i], p - 1 + i % 97);
    // reduce-scatter sum: this rank's chunk
    fill(float(r));
    const int64_t chunk = n / p;
    t.reduce_scatter(cuda::dview(buf.get(), DType::F32, {chunk * p}), cuda::dview(out.get(), DType::F32, {chunk}),
                     Op::Sum);
    t.synchronize();
    got = fetch(out.get(), chunk);
    for (int64_t i = 0; i < chunk; ++i) {
      const int64_t g = r * chunk + i;
      const double want = p * (p - 1) / 2.0 + p * double(g % 97);
      expect(got[i] == want, r, "reduce_scatter", i, got[i], want);
    }
    // a ring: send to r+1, receive from r-1, in one group
    fill(float(100 * r));
    {
      comm::NcclGroup group;
      t.send((r + 1) % p, cuda::dview(buf.get(), DType::F32, {n}));
      t.recv((r + p - 1) % p, cuda::dview(rx.get(), DType::F32, {n}));
    }
    t.synchronize();
    got = fetch(rx.get(), n);
    const int from = (r + p - 1) % p;
    for (int64_t i = 0; i < n; ++i) expect(got[i] == float(100 * from) + float(i % 97), r, "ring", i, got[i], 0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_nccl: %s\n", e.what());
    status = 1;
  }
  if (failures) status = 1;
  int all = 0;
  MPI_Allreduce(&status, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  if (all == 0) std::printf("gpu.nccl: all-reduce, reduce-scatter and ring send/recv agree\n");
  return all;
}
