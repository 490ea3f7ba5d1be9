// A Device whose buffers are host memory (the CPU and reference targets): 64-byte aligned
// allocations, memcpy transfers. It remembers its allocations so that a target can find the
// allocation (and so the extent) that a pointer into an arena belongs to.
#pragma once

#include <cstddef>
#include <map>

#include "runtime/target.hpp"

namespace kiln::targets {

class HostDevice : public runtime::Device {
 public:
  ~HostDevice() override;
  void* allocate(std::size_t bytes) override;
  void release(void* buffer) override;
  void upload(void* device, const void* host, std::size_t bytes) override;
  void download(void* host, const void* device, std::size_t bytes) override;
  void copy(void* to, const void* from, std::size_t bytes) override;

 protected:
  // Bytes from `p` to the end of the allocation holding it (0 if none holds it).
  std::size_t bytes_after(const void* p) const;

 private:
  std::map<const std::byte*, std::size_t> allocations_;  // start -> size
};

}  // namespace kiln::targets
