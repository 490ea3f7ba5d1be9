// The cost model; see cost_model.hpp.
#include "compiler/cost_model.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include "support/cache_files.hpp"
#include "support/hash.hpp"
#include "support/seconds_since.hpp"
#include "targets/cpu/row_state.hpp"
#include "targets/cpu/vector_clones.hpp"

namespace kiln::compiler {

namespace {

using graph::Body;
using graph::ScalarId;
using graph::ScalarOp;
using Clock = support::Clock;
using support::seconds_since;

// Twelve independent chains of 16-float FMAs (as bench/cpu measures the peak): `rounds` of them,
// compiled for each x86 level. Returns a value that depends on every chain, so none is dropped.
using Vec16 = float __attribute__((vector_size(64)));
KILN_VECTOR_CLONES float fma_chains(long rounds, float m, float k) {
  // Different starts, so that no two chains are one computation to the compiler.
  const Vec16 a{};
  Vec16 a0 = a, a1 = a + 1, a2 = a + 2, a3 = a + 3, a4 = a + 4, a5 = a + 5, a6 = a + 6, a7 = a + 7,
        a8 = a + 8, a9 = a + 9, a10 = a + 10, a11 = a + 11;
  for (long i = 0; i < rounds; ++i) {
    a0 = a0 * m + k;
    a1 = a1 * m + k;
    a2 = a2 * m + k;
    a3 = a3 * m + k;
    a4 = a4 * m + k;
    a5 = a5 * m + k;
    a6 = a6 * m + k;
    a7 = a7 * m + k;
    a8 = a8 * m + k;
    a9 = a9 * m + k;
    a10 = a10 * m + k;
    a11 = a11 * m + k;
  }
  const Vec16 all = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;
  float sum = 0;
  for (int i = 0; i < 16; ++i) sum += all[i];
  return sum;
}

double measure_fma_peak() {
  constexpr long kRounds = 2'000'000;  // 77 MFLOP: about half a millisecond at the peak
  double best = 1e30;
  volatile float sink = 0;
  for (int i = 0; i < 5; ++i) {
    const auto start = Clock::now();
    sink = sink + fma_chains(kRounds, 0.999f, 0.001f);
    best = std::min(best, seconds_since(start));
  }
  return 12.0 * 16 * 2 * kRounds / std::max(best, 1e-9);
}

// A transcendental or a division costs several FMAs (the code generator's polynomials).
double flops_of(ScalarOp op) {
  switch (op) {
    case ScalarOp::Const:
    case ScalarOp::Param:
    case ScalarOp::Index:
    case ScalarOp::Load:
    case ScalarOp::Reduce:  // counted per element below
      return 0;
    case ScalarOp::Exp2:
    case ScalarOp::Log2:
    case ScalarOp::Sin:
      return 8;
    case ScalarOp::Recip:
    case ScalarOp::Sqrt:
    case ScalarOp::Mod:
      return 4;
    default:
      return 1;
  }
}

// `e` at `at`, or nullopt where it cannot be evaluated there.
std::optional<std::int64_t> value_at(const graph::Expr& e, const graph::DimValues& at) {
  try {
    return graph::evaluate(e, at);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Loop variables of a Body: extents at the real dims (a loop whose extent names an outer
// variable, a causal row, at that variable's middle value) and nesting.
struct Loops {
  std::map<std::string, double> extent;
  std::map<std::string, std::size_t> output_order;  // output loops: 0 = outermost
  // Reductions: how many output loops are around the reduction's loop (the innermost one its
  // Reduce node needs: the reduction is hoisted out of the others).
  std::map<std::string, std::size_t> reduce_depth;
  graph::DimValues middle;  // the dims and each variable at its middle
};

Loops loops_of(const Body& body, const graph::DimValues& dims) {
  Loops out;
  out.middle = dims;
  auto bind = [&](const std::string& var, const graph::Expr& extent) {
    const double n =
        static_cast<double>(std::max<std::int64_t>(1, value_at(extent, out.middle).value_or(1)));
    out.extent[var] = n;
    out.middle[var] = static_cast<std::int64_t>(n / 2);
  };
  for (std::size_t k = 0; k < body.loops().size(); ++k) {
    bind(body.loops()[k].var, body.loops()[k].extent);
    out.output_order[body.loops()[k].var] = k;
  }
  // Outer reductions first: an inner one's extent may name an outer one's variable.
  for (std::size_t id = body.scalars().size(); id-- > 0;) {
    const graph::Scalar& s = body.scalars()[id];
    if (s.op == ScalarOp::Reduce) bind(s.var, s.extent);
  }
  return out;
}

// The loop variables each node depends on (its own Exprs' and its arguments'; a Reduce's minus
// its own variable).
std::vector<std::set<std::string>> variables_of(const Body& body, const Loops& loops) {
  std::vector<std::set<std::string>> vars(body.scalars().size());
  auto add_expr = [&](std::set<std::string>& into, const graph::Expr& e) {
    for (const std::string& d : graph::free_dims(e)) {
      if (loops.extent.count(d)) into.insert(d);
    }
  };
  for (std::size_t id = 0; id < body.scalars().size(); ++id) {
    const graph::Scalar& s = body.scalars()[id];
    std::set<std::string>& v = vars[id];
    for (ScalarId a : s.args) v.insert(vars.at(a).begin(), vars.at(a).end());
    if (s.op == ScalarOp::Load || s.op == ScalarOp::Index) {
      add_expr(v, s.index);
      add_expr(v, s.valid);
    }
    if (s.op == ScalarOp::Reduce) {
      add_expr(v, s.extent);
      v.erase(s.var);
    }
  }
  return vars;
}

// The output loops around a node that needs `vars`: down to the innermost it or its reductions
// need.
std::size_t depth_of(const std::set<std::string>& vars, const Loops& loops) {
  std::size_t depth = 0;
  for (const std::string& v : vars) {
    if (auto it = loops.output_order.find(v); it != loops.output_order.end()) {
      depth = std::max(depth, it->second + 1);
    } else if (auto r = loops.reduce_depth.find(v); r != loops.reduce_depth.end()) {
      depth = std::max(depth, r->second);
    }
  }
  return depth;
}

// How often a node that needs `vars` runs: the output loops around it, times the reductions it
// needs.
double trips(const std::set<std::string>& vars, const Loops& loops) {
  double n = 1;
  for (const std::string& v : vars) {
    if (!loops.output_order.count(v)) n *= loops.extent.at(v);
  }
  const std::size_t depth = depth_of(vars, loops);
  for (const auto& [var, order] : loops.output_order) {
    if (order < depth) n *= loops.extent.at(var);
  }
  return n;
}

CostEstimate estimate_body(const Body& body, const Candidate& c, const graph::DimValues& dims) {
  CostEstimate e;
  Loops loops = loops_of(body, dims);
  const std::vector<std::set<std::string>> vars = variables_of(body, loops);
  // A row-state reduction (targets/cpu/row_state.hpp): one in the innermost output loop c, of
  // a small constant extent, is folded for every c at once, so its work without c runs once
  // per step, and its loop over c is the vectorized one.
  std::string columns;
  if (!body.loops().empty()) {
    const graph::Loop& last = body.loops().back();
    const std::optional<std::int64_t> extent =
        graph::free_dims(last.extent).empty() ? value_at(last.extent, dims) : std::nullopt;
    if (last.parallel && body.loops().size() >= 2 && extent &&
        *extent <= targets::cpu::kMaxRowStateColumns) {
      columns = last.var;
    }
  }
  bool row_state = false;
  // Outer reductions first: an inner one sits inside the outer one's loop.
  for (std::size_t id = body.scalars().size(); id-- > 0;) {
    const graph::Scalar& s = body.scalars()[id];
    if (s.op != ScalarOp::Reduce) continue;
    std::set<std::string> around = vars[id];
    const std::vector<std::string> extent_dims = graph::free_dims(s.extent);
    if (!columns.empty() && around.count(columns) &&
        std::find(extent_dims.begin(), extent_dims.end(), columns) == extent_dims.end()) {
      around.erase(columns);
      row_state = true;
    }
    loops.reduce_depth[s.var] = depth_of(around, loops);
  }
  std::vector<double> load_bytes(c.input_elements.size(), 0.0);
  // The vectorized loop: an innermost float reduction's (one holding no other), else the last
  // output loop's.
  std::string vector_var = body.loops().empty() ? std::string() : body.loops().back().var;
  bool vector_loop_serial = !body.loops().empty() && !body.loops().back().parallel;
  for (std::size_t id = 0; id < body.scalars().size() && !row_state; ++id) {
    const graph::Scalar& s = body.scalars()[id];
    if (s.op != ScalarOp::Reduce || !graph::is_float(s.dtype)) continue;
    bool holds_reduction = false;
    for (ScalarId a : s.args) {
      for (const std::string& v : vars[a])
        holds_reduction |= !loops.output_order.count(v) && v != s.var;
    }
    if (!holds_reduction) {
      vector_var = s.var;
      vector_loop_serial = false;
      break;
    }
  }
  bool strided = false;
  for (std::size_t id = 0; id < body.scalars().size(); ++id) {
    const graph::Scalar& s = body.scalars()[id];
    if (s.op == ScalarOp::Reduce) {
      std::set<std::string> element;
      for (ScalarId a : s.args) element.insert(vars[a].begin(), vars[a].end());
      element.insert(s.var);
      const graph::Monoid& m = body.monoids().at(s.slot);
      const std::size_t state = m.lift.size() + m.combine.size();
      e.flops += trips(element, loops) * static_cast<double>(std::max<std::size_t>(1, state));
      continue;
    }
    const double n = trips(vars[id], loops);
    e.flops += n * flops_of(s.op);
    if (s.op != ScalarOp::Load || s.slot >= load_bytes.size()) continue;
    load_bytes[s.slot] += n * static_cast<double>(graph::dtype_size(c.input_dtypes[s.slot]));
    if (!vars[id].count(vector_var)) continue;
    graph::DimValues next = loops.middle;
    next[vector_var] += 1;
    const auto here = value_at(s.index, loops.middle), there = value_at(s.index, next);
    if (here && there && std::abs(*there - *here) > 1) strided = true;
  }
  for (std::size_t i = 0; i < load_bytes.size(); ++i) {
    const double buffer = static_cast<double>(c.input_elements[i]) *
                          static_cast<double>(graph::dtype_size(c.input_dtypes[i]));
    e.bytes += std::min(buffer, load_bytes[i]);
  }
  e.bytes += static_cast<double>(c.output_elements) *
             static_cast<double>(graph::dtype_size(c.output_dtype));
  if (strided) e.penalty *= 4;
  if (!vector_var.empty() && loops.extent.at(vector_var) < 8) e.penalty *= 2;
  if (vector_loop_serial) e.penalty *= 2;
  return e;
}

// The cost of starting one kernel or call: fewer steps win a tie.
constexpr double kLaunchSeconds = 2e-6;

}  // namespace

double copy_bandwidth() {
  static const double bandwidth = [] {
    const std::size_t n = std::size_t{32} << 20;
    std::vector<char> a(n, 1), b(n, 0);
    double best = 1e30;
    for (int i = 0; i < 3; ++i) {
      const auto start = Clock::now();
      std::memcpy(b.data(), a.data(), n);
      best = std::min(best, seconds_since(start));
      a[static_cast<std::size_t>(i)] = b[n - 1];  // keep the copies observable
    }
    return 2.0 * static_cast<double>(n) / std::max(best, 1e-9);
  }();
  return bandwidth;
}

MachineRates measure_machine_rates() {
  return {measure_fma_peak(), copy_bandwidth()};
}

MachineRates machine_rates(const std::filesystem::path& file) {
  MachineRates rates;
  if (std::ifstream in(file); in >> rates.flops_per_second >> rates.bytes_per_second &&
                              rates.flops_per_second > 0 && rates.bytes_per_second > 0) {
    return rates;
  }
  rates = measure_machine_rates();
  std::ostringstream text;
  text.precision(17);
  text << rates.flops_per_second << ' ' << rates.bytes_per_second << '\n';
  try {
    std::filesystem::create_directories(file.parent_path());
    support::write_file_atomically(file, text.str());
  } catch (const std::exception&) {
    // Not cached: measured again next time.
  }
  return rates;
}

MachineRates machine_rates(const Measurer& measurer) {
  const std::string& fingerprint = measurer.fingerprint();
  const support::Hash128 key = support::hash128(fingerprint.data(), fingerprint.size());
  return machine_rates(measurer.cache_dir() / ("machine-rates-" + Measurer::hex(key) + ".txt"));
}

CostEstimate estimate_cost(const Candidate& candidate, const graph::DimValues& dims,
                           const MachineRates& rates) {
  CostEstimate e;
  if (const Body* body = std::get_if<Body>(&candidate.op)) {
    e = estimate_body(*body, candidate, dims);
  } else {
    const runtime::LibraryCall& call = std::get<runtime::LibraryCall>(candidate.op);
    e.flops = 2;
    for (const char* p : {"batch", "m", "n", "k"}) {
      const auto it = call.params.find(p);
      e.flops *=
          static_cast<double>(it == call.params.end() ? 1 : value_at(it->second, dims).value_or(1));
    }
    for (std::size_t i = 0; i < candidate.input_elements.size(); ++i) {
      e.bytes += static_cast<double>(candidate.input_elements[i]) *
                 static_cast<double>(graph::dtype_size(candidate.input_dtypes[i]));
    }
    e.bytes += static_cast<double>(candidate.output_elements) *
               static_cast<double>(graph::dtype_size(candidate.output_dtype));
  }
  // Half the peak: measured kernels and library calls of this size reach about that.
  e.seconds = std::max(e.flops / (rates.flops_per_second / 2), e.bytes / rates.bytes_per_second) *
                  e.penalty +
              kLaunchSeconds;
  return e;
}

}  // namespace kiln::compiler
