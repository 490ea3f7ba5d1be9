// MatchBuffer: matches read back as written, in 32 bits while they fit and after widening.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "engine/match_buffer.hpp"

using kiln::engine::MatchBuffer;
using kiln::engine::Value;

namespace {

// Match m of a 3-wide stream: small values, except that match `wide_at` holds one above 32 bits.
std::vector<Value> match_of(std::uint64_t m, std::uint64_t wide_at) {
  std::vector<Value> values = {m, m * 7 + 1, 0xffffffffu - m};
  if (m == wide_at) values[1] = (Value{1} << 40) + m;
  return values;
}

void check_reads_back(const MatchBuffer& buffer, std::uint64_t count, std::uint64_t wide_at) {
  REQUIRE(buffer.size() == count);
  std::vector<Value> out(3);
  for (std::uint64_t m = 0; m < count; ++m) {
    buffer.get(m, out.data());
    INFO("match " << m);
    REQUIRE(out == match_of(m, wide_at));
  }
}

}  // namespace

TEST_CASE("match buffer: values that fit in 32 bits are stored narrow and read back", "[runner]") {
  MatchBuffer buffer;
  buffer.start(3);
  const std::uint64_t count = 100000;
  for (std::uint64_t m = 0; m < count; ++m) buffer.push(match_of(m, count).data());
  REQUIRE_FALSE(buffer.wide());
  check_reads_back(buffer, count, count);
}

TEST_CASE("match buffer: one wide value widens the buffer and keeps the earlier matches", "[runner]") {
  for (std::uint64_t wide_at : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{777}, std::uint64_t{99999}}) {
    MatchBuffer buffer;
    buffer.start(3);
    const std::uint64_t count = 100000;
    for (std::uint64_t m = 0; m < count; ++m) buffer.push(match_of(m, wide_at).data());
    REQUIRE(buffer.wide());
    check_reads_back(buffer, count, wide_at);
  }
}

TEST_CASE("match buffer: start() empties a wide buffer and stores narrow again", "[runner]") {
  MatchBuffer buffer;
  buffer.start(3);
  for (std::uint64_t m = 0; m < 10; ++m) buffer.push(match_of(m, 5).data());
  REQUIRE(buffer.wide());
  buffer.start(3);
  REQUIRE(buffer.size() == 0);
  for (std::uint64_t m = 0; m < 10; ++m) buffer.push(match_of(m, 10).data());
  REQUIRE_FALSE(buffer.wide());
  check_reads_back(buffer, 10, 10);
}

TEST_CASE("match buffer: matches of no values are counted", "[runner]") {
  MatchBuffer buffer;
  buffer.start(0);
  for (int m = 0; m < 5; ++m) buffer.push(nullptr);
  REQUIRE(buffer.size() == 5);
}

TEST_CASE("match buffer: release_if_large gives back a huge buffer and keeps a small one", "[runner]") {
  MatchBuffer buffer;
  buffer.start(3);
  const std::uint64_t count = 1000000;  // 12 MB narrow: past the huge-page threshold
  for (std::uint64_t m = 0; m < count; ++m) buffer.push(match_of(m, count).data());
  REQUIRE(buffer.reserved_bytes() >= count * 3 * sizeof(std::uint32_t));
  buffer.release_if_large();
  REQUIRE(buffer.size() == 0);
  REQUIRE(buffer.reserved_bytes() == 0);
  // Usable again at the same width, narrow and then widened.
  for (std::uint64_t m = 0; m < 2000; ++m) buffer.push(match_of(m, 1500).data());
  check_reads_back(buffer, 2000, 1500);

  MatchBuffer small;
  small.start(3);
  for (std::uint64_t m = 0; m < 1000; ++m) small.push(match_of(m, 1000).data());
  std::size_t kept = small.reserved_bytes();
  REQUIRE(kept >= 1000 * 3 * sizeof(std::uint32_t));
  small.release_if_large();
  REQUIRE(small.size() == 0);
  REQUIRE(small.reserved_bytes() == kept);
  for (std::uint64_t m = 0; m < 1000; ++m) small.push(match_of(m, 1000).data());
  check_reads_back(small, 1000, 1000);
}

TEST_CASE("match buffer: push_gather stores the chosen variables and scatter puts them back", "[runner]") {
  // Variables 0..5 of each match; the actions read 4, 1 and 3 (in that stored order).
  const std::vector<std::uint32_t> positions = {4, 1, 3};
  for (bool wide : {false, true}) {
    MatchBuffer buffer;
    buffer.start(positions.size());
    const std::uint64_t count = 1000;
    auto vars_of = [&](std::uint64_t m) {
      std::vector<Value> vars = {m, m + 1, m + 2, m + 3, m + 4, m + 5};
      if (wide && m == 500) vars[3] = Value{1} << 33;
      return vars;
    };
    for (std::uint64_t m = 0; m < count; ++m) buffer.push_gather(vars_of(m).data(), positions.data());
    REQUIRE(buffer.size() == count);
    REQUIRE(buffer.wide() == wide);
    for (std::uint64_t m = 0; m < count; ++m) {
      std::vector<Value> vars = vars_of(m);
      std::vector<Value> registers(6, 99);
      buffer.scatter(m, positions.data(), registers.data());
      INFO("match " << m);
      REQUIRE(registers == std::vector<Value>{99, vars[1], 99, vars[3], vars[4], 99});
    }
  }
}

TEST_CASE("match buffer: move_tail and drop_front keep every match and its order", "[runner]") {
  for (bool wide : {false, true}) {
    MatchBuffer buffer, tail;
    buffer.start(2);
    tail.start(2);
    auto match = [&](std::uint64_t m) {
      return std::vector<Value>{m, wide && m == 7 ? (Value{1} << 40) : m * 10};
    };
    for (std::uint64_t m = 0; m < 20; ++m) buffer.push(match(m).data());
    tail.push(match(100).data());
    buffer.move_tail(15, tail);  // matches 15..19 go after match 100
    REQUIRE(buffer.size() == 15);
    REQUIRE(tail.size() == 6);
    buffer.drop_front(5);  // matches 5..14 stay
    REQUIRE(buffer.size() == 10);
    std::vector<Value> got(2);
    for (std::uint64_t m = 0; m < 10; ++m) {
      buffer.get(m, got.data());
      REQUIRE(got == match(m + 5));
    }
    tail.get(0, got.data());
    REQUIRE(got == match(100));
    for (std::uint64_t m = 1; m < 6; ++m) {
      tail.get(m, got.data());
      REQUIRE(got == match(m + 14));
    }
    buffer.push(match(50).data());  // appends after the kept matches
    buffer.get(10, got.data());
    REQUIRE(got == match(50));
  }
}
