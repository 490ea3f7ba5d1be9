// Vectors for the engine's big arrays (table cells, index slots and links, the union-find):
// arrays of 1 MiB or more live in their own 2 MiB-aligned mapping marked for transparent
// huge pages. Lookups in these arrays are random, and with 4 KiB pages nearly every one of them
// on a large table also misses the TLB; huge pages make a memory miss cost one miss. They also
// make a growing array fault once per 2 MiB instead of once per 4 KiB: on a virtual machine a
// fault costs microseconds, and the 4 KiB faults of arrays between 1 and 4 MiB were ~10% of a
// run that builds a few tables of 100k-500k rows (arith_grow: 9.1k faults, now 2.6k).
//
// A large array grows with mremap: the kernel moves or extends the mapping, so growth copies
// nothing and every page is zeroed and faulted in once. (std::vector's grow-by-copy faulted each
// row in at least twice, and zeroing fresh huge pages was a quarter of a growing run's time.)
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

#include <sys/mman.h>

#include "support/diagnostic.hpp"

namespace kiln::engine {

namespace huge_pages {

inline constexpr std::size_t kHugePage = std::size_t{2} << 20;
// Below this an array is an ordinary heap block: rounding it up to a whole huge page would
// waste more than it is worth (from here the waste is at most the array's own size; with
// 256 KiB the peak of tensor_luminal, a run of many mid-sized tables, rose 112 -> 165 MB).
inline constexpr std::size_t kThreshold = kHugePage / 2;

inline std::size_t round_up(std::size_t bytes) { return (bytes + kHugePage - 1) / kHugePage * kHugePage; }

// A fresh read-write mapping of `bytes` (a multiple of kHugePage) at a 2 MiB-aligned address,
// so that every 2 MiB of it can be one huge page.
inline void* map_aligned(std::size_t bytes) {
  std::size_t span = bytes + kHugePage;
  void* p = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  auto start = reinterpret_cast<std::uintptr_t>(p);
  std::uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned != start) munmap(p, aligned - start);
  std::size_t tail = start + span - (aligned + bytes);
  if (tail != 0) munmap(reinterpret_cast<void*>(aligned + bytes), tail);
  madvise(reinterpret_cast<void*>(aligned), bytes, MADV_HUGEPAGE);  // a hint: where huge pages are off, nothing changes
  return reinterpret_cast<void*>(aligned);
}

// The mapping at `old` (old_bytes) grown to new_bytes, both multiples of kHugePage, contents
// kept: in place when the address range after it is free, else moved to an aligned range.
inline void* grow_mapping(void* old, std::size_t old_bytes, std::size_t new_bytes) {
  void* p = mremap(old, old_bytes, new_bytes, 0);
  if (p == MAP_FAILED) {
    void* target = map_aligned(new_bytes);  // mremap replaces this reservation
    p = mremap(old, old_bytes, new_bytes, MREMAP_MAYMOVE | MREMAP_FIXED, target);
    if (p == MAP_FAILED) {
      munmap(target, new_bytes);
      throw std::bad_alloc();
    }
  }
  madvise(p, new_bytes, MADV_HUGEPAGE);
  return p;
}

}  // namespace huge_pages

// The subset of std::vector the engine uses, for trivially copyable element types.
template <class T>
class HugePageVector {
  static_assert(std::is_trivially_copyable_v<T>, "elements are moved as bytes");

 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;

  HugePageVector() = default;
  HugePageVector(const HugePageVector& other) {
    reserve(other.size_);
    if (other.size_ != 0) std::memcpy(data_, other.data_, other.size_ * sizeof(T));
    size_ = other.size_;
  }
  HugePageVector(HugePageVector&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        capacity_bytes_(std::exchange(other.capacity_bytes_, 0)) {}
  HugePageVector& operator=(HugePageVector other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(capacity_bytes_, other.capacity_bytes_);
    return *this;
  }
  ~HugePageVector() { release(); }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::size_t capacity() const { return capacity_bytes_ / sizeof(T); }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }

  void push_back(const T& value) {
    T copy = value;  // `value` may be an element, moved by the growth
    if (size_ == capacity()) grow_for(size_ + 1);
    data_[size_++] = copy;
  }
  // Appends [first, last); only insertion at the end is supported.
  void insert(T* at, const T* first, const T* last) {
    KILN_ASSERT(at == end(), "HugePageVector::insert appends only");
    std::size_t n = static_cast<std::size_t>(last - first);
    if (size_ + n > capacity()) {
      // [first, last) may lie in this array, which the growth moves.
      bool inside = size_ != 0 && first >= begin() && first < end();
      std::size_t offset = inside ? static_cast<std::size_t>(first - begin()) : 0;
      grow_for(size_ + n);
      if (inside) first = data_ + offset;
    }
    if (n != 0) std::memcpy(data_ + size_, first, n * sizeof(T));
    size_ += n;
  }
  // Appends n elements left for the caller to write, and returns the first: a row of a few
  // values is then written in place, not through a memcpy call per row.
  T* append_uninitialized(std::size_t n) {
    if (size_ + n > capacity()) grow_for(size_ + n);
    T* at = data_ + size_;
    size_ += n;
    return at;
  }
  // Keeps the memory when shrinking, like std::vector.
  void resize(std::size_t n, const T& value = T{}) {
    if (n > capacity()) grow_for(n);
    for (std::size_t i = size_; i < n; ++i) data_[i] = value;
    size_ = n;
  }
  void assign(std::size_t n, const T& value) {
    size_ = 0;
    resize(n, value);
  }
  void clear() { size_ = 0; }
  void reserve(std::size_t n) {
    if (n > capacity()) set_capacity(n);
  }

 private:
  static bool mapped(std::size_t bytes) { return bytes >= huge_pages::kThreshold; }

  void grow_for(std::size_t n) { set_capacity(std::max(n, 2 * capacity())); }

  void set_capacity(std::size_t n) {
    std::size_t bytes = n * sizeof(T);
    if (!mapped(bytes)) {
      void* p = std::realloc(data_, bytes);
      if (!p) throw std::bad_alloc();
      data_ = static_cast<T*>(p);
      capacity_bytes_ = bytes;
      return;
    }
    bytes = huge_pages::round_up(bytes);
    void* p;
    if (mapped(capacity_bytes_)) {
      p = huge_pages::grow_mapping(data_, capacity_bytes_, bytes);
    } else {
      p = huge_pages::map_aligned(bytes);
      if (size_ != 0) std::memcpy(p, data_, size_ * sizeof(T));
      std::free(data_);
    }
    data_ = static_cast<T*>(p);
    capacity_bytes_ = bytes;
  }

  void release() {
    if (mapped(capacity_bytes_)) {
      munmap(data_, capacity_bytes_);
    } else {
      std::free(data_);
    }
  }

  T* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_bytes_ = 0;  // a multiple of 2 MiB once mapped
};

}  // namespace kiln::engine
