// Schedules: how rulesets are run. `run` does one iteration of a ruleset; `repeat`, `saturate`
// and `seq` combine schedules; every node reports whether it changed the database.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/query.hpp"

namespace kiln::engine {

struct Schedule {
  enum class Kind { Run, Repeat, Saturate, Seq };
  Kind kind = Kind::Run;
  std::string ruleset;                    // Run
  std::optional<Query> until;             // Run: skip (and report no change) once this matches
  std::uint64_t times = 1;                // Repeat
  std::vector<Schedule> children;         // Repeat/Saturate: one child; Seq: several

  static Schedule run(std::string ruleset, std::optional<Query> until = std::nullopt) {
    Schedule s;
    s.kind = Kind::Run;
    s.ruleset = std::move(ruleset);
    s.until = std::move(until);
    return s;
  }
  static Schedule repeat(std::uint64_t times, Schedule child) {
    Schedule s;
    s.kind = Kind::Repeat;
    s.times = times;
    s.children.push_back(std::move(child));
    return s;
  }
  static Schedule saturate(Schedule child) {
    Schedule s;
    s.kind = Kind::Saturate;
    s.children.push_back(std::move(child));
    return s;
  }
  static Schedule seq(std::vector<Schedule> children) {
    Schedule s;
    s.kind = Kind::Seq;
    s.children = std::move(children);
    return s;
  }
};

}  // namespace kiln::engine
