// Host-memory buffers; see host_device.hpp.
#include "targets/host_device.hpp"

#include <cstring>
#include <new>

#include "support/diagnostic.hpp"

namespace kiln::targets {

namespace {
constexpr std::align_val_t kAlignment{64};
}

HostDevice::~HostDevice() {
  for (auto& [start, size] : allocations_) {
    ::operator delete(const_cast<std::byte*>(start), kAlignment);
  }
}

void* HostDevice::allocate(std::size_t bytes) {
  // Never a zero-size allocation: every buffer gets a distinct address.
  auto* p = static_cast<std::byte*>(::operator new(bytes == 0 ? 1 : bytes, kAlignment));
  allocations_[p] = bytes;
  return p;
}

void HostDevice::release(void* buffer) {
  if (!buffer) return;
  auto it = allocations_.find(static_cast<const std::byte*>(buffer));
  KILN_ASSERT(it != allocations_.end(), "release of a buffer this device did not allocate");
  allocations_.erase(it);
  ::operator delete(buffer, kAlignment);
}

void HostDevice::upload(void* device, const void* host, std::size_t bytes) {
  if (bytes) std::memcpy(device, host, bytes);
}
void HostDevice::download(void* host, const void* device, std::size_t bytes) {
  if (bytes) std::memcpy(host, device, bytes);
}
void HostDevice::copy(void* to, const void* from, std::size_t bytes) {
  if (bytes) std::memmove(to, from, bytes);
}

std::size_t HostDevice::bytes_after(const void* p) const {
  const auto* b = static_cast<const std::byte*>(p);
  auto it = allocations_.upper_bound(b);
  if (it == allocations_.begin()) return 0;
  --it;
  if (b >= it->first + it->second && !(it->second == 0 && b == it->first)) return 0;
  return static_cast<std::size_t>(it->first + it->second - b);
}

}  // namespace kiln::targets
