// The matches one rule found in one iteration, kept from the search to the apply phase.
// Values are stored in 32 bits while every one fits (e-class ids, interned strings and small
// integers nearly always do): a large iteration stores millions of matches, and half the bytes
// is half the pages to fault in and half the memory at the run's peak. The first value that
// does not fit widens the whole buffer to 64 bits.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/huge_page_vector.hpp"
#include "engine/value.hpp"

namespace kiln::engine {

class MatchBuffer {
 public:
  // Empties the buffer for matches of `width` values; the memory stays for reuse.
  void start(std::size_t width) {
    width_ = width;
    count_ = 0;
    wide_ = false;
    narrow_values_.clear();
    wide_values_.clear();
  }

  std::size_t width() const { return width_; }
  std::uint64_t size() const { return count_; }
  bool wide() const { return wide_; }
  // Bytes of memory held (for tests and reports).
  std::size_t reserved_bytes() const {
    return narrow_values_.capacity() * sizeof(std::uint32_t) + wide_values_.capacity() * sizeof(Value);
  }

  // Appends one match of width() values.
  void push(const Value* match) {
    push_with([&](std::size_t i) { return match[i]; });
  }
  // Appends the match vars[positions[0]], ..., vars[positions[width() - 1]]: a search's
  // variables, of which a rule's actions read these.
  void push_gather(const Value* vars, const std::uint32_t* positions) {
    push_with([&](std::size_t i) { return vars[positions[i]]; });
  }

  // Gives back the memory of a buffer of 4 MiB or more, and keeps a smaller one for the next
  // iteration. Called once the matches are applied: the rebuild that follows, and the next
  // iteration's appends, then reuse those pages instead of faulting in fresh memory, which
  // lowers the run's peak (a large iteration stores tens of MB of matches). A small buffer is
  // kept: freed, it would be faulted and zeroed again at every iteration.
  static constexpr std::size_t kReleaseBytes = 2 * huge_pages::kHugePage;
  void release_if_large() {
    auto large = [](const auto& v) {
      return v.capacity() * sizeof(v[0]) >= kReleaseBytes;
    };
    if (large(narrow_values_)) narrow_values_ = {};
    if (large(wide_values_)) wide_values_ = {};
    start(width_);
  }

  // Moves matches [from, size()) to the end of `to` (of the same width).
  void move_tail(std::uint64_t from, MatchBuffer& to) {
    std::vector<Value> match(width_);
    for (std::uint64_t m = from; m < count_; ++m) {
      get(m, match.data());
      to.push(match.data());
    }
    truncate(from);
  }
  // Drops matches [0, from): the rest move to the front.
  void drop_front(std::uint64_t from) {
    std::size_t at = static_cast<std::size_t>(from) * width_;
    auto drop = [at](auto& values) {
      std::copy(values.data() + at, values.data() + values.size(), values.data());
      values.resize(values.size() - at);
    };
    wide_ ? drop(wide_values_) : drop(narrow_values_);
    count_ -= from;
  }

  // Copies match m (m < size()) into out[0, width()).
  void get(std::uint64_t m, Value* out) const {
    read(m, [&](std::size_t i, Value v) { out[i] = v; });
  }
  // Copies value i of match m into out[positions[i]]: push_gather's inverse.
  void scatter(std::uint64_t m, const std::uint32_t* positions, Value* out) const {
    read(m, [&](std::size_t i, Value v) { out[positions[i]] = v; });
  }

 private:
  static constexpr Value kNarrowMax = 0xffffffffu;

  void truncate(std::uint64_t count) {
    (wide_ ? wide_values_.resize(count * width_) : narrow_values_.resize(count * width_));
    count_ = count;
  }

  // One pass over the values: each is stored narrow while the bits above 32 of all of them, or'd
  // together, stay clear; a wide one takes the narrow copy back and widens the buffer.
  template <class ValueAt>
  void push_with(ValueAt value_at) {
    if (!wide_) {
      std::uint32_t* at = narrow_values_.append_uninitialized(width_);
      Value all = 0;
      for (std::size_t i = 0; i < width_; ++i) {
        Value v = value_at(i);
        all |= v;
        at[i] = static_cast<std::uint32_t>(v);
      }
      if (all <= kNarrowMax) {
        ++count_;
        return;
      }
      narrow_values_.resize(narrow_values_.size() - width_);
      widen();
    }
    Value* at = wide_values_.append_uninitialized(width_);
    for (std::size_t i = 0; i < width_; ++i) at[i] = value_at(i);
    ++count_;
  }

  template <class Put>
  void read(std::uint64_t m, Put put) const {
    std::size_t at = static_cast<std::size_t>(m) * width_;
    if (wide_) {
      for (std::size_t i = 0; i < width_; ++i) put(i, wide_values_[at + i]);
    } else {
      for (std::size_t i = 0; i < width_; ++i) put(i, Value{narrow_values_[at + i]});
    }
  }

  void widen() {
    wide_values_.resize(narrow_values_.size());
    for (std::size_t i = 0; i < narrow_values_.size(); ++i) wide_values_[i] = narrow_values_[i];
    narrow_values_.clear();
    wide_ = true;
  }

  std::size_t width_ = 0;
  std::uint64_t count_ = 0;
  bool wide_ = false;
  HugePageVector<std::uint32_t> narrow_values_;
  HugePageVector<Value> wide_values_;
};

}  // namespace kiln::engine
