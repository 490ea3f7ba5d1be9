// HugePageVector: contents survive growth from the heap into a mapping and through many remaps.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/huge_page_vector.hpp"

using kiln::engine::HugePageVector;
namespace huge_pages = kiln::engine::huge_pages;

namespace {

struct Entry {
  std::uint64_t key = 7;
  std::uint32_t row = 0xffffffffu;
};

std::uint64_t pattern(std::size_t i) { return i * 0x9e3779b97f4a7c15ull + 1; }

// The first element in [0, n) that differs from pattern(), or n.
std::size_t first_mismatch(const HugePageVector<std::uint64_t>& v, std::size_t n) {
  for (std::size_t j = 0; j < n; ++j) {
    if (v[j] != pattern(j)) return j;
  }
  return n;
}

}  // namespace

TEST_CASE("huge page vector: push_back keeps contents across growth past the mapped size", "[table]") {
  HugePageVector<std::uint64_t> v;
  // 4M elements = 32 MiB: grows from the heap into a mapping, then through several remaps.
  const std::size_t n = std::size_t{4} << 20;
  for (std::size_t i = 0; i < n; ++i) {
    v.push_back(pattern(i));
    if ((i & (i + 1)) == 0) REQUIRE(first_mismatch(v, i + 1) == i + 1);  // at every doubling
  }
  REQUIRE(v.size() == n);
  REQUIRE(v.capacity() * sizeof(std::uint64_t) % huge_pages::kHugePage == 0);
  REQUIRE(reinterpret_cast<std::uintptr_t>(v.data()) % huge_pages::kHugePage == 0);
  REQUIRE(first_mismatch(v, n) == n);
}

TEST_CASE("huge page vector: appends from itself, resize, assign, copies and moves", "[table]") {
  HugePageVector<std::uint64_t> v;
  v.push_back(1);
  v.push_back(2);
  // Appending a range of the array itself while it grows: the source moves with it.
  while (v.size() < (std::size_t{3} << 20)) v.insert(v.end(), v.begin(), v.end());
  std::size_t alternating = 0;
  while (alternating < v.size() && v[alternating] == (alternating % 2 == 0 ? 1u : 2u)) ++alternating;
  REQUIRE(alternating == v.size());
  v.push_back(v[1]);  // an element of itself, at a growth point or not
  REQUIRE(v.back() == 2);

  HugePageVector<std::uint64_t> copy(v);
  REQUIRE(copy.size() == v.size());
  REQUIRE(copy.data() != v.data());
  REQUIRE(std::equal(v.begin(), v.end(), copy.begin()));

  HugePageVector<std::uint64_t> moved = std::move(copy);
  REQUIRE(moved.size() == v.size());
  REQUIRE(copy.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty and reusable
  copy.assign(3, 9);
  REQUIRE((copy.size() == 3 && copy[0] == 9 && copy[2] == 9));

  std::size_t big = moved.size();
  moved.resize(10);  // shrinking keeps the memory and the first elements
  REQUIRE(moved.size() == 10);
  REQUIRE((moved[0] == 1 && moved[9] == 2));
  moved.resize(big + 5);  // growing again fills with the value
  REQUIRE(moved[10] == 0);
  REQUIRE(moved[big + 4] == 0);
  REQUIRE(moved[9] == 2);
}

TEST_CASE("huge page vector: resize and assign construct elements with non-zero defaults", "[table]") {
  HugePageVector<Entry> v;
  v.resize(100);
  v[50].row = 3;
  v.resize(std::size_t{1} << 20);  // 16 MiB: into a mapping whose fresh pages are zero
  REQUIRE(v[50].row == 3);
  for (std::size_t j = 100; j < v.size(); j += 4099) REQUIRE((v[j].key == 7 && v[j].row == 0xffffffffu));
  REQUIRE((v.back().key == 7 && v.back().row == 0xffffffffu));
  v.assign(std::size_t{3} << 20, Entry{1, 2});
  for (std::size_t j = 0; j < v.size(); j += 4099) REQUIRE((v[j].key == 1 && v[j].row == 2));

  // The same sequence of operations on std::vector gives the same contents.
  std::vector<Entry> reference(std::size_t{3} << 20, Entry{1, 2});
  for (std::size_t i = 0; i < 1000; ++i) {
    v.push_back(Entry{i, static_cast<std::uint32_t>(i)});
    reference.push_back(Entry{i, static_cast<std::uint32_t>(i)});
  }
  REQUIRE(v.size() == reference.size());
  REQUIRE(std::equal(v.begin(), v.end(), reference.begin(),
                     [](const Entry& a, const Entry& b) { return a.key == b.key && a.row == b.row; }));
}
