#include "engine/device/host_backend.hpp"

#include <climits>
#include <new>

#include "engine/ir/error.hpp"

namespace tapestry {

DeviceView HostBackend::wrap(const View& v) {
  internal_check(v.buf != nullptr);
  DeviceView d;
  d.mem = v.buf;
  d.layout = v;
  d.layout.buf = nullptr;
  return d;
}

bool HostBackend::is_host(const DeviceView& d) { return d.mem && d.mem->host_buffer(); }

View HostBackend::view(const DeviceView& d) const {
  const Buffer* b = d.mem ? d.mem->host_buffer() : nullptr;
  internal_check(b != nullptr);  // a view of another device's memory
  View v = d.layout;
  v.buf = std::shared_ptr<Buffer>(d.mem, const_cast<Buffer*>(b));  // owns d.mem, points at its buffer
  return v;
}

std::shared_ptr<DeviceMemory> HostBackend::allocate(size_t bytes) {
  try {
    return std::make_shared<Buffer>(bytes);
  } catch (const std::bad_alloc&) {
    user_error("out of memory allocating ", bytes, " bytes");
  }
}

void HostBackend::upload(const View& host, const DeviceView& dst) {
  internal_check(dst.is_contiguous());
  cpu::copy_view(host, view(dst));
}

void HostBackend::download(const DeviceView& src, const View& host) {
  internal_check(host.is_contiguous());
  cpu::copy_view(view(src), host);
}

// The CPU interprets a program of any size.
MapLimits HostBackend::map_limits() const { return {INT_MAX, INT_MAX}; }

void HostBackend::copy(const DeviceView& src, const DeviceView& dst) { cpu::copy_view(view(src), view(dst)); }

void HostBackend::map(const DeviceMapProgram& p, const DeviceView& out) {
  cpu::MapProgram hp;
  for (const DeviceView& l : p.leaves) hp.leaves.push_back(view(l));
  hp.instrs = p.instrs;
  hp.stream_out = p.stream_out;
  cpu::run_map(hp, view(out));
}

void HostBackend::reduce(Op op, const DeviceView& in, const std::vector<int>& dims, const DeviceView& out) {
  cpu::run_reduce(op, view(in), dims, view(out));
}

void HostBackend::argreduce(Op op, const DeviceView& in, int dim, const DeviceView& out) {
  cpu::run_argreduce(op, view(in), dim, view(out));
}

void HostBackend::matmul(const DeviceView& a, const DeviceView& b, const DeviceView& out) {
  cpu::run_matmul(view(a), view(b), view(out));
}

void HostBackend::generate(Op op, const Attrs& attrs, const Shape& global_shape,
                           const std::vector<int64_t>& origin, const DeviceView& out) {
  cpu::run_generate(op, attrs, global_shape, origin, view(out));
}

void HostBackend::correlate(const DeviceView& x, const DeviceView& k, const std::vector<int64_t>& origin,
                            const DeviceView& out) {
  cpu::run_correlate(view(x), view(k), origin, view(out));
}

void HostBackend::conv2d(const DeviceView& x, const DeviceView& w, const cpu::WindowAxis& h,
                         const cpu::WindowAxis& wd, int64_t out_per_group, int64_t o_origin,
                         const DeviceView& out) {
  cpu::run_conv2d(view(x), view(w), h, wd, out_per_group, o_origin, view(out));
}

void HostBackend::pool2d(Op op, const DeviceView& x, int64_t kh, int64_t kw, const cpu::WindowAxis& h,
                         const cpu::WindowAxis& wd, const DeviceView& out) {
  cpu::run_pool2d(op, view(x), kh, kw, h, wd, view(out));
}

}  // namespace tapestry
