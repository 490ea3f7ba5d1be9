// The Body interpreter: the reference semantics of the kernel IR (body.hpp). Obviously correct
// rather than fast: it evaluates the scalar DAG afresh for every iteration.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "graph/body.hpp"
#include "graph/interpret.hpp"
#include "support/diagnostic.hpp"

namespace kiln::graph {

namespace {

using support::UserError;

class BodyEvaluator {
 public:
  BodyEvaluator(const Body& body, const std::vector<const std::vector<double>*>& inputs,
                DimValues env)
      : body_(body), inputs_(inputs), env_(std::move(env)) {}

  DimValues& env() { return env_; }

  double eval(ScalarId id, const std::vector<double>& params) {
    const Scalar& s = body_.scalar(id);
    return round_to_dtype(eval_unrounded(s, params), s.dtype);
  }

 private:
  double arg(const Scalar& s, std::size_t i, const std::vector<double>& params) {
    return eval(s.args[i], params);
  }

  double eval_unrounded(const Scalar& s, const std::vector<double>& params) {
    switch (s.op) {
      case ScalarOp::Const: return s.value;
      case ScalarOp::Param:
        KILN_ASSERT(s.slot < params.size(), "Body: param outside a monoid");
        return params[s.slot];
      case ScalarOp::Index: return static_cast<double>(evaluate(s.index, env_));
      case ScalarOp::Load: return load(s, params);
      case ScalarOp::Cast: return arg(s, 0, params);
      case ScalarOp::Exp2: return std::exp2(arg(s, 0, params));
      case ScalarOp::Log2: return std::log2(arg(s, 0, params));
      case ScalarOp::Sin: return std::sin(arg(s, 0, params));
      case ScalarOp::Recip: return 1.0 / arg(s, 0, params);
      case ScalarOp::Sqrt: return std::sqrt(arg(s, 0, params));
      case ScalarOp::Add: return arg(s, 0, params) + arg(s, 1, params);
      case ScalarOp::Mul: return arg(s, 0, params) * arg(s, 1, params);
      case ScalarOp::Mod: return mod(s.dtype, arg(s, 0, params), arg(s, 1, params));
      case ScalarOp::LessThan: return arg(s, 0, params) < arg(s, 1, params) ? 1.0 : 0.0;
      case ScalarOp::Max: case ScalarOp::Min: {
        double a = arg(s, 0, params);
        double b = arg(s, 1, params);
        if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
        return s.op == ScalarOp::Max ? std::max(a, b) : std::min(a, b);
      }
      case ScalarOp::Select:
        return arg(s, 0, params) != 0.0 ? arg(s, 1, params) : arg(s, 2, params);
      case ScalarOp::Reduce: return reduce(s, params);
    }
    return 0.0;
  }

  static double mod(DType dtype, double a, double b) {
    if (is_float(dtype)) return std::fmod(a, b);
    auto x = static_cast<std::int64_t>(a);
    auto y = static_cast<std::int64_t>(b);
    if (y == 0) throw UserError("Body: integer modulus by zero");
    std::int64_t r = x % y;
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    return static_cast<double>(r);
  }

  double load(const Scalar& s, const std::vector<double>& params) {
    if (evaluate(s.valid, env_) == 0) return 0.0;
    std::int64_t position = evaluate(s.index, env_);
    if (!s.args.empty()) {
      double row = arg(s, 0, params);
      std::int64_t rows = evaluate(s.row_count, env_);
      if (!(row >= 0.0 && row < static_cast<double>(rows))) {
        throw UserError("Body: row " + std::to_string(row) + " is out of range for " +
                        std::to_string(rows) + " rows");
      }
      position += static_cast<std::int64_t>(row) * evaluate(s.row_stride, env_);
    }
    const std::vector<double>& buffer = *inputs_.at(s.slot);
    if (position < 0 || position >= static_cast<std::int64_t>(buffer.size())) {
      throw UserError("Body: load of in" + std::to_string(s.slot) + " at position " +
                      std::to_string(position) + " outside its " +
                      std::to_string(buffer.size()) + " elements");
    }
    return buffer[static_cast<std::size_t>(position)];
  }

  double reduce(const Scalar& s, const std::vector<double>& outer_params) {
    const Monoid& m = body_.monoids().at(s.slot);
    std::vector<double> state = m.identity;
    const std::int64_t extent = evaluate(s.extent, env_);
    std::vector<double> element(s.args.size());
    std::vector<double> pair;
    for (std::int64_t r = 0; r < extent; ++r) {
      env_[s.var] = r;
      for (std::size_t e = 0; e < element.size(); ++e) element[e] = eval(s.args[e], outer_params);
      pair = state;
      for (ScalarId lift : m.lift) pair.push_back(eval(lift, element));
      for (std::size_t k = 0; k < state.size(); ++k) state[k] = eval(m.combine[k], pair);
    }
    env_.erase(s.var);
    return eval(m.finalize, state);
  }

