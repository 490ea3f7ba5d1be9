// The one wrapper around xxHash: every structural hash and cache key in kiln goes through here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include <xxhash.h>

namespace kiln::support {

// A 128-bit key for caches and content addressing (measurements, compiled kernels).
struct Hash128 {
  std::uint64_t low = 0;
  std::uint64_t high = 0;
  friend bool operator==(const Hash128&, const Hash128&) = default;
};

inline std::uint64_t hash64(const void* data, std::size_t size, std::uint64_t seed = 0) {
  return XXH3_64bits_withSeed(data, size, seed);
}

inline std::uint64_t hash64(std::string_view text, std::uint64_t seed = 0) {
  return hash64(text.data(), text.size(), seed);
}

inline Hash128 hash128(const void* data, std::size_t size, std::uint64_t seed = 0) {
  XXH128_hash_t h = XXH3_128bits_withSeed(data, size, seed);
  return {h.low64, h.high64};
}

// Folds one 64-bit word into a running hash (for hashing rows of ids without a buffer).
inline std::uint64_t hash_combine(std::uint64_t seed, std::uint64_t word) {
  return XXH3_64bits_withSeed(&word, sizeof word, seed);
}

// A cheap, well-mixed hash of a fixed-width word, for hash tables keyed by ids.
inline std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

}  // namespace kiln::support
