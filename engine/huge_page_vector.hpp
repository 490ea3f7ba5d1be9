// Vectors for the engine's big arrays (table cells, index slots and links, the union-find):
// allocations of a few MiB or more are 2 MiB-aligned and marked for transparent huge pages.
// Lookups in these arrays are random, and with 4 KiB pages nearly every one of them on a
// large table also misses the TLB; huge pages make a memory miss cost one miss.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

#include <sys/mman.h>

namespace kiln::engine {

template <class T>
struct HugePageAllocator {
  using value_type = T;
  static constexpr std::size_t kHugePage = std::size_t{2} << 20;
  // Below this an allocation is ordinary: rounding it up to whole huge pages would waste memory.
  static constexpr std::size_t kThreshold = 2 * kHugePage;

  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) {}

  T* allocate(std::size_t n) {
    std::size_t bytes = n * sizeof(T);
    if (bytes < kThreshold) return static_cast<T*>(::operator new(bytes));
    std::size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    void* p = std::aligned_alloc(kHugePage, rounded);
    if (!p) throw std::bad_alloc();
    madvise(p, rounded, MADV_HUGEPAGE);  // a hint: where huge pages are off, nothing changes
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) {
    if (n * sizeof(T) < kThreshold) {
      ::operator delete(p);
    } else {
      std::free(p);
    }
  }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const { return true; }
};

template <class T>
using HugePageVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace kiln::engine