  const Body& body_;
  const std::vector<const std::vector<double>*>& inputs_;
  DimValues env_;
};

}  // namespace

std::vector<double> monoid_lift(const Body& body, std::size_t monoid,
                                const std::vector<double>& element) {
  const Monoid& m = body.monoids().at(monoid);
  KILN_ASSERT(element.size() == m.elements, "monoid_lift: wrong number of element values");
  const std::vector<const std::vector<double>*> no_inputs;
  BodyEvaluator evaluator(body, no_inputs, {});
  std::vector<double> state;
  for (ScalarId id : m.lift) state.push_back(evaluator.eval(id, element));
  return state;
}

std::vector<double> monoid_combine(const Body& body, std::size_t monoid,
                                   const std::vector<double>& a, const std::vector<double>& b) {
  const Monoid& m = body.monoids().at(monoid);
  KILN_ASSERT(a.size() == m.identity.size() && b.size() == m.identity.size(),
              "monoid_combine: states of the wrong size");
  std::vector<double> pair = a;
  pair.insert(pair.end(), b.begin(), b.end());
  const std::vector<const std::vector<double>*> no_inputs;
  BodyEvaluator evaluator(body, no_inputs, {});
  std::vector<double> state;
  for (ScalarId id : m.combine) state.push_back(evaluator.eval(id, pair));
  return state;
}

double monoid_finalize(const Body& body, std::size_t monoid, const std::vector<double>& state) {
  const Monoid& m = body.monoids().at(monoid);
  KILN_ASSERT(state.size() == m.identity.size(), "monoid_finalize: a state of the wrong size");
  const std::vector<const std::vector<double>*> no_inputs;
  BodyEvaluator evaluator(body, no_inputs, {});
  return evaluator.eval(m.finalize, state);
}

void interpret_body(const Body& body, const std::vector<const std::vector<double>*>& inputs,
                    const DimValues& dims, std::vector<double>& output) {
  KILN_ASSERT(inputs.size() == body.inputs().size(), "interpret_body: wrong number of inputs");
  const std::int64_t size = evaluate(body.output_size(), dims);
  KILN_ASSERT(static_cast<std::int64_t>(output.size()) == size,
              "interpret_body: output buffer of the wrong size");
  BodyEvaluator evaluator(body, inputs, dims);
  const std::vector<Loop>& loops = body.loops();
  std::vector<std::int64_t> extent(loops.size());
  for (std::size_t d = 0; d < loops.size(); ++d) {
    extent[d] = evaluate(loops[d].extent, dims);
    if (extent[d] == 0) return;
    evaluator.env()[loops[d].var] = 0;
  }
  const std::vector<double> no_params;
  const bool guarded = !(body.guard() == Expr(1));
  auto store = [&] {
    double value = evaluator.eval(body.value(), no_params);
    std::int64_t position = evaluate(body.store_index(), evaluator.env());
    if (body.store_row()) {
      double row = evaluator.eval(*body.store_row(), no_params);
      std::int64_t rows = evaluate(body.store_row_count(), evaluator.env());
      if (!(row >= 0.0 && row < static_cast<double>(rows))) {
        throw UserError("Body: stored row " + std::to_string(row) + " is out of range for " +
                        std::to_string(rows) + " rows");
      }
      position += static_cast<std::int64_t>(row) * evaluate(body.store_row_stride(),
                                                            evaluator.env());
    }
    if (position < 0 || position >= size) {
      throw UserError("Body: store at position " + std::to_string(position) + " outside the " +
                      std::to_string(size) + " output elements");
    }
    output[static_cast<std::size_t>(position)] = value;
  };
  while (true) {
    // A guarded-off iteration (a ragged tile's tail) computes nothing.
    if (!guarded || evaluate(body.guard(), evaluator.env()) != 0) store();
    // Advance the loop nest, innermost loop fastest.
    std::size_t d = loops.size();
    while (d > 0) {
      --d;
      std::int64_t& v = evaluator.env()[loops[d].var];
      if (++v < extent[d]) break;
      v = 0;
      if (d == 0) return;
    }
    if (loops.empty()) return;
  }
}

}  // namespace kiln::graph
