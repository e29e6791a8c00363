// The coordinates of a box corner: a vector of int64 that keeps up to 6 entries inline.
//   Coords c{0, 2};  c.push_back(5);  c[1] == 2;  std::vector<int64_t> v = c;
// Boxes are the planner's currency: lowering a plan for 1,024 ranks builds millions of them, and
// with two heap vectors per box malloc/free was half of the planner's time. Up to 6 dims (every
// tensor and nearly every index space) live in the object; more spill to the heap.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <vector>

namespace tapestry::poly {

class Coords {
 public:
  static constexpr size_t kInline = 6;

  Coords() = default;
  explicit Coords(size_t n, int64_t v = 0) { resize(n, v); }
  Coords(std::initializer_list<int64_t> v) { assign_range(v.begin(), v.end()); }
  Coords(const std::vector<int64_t>& v) {
    assign_range(v.data(), v.data() + v.size());
  }  // NOLINT: implicit, like the vector it replaces
  Coords(const Coords& o) { assign_range(o.begin(), o.end()); }
  Coords(Coords&& o) noexcept { take(std::move(o)); }
  Coords& operator=(const Coords& o) {
    if (this != &o) {
      size_ = 0;
      assign_range(o.begin(), o.end());
    }
    return *this;
  }
  Coords& operator=(Coords&& o) noexcept {
    if (this != &o) take(std::move(o));
    return *this;
  }

  operator std::vector<int64_t>() const { return std::vector<int64_t>(begin(), end()); }  // NOLINT

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t* data() { return heap_ ? heap_.get() : inline_; }
  const int64_t* data() const { return heap_ ? heap_.get() : inline_; }
  int64_t* begin() { return data(); }
  int64_t* end() { return data() + size_; }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + size_; }
  int64_t& operator[](size_t i) { return data()[i]; }
  int64_t operator[](size_t i) const { return data()[i]; }
  int64_t& back() { return data()[size_ - 1]; }
  int64_t back() const { return data()[size_ - 1]; }

  void reserve(size_t n) {
    if (n <= capacity()) return;
    auto grown = std::make_unique<int64_t[]>(n);
    copy_n(begin(), size_, grown.get());
    heap_ = std::move(grown);
    cap_ = n;
  }
  void resize(size_t n, int64_t v = 0) {
    reserve(n);
    std::fill(data() + std::min(n, size_), data() + n, v);
    size_ = n;
  }
  void push_back(int64_t v) {
    if (size_ == capacity()) reserve(std::max<size_t>(2 * capacity(), kInline));
    data()[size_++] = v;
  }
  void clear() { size_ = 0; }
  void assign(size_t n, int64_t v) {
    size_ = 0;
    resize(n, v);
  }

  bool operator==(const Coords& o) const { return std::equal(begin(), end(), o.begin(), o.end()); }

 private:
  size_t capacity() const { return heap_ ? cap_ : kInline; }
  // A plain loop: for a handful of entries std::copy's call to memmove costs more than the copy.
  static void copy_n(const int64_t* from, size_t n, int64_t* to) {
    for (size_t i = 0; i < n; ++i) to[i] = from[i];
  }
  void assign_range(const int64_t* b, const int64_t* e) {
    const size_t n = static_cast<size_t>(e - b);
    reserve(n);
    copy_n(b, n, data());
    size_ = n;
  }
  void take(Coords&& o) {
    heap_ = std::move(o.heap_);
    cap_ = o.cap_;
    size_ = o.size_;
    if (!heap_) copy_n(o.inline_, size_, inline_);
    o.size_ = 0;
  }

  int64_t inline_[kInline];
  std::unique_ptr<int64_t[]> heap_;
  size_t cap_ = 0;
  size_t size_ = 0;
};

}  // namespace tapestry::poly
