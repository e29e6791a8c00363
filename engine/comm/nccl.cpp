#include "engine/comm/nccl.hpp"

#include <mpi.h>
#include <nccl.h>

#include "engine/comm/nccl_frame.hpp"
#include "engine/device/select.hpp"
#include "engine/ir/error.hpp"
#include "kernels/cuda/runtime.hpp"

namespace tapestry::comm {
namespace {

void check_nccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) user_error("NCCL ", what, ": ", ncclGetErrorString(r));
}

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::Bool: return ncclUint8;
    case DType::I32: return ncclInt32;
    case DType::I64: return ncclInt64;
    case DType::F32: return ncclFloat32;
    case DType::F64: break;
  }
  return ncclFloat64;
}

ncclRedOp_t nccl_op(Op op) {
  switch (op) {
    case Op::Sum: return ncclSum;
    case Op::Prod: return ncclProd;
    case Op::Max: return ncclMax;
    case Op::Min: return ncclMin;
    default: user_error("NCCL reductions are Sum, Prod, Max or Min, not ", op_def(op).name);
  }
}

ncclComm_t as_comm(void* p) { return static_cast<ncclComm_t>(p); }

}  // namespace

NcclComm NcclComm::bootstrap() {
  int inited = 0;
  MPI_Initialized(&inited);
  user_check(inited != 0, "NCCL bootstrap needs MPI to be initialised (run under mpirun)");
  int rank = 0, size = 1, version = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  check_nccl(ncclGetVersion(&version), "ncclGetVersion");
  cuda::select_device(device::local_rank_from_env());
  ncclUniqueId id;
  NcclFrame frame;
  if (rank == 0) {
    check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    frame = frame_unique_id(id.internal, version, size);
  }
  MPI_Bcast(&frame, sizeof frame, MPI_BYTE, 0, MPI_COMM_WORLD);
  if (const std::string err = check_frame(frame, version, size); !err.empty()) user_error(err);
  std::memcpy(id.internal, frame.id, kNcclIdBytes);
  ncclComm_t comm = nullptr;
  check_nccl(ncclCommInitRank(&comm, size, id, rank), "ncclCommInitRank");
  return NcclComm(comm, rank, size);
}

NcclComm::~NcclComm() {
  if (comm_) ncclCommDestroy(as_comm(comm_));
}
NcclComm::NcclComm(NcclComm&& o) noexcept : comm_(o.comm_), rank_(o.rank_), size_(o.size_) { o.comm_ = nullptr; }

NcclGroup::NcclGroup() { check_nccl(ncclGroupStart(), "ncclGroupStart"); }
NcclGroup::~NcclGroup() { ncclGroupEnd(); }

void NcclTransport::send(int to, const cuda::DView& v) {
  internal_check(v.is_contiguous() && to != rank());
  check_nccl(ncclSend(v.data, v.numel(), nccl_type(v.dtype), to, as_comm(comm_.raw()), cuda::context().s()),
             "ncclSend");
  bytes_ += v.numel() * dtype_size(v.dtype);
}

void NcclTransport::recv(int from, const cuda::DView& v) {
  internal_check(v.is_contiguous() && from != rank());
  check_nccl(ncclRecv(v.data, v.numel(), nccl_type(v.dtype), from, as_comm(comm_.raw()), cuda::context().s()),
             "ncclRecv");
}

void NcclTransport::all_reduce(const cuda::DView& v, Op op) {
  internal_check(v.is_contiguous());
  check_nccl(ncclAllReduce(v.data, v.data, v.numel(), nccl_type(v.dtype), nccl_op(op), as_comm(comm_.raw()),
                           cuda::context().s()),
             "ncclAllReduce");
}

void NcclTransport::reduce_scatter(const cuda::DView& in, const cuda::DView& out, Op op) {
  internal_check(in.is_contiguous() && out.is_contiguous() && in.dtype == out.dtype &&
                 in.numel() == out.numel() * size());
  check_nccl(ncclReduceScatter(in.data, out.data, out.numel(), nccl_type(out.dtype), nccl_op(op),
                               as_comm(comm_.raw()), cuda::context().s()),
             "ncclReduceScatter");
}

void NcclTransport::synchronize() { cuda::synchronize(); }

}  // namespace tapestry::comm
