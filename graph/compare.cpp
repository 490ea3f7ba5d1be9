// Agreement with the reference interpreter; see compare.hpp.
#include "graph/compare.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

namespace kiln::graph {

namespace {

// Ulps of slack per unit of sqrt(reduction length); see compare.hpp.
double ulps(DType dtype) {
  return dtype == DType::F16 || dtype == DType::BF16 ? 8.0 : 32.0;
}

std::int64_t at_least_one(std::int64_t n) { return std::max<std::int64_t>(n, 1); }

// Saturating product: reduction lengths only feed a square root, so huge is huge enough.
std::int64_t times(std::int64_t a, std::int64_t b) {
  constexpr std::int64_t kCap = std::int64_t{1} << 62;
  return a > kCap / b ? kCap : a * b;
}

}  // namespace

double dtype_epsilon(DType dtype) {
  switch (dtype) {
    case DType::F64: return std::ldexp(1.0, -52);
    case DType::F32: return std::ldexp(1.0, -23);
    case DType::F16: return std::ldexp(1.0, -10);
    case DType::BF16: return std::ldexp(1.0, -7);
    default: return 0.0;
  }
}

Tolerance tolerance(DType dtype, std::int64_t reduction_length) {
  const double growth = std::sqrt(static_cast<double>(at_least_one(reduction_length)));
  const double bound = ulps(dtype) * dtype_epsilon(dtype) * growth;
  return {bound, bound};
}

std::int64_t reduction_length(const Body& body, const DimValues& dims) {
  // An extent may name a loop or reduction variable (a split's ragged last chunk,
  // min(chunk, n - c * chunk)): taken at that variable's first iteration, the longest chunk.
  DimValues at_first = dims;
  for (const Loop& l : body.loops()) at_first.emplace(l.var, 0);
  for (const Scalar& s : body.scalars()) {
    if (s.op == ScalarOp::Reduce) at_first.emplace(s.var, 0);
  }
  std::map<ScalarId, std::int64_t> memo;
  // The longest chain of nested reductions below `id` (elements of a Reduce are its args).
  auto length = [&](auto&& self, ScalarId id) -> std::int64_t {
    if (auto it = memo.find(id); it != memo.end()) return it->second;
    const Scalar& s = body.scalar(id);
    std::int64_t inner = 1;
    for (ScalarId a : s.args) inner = std::max(inner, self(self, a));
    if (s.op == ScalarOp::Reduce) inner = times(at_least_one(evaluate(s.extent, at_first)), inner);
    memo[id] = inner;
    return inner;
  };
  return length(length, body.value());
}

std::int64_t reduction_length(const Graph& g, NodeId id, const DimValues& dims) {
  std::map<NodeId, std::int64_t> memo;
  auto length = [&](auto&& self, NodeId n) -> std::int64_t {
    if (auto it = memo.find(n); it != memo.end()) return it->second;
    std::int64_t longest = 0;
    for (const Graph::Input& in : g.inputs(n)) longest = std::max(longest, self(self, in.producer));
    const Node& node = g.node(n);
    if (node.op == Op::SumReduce || node.op == Op::MaxReduce || node.op == Op::Softmax) {
      const std::vector<Graph::Input> ins = g.inputs(n);
      const Expr& extent = ins.at(0).edge->view.shape().at(node.axis);
      longest = std::min<std::int64_t>(longest + at_least_one(evaluate(extent, dims)),
                                       std::int64_t{1} << 62);
    }
    memo[n] = longest;
    return longest;
  };
  return at_least_one(length(length, id));
}

std::string mismatch(const std::vector<double>& got, const std::vector<double>& want,
                     Tolerance tol, const std::vector<double>& slack) {
  if (got.size() != want.size()) {
    return "has " + std::to_string(got.size()) + " elements, expected " +
           std::to_string(want.size());
  }
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double w = want[i], g = got[i];
    const double limit = tol.absolute + tol.relative * std::fabs(w) +
                         (i < slack.size() && std::isfinite(slack[i]) ? slack[i] : 0.0);
    const bool same = std::isnan(w)   ? std::isnan(g)
                      : std::isinf(w) ? g == w
                                      : std::isfinite(g) && std::fabs(g - w) <= limit;
    if (!same) {
      std::ostringstream out;
      out.precision(9);
      out << "element " << i << " is " << g << ", the interpreter says " << w;
      if (std::isfinite(w) && std::isfinite(g)) out << " (tolerance " << limit << ")";
      return out.str();
    }
  }
  return "";
}

std::vector<double> rounding_spread(const std::vector<double>& rounded,
                                    const std::vector<double>& in_double) {
  std::vector<double> out(rounded.size(), 0.0);
  double sum_of_squares = 0.0;
  std::size_t finite = 0;
  for (std::size_t i = 0; i < rounded.size() && i < in_double.size(); ++i) {
    const double d = std::fabs(rounded[i] - in_double[i]);
    if (!std::isfinite(d)) continue;
    out[i] = d;
    sum_of_squares += d * d;
    ++finite;
  }
  const double floor = finite == 0 ? 0.0 : std::sqrt(sum_of_squares / static_cast<double>(finite));
  for (std::size_t i = 0; i < out.size(); ++i) {
    const bool compared_exactly = i >= in_double.size() || !std::isfinite(rounded[i] - in_double[i]);
    if (!compared_exactly) out[i] = kSpreadFactor * std::max(out[i], floor);
  }
  return out;
}

std::string mismatch(const std::vector<double>& got, const std::vector<double>& want,
                     DType dtype, std::int64_t reduction_length) {
  return mismatch(got, want, tolerance(dtype, reduction_length));
}

}  // namespace kiln::graph
