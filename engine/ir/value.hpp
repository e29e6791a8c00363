// Host data: an aligned buffer and strided views into it.
//   auto v = Value::alloc(DType::F32, {3, 4});       // contiguous, uninitialised
//   View t = v->view().permuted({1, 0});              // no copy
//   float* p = v->data<float>();
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/ir/dtype.hpp"
#include "engine/ir/shape.hpp"

namespace tapestry {

// A block of memory on some device: host memory (Buffer) or an accelerator's (engine/device),
// where data() is an address only that device may dereference.
class Buffer;
class Memory {
 public:
  virtual ~Memory() = default;
  virtual void* data() const = 0;
  virtual size_t bytes() const = 0;
  // The host buffer holding this memory's data, when host code may read it (a Buffer itself,
  // a simulated device's allocation); nullptr for an accelerator's memory.
  virtual const Buffer* host_buffer() const { return nullptr; }
};

// An owned, 64-byte aligned allocation of host memory.
class Buffer final : public Memory {
 public:
  explicit Buffer(size_t bytes);
  ~Buffer() override;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* data() const override { return data_; }
  size_t bytes() const override { return bytes_; }
  const Buffer* host_buffer() const override { return this; }

  // Bytes of every buffer ever allocated (monotonic, all threads): the Lua binding charges
  // its garbage collector with this, since a Tensor handle looks tiny to Lua.
  static uint64_t total_allocated();
  // Bytes of the buffers alive now (all threads; tp.stats().bytes_live). A refused or failed
  // allocation is never counted.
  static int64_t live_bytes();

 private:
  void* data_;
  size_t bytes_;
};

// The process's budget for tensor memory: every Buffer is checked against it before it is
// allocated, and one that would take the bytes alive past it throws OutOfMemory (so a request
// larger than the machine is refused, never left to the kernel's OOM killer: mimalloc maps
// large blocks without reserving them). Set by the session (engine/session/session.hpp:
// --memory-per-rank times the ranks this process holds); 0: no budget (low-layer tests).
void set_memory_budget(int64_t bytes);
int64_t memory_budget();
// Called, on the allocating thread, when an allocation would pass the budget: it may free
// memory (the session spills the coldest stored tensors to disk, engine/session/spill.hpp) and
// returns whether it freed any; then the allocation is tried again. It may throw OutOfMemory
// (a spill that failed, naming what). One per process; empty: none.
using MemoryPressureHandler = std::function<bool(int64_t need)>;
void set_memory_pressure_handler(MemoryPressureHandler h);
// How many times an allocation has called the handler: the Lua layer collects its garbage
// when this moved, so dead tensors are freed rather than spilled (lang/lua_args.cpp).
uint64_t memory_pressure_events();
// "1.5 GiB", for messages.
std::string human_bytes(double bytes);

// A typed, strided window onto a buffer. Strides are in elements; 0 = broadcast.
struct View {
  std::shared_ptr<Buffer> buf;
  DType dtype = DType::F32;
  Shape shape;
  Strides strides;
  int64_t offset = 0;  // in elements

  int rank() const { return static_cast<int>(shape.size()); }
  int64_t numel() const;
  bool is_contiguous() const;  // row-major, dense, offset anywhere
  template <class T> T* ptr() const { return static_cast<T*>(buf->data()) + offset; }
  char* byte_ptr() const { return static_cast<char*>(buf->data()) + offset * dtype_size(dtype); }

  View permuted(const std::vector<int>& perm) const;  // out dim i = in dim perm[i]
  View expanded(const Shape& to) const;               // numpy broadcast_to
  View sliced(const std::vector<int64_t>& start, const std::vector<int64_t>& step, const Shape& count) const;
  // A reshape that needs no copy, if the strides allow it; else returns false.
  bool try_reshape(const Shape& to, View& out) const;
};

// The data of a materialized node: a view, usually contiguous row-major.
struct Value {
  View v;
  // Throws OutOfMemory (naming the shape) past the budget, std::bad_alloc when the system
  // has no memory.
  static std::shared_ptr<Value> alloc(DType t, const Shape& s);
  const View& view() const { return v; }
  template <class T> T* data() const { return v.ptr<T>(); }
};

}  // namespace tapestry
