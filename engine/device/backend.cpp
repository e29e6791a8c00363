// The interface's defaults (backend.hpp).
#include "engine/device/backend.hpp"

#include "engine/device/peers.hpp"
#include "engine/ir/error.hpp"

namespace tapestry {

// No peers: slices between ranks cross through the host.
std::unique_ptr<comm::DevicePeers> DeviceBackend::join_peers(const std::string&, int, int) { return nullptr; }

// Peers without exchanges: the executor sends an exchange's transfers one by one instead.
std::unique_ptr<comm::Collective> comm::DevicePeers::exchange(const ExchangeSpec&, const DeviceView&,
                                                              const DeviceView&, uint64_t) {
  internal_fail(__FILE__, __LINE__, "an exchange on device peers that have none");
}

// Peers without reductions: the executor merges partials on the host instead.
std::unique_ptr<comm::Collective> comm::DevicePeers::reduce(const ReduceSpec&, const DeviceView&,
                                                            const DeviceView&, uint64_t) {
  internal_fail(__FILE__, __LINE__, "a reduction on device peers that have none");
}

void comm::merge_on_device(DeviceBackend& dev, Monoid op, const DeviceView& a, const DeviceView& b,
                           const DeviceView& out) {
  const DType t = a.dtype();
  internal_check(b.dtype() == t && out.dtype() == t && a.shape() == b.shape() && out.shape() == a.shape());
  Op f = Op::Add;
  if (t == DType::Bool) {  // the kernels' sum of bools is `or`, their product `and`
    f = op == Monoid::Sum || op == Monoid::Max || op == Monoid::Or ? Op::LogicalOr : Op::LogicalAnd;
  } else {
    switch (op) {
      case Monoid::Sum: f = Op::Add; break;
      case Monoid::Prod: f = Op::Mul; break;
      case Monoid::Max: f = Op::Maximum; break;
      case Monoid::Min: f = Op::Minimum; break;
      case Monoid::And: f = Op::LogicalAnd; break;
      case Monoid::Or: f = Op::LogicalOr; break;
    }
  }
  DeviceMapProgram p;
  p.leaves = {a, b};
  MapInstr m;
  m.op = f, m.out = t, m.in = t, m.a = 0, m.b = 1;
  p.instrs = {m};
  dev.map(p, out);
}

void DeviceBackend::map_reduce(const DeviceMapProgram& p, const Shape& shape, Op op,
                               const std::vector<int>& dims, const DeviceView& out) {
  DeviceView tmp = device_alloc(*this, p.instrs.back().out, shape);
  map(p, tmp);
  reduce(op, tmp, dims, out);
}

void DeviceBackend::line(Op, const Attrs&, const std::vector<DeviceView>&, const DeviceView&) {
  internal_fail(__FILE__, __LINE__, "a device without line kernels ran a scan or sort");
}

void DeviceBackend::index(Op op, const Attrs&, const std::vector<DeviceView>&, const DeviceView&) {
  (void)op;
  internal_fail(__FILE__, __LINE__, "a device without index kernels ran a gather or scatter");
}

void DeviceBackend::linalg(Op op, const Attrs&, const std::vector<DeviceView>&, const DeviceView&) {
  (void)op;
  internal_fail(__FILE__, __LINE__, "a device without LAPACK kernels ran a linalg op");
}

}  // namespace tapestry
