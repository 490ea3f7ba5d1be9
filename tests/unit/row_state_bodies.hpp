// Hand-built attention-shaped Bodies for the tests of multi-component reductions (row-state
// code generation on the CPU, the GPU renderers): loops (head, i, c) over a value that reduces
// over keys j elements whose score x_j = scale * sum_t q[head,i,t] * k[head,j,t] does not
// depend on c, and y_j = v[head,j,c] does. Dims `heads` and `seq`; the head dims are constants.
#pragma once

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "graph/body.hpp"
#include "tests/unit/body_cases.hpp"

namespace kiln::testing {

// The online-softmax monoid over elements (x, y): state (m, l, a), the running max, the running
// sum of exp(x - m) and the running sum of exp(x - m) * y; lift (x, 1, y); each side rescaled by
// exp(m_side - m) (1 where m_side is not below m: no -inf - -inf); finalize a / l.
inline std::size_t online_softmax_monoid(graph::BodyBuilder& b, graph::DType f) {
  using graph::ScalarId;
  using graph::ScalarOp;
  graph::Monoid online;
  online.name = "online_softmax";
  online.elements = 2;
  online.identity = {-INFINITY, 0.0, 0.0};
  online.lift = {b.param(0, f), b.constant(1.0, f), b.param(1, f)};
  const ScalarId m1 = b.param(0, f), l1 = b.param(1, f), a1 = b.param(2, f);
  const ScalarId m2 = b.param(3, f), l2 = b.param(4, f), a2 = b.param(5, f);
  const ScalarId m = b.binary(ScalarOp::Max, m1, m2);
  auto rescale = [&](ScalarId side) {
    const ScalarId diff = b.binary(ScalarOp::Add, side, b.binary(ScalarOp::Mul, m, b.constant(-1.0, f)));
    const ScalarId e = b.unary(ScalarOp::Exp2, b.binary(ScalarOp::Mul, diff, b.constant(1.4426950408889634, f)));
    return b.select(b.less_than(side, m, f), e, b.constant(1.0, f));
  };
  const ScalarId s1 = rescale(m1), s2 = rescale(m2);
  auto mix = [&](ScalarId x1, ScalarId x2) {
    return b.binary(ScalarOp::Add, b.binary(ScalarOp::Mul, x1, s1), b.binary(ScalarOp::Mul, x2, s2));
  };
  online.combine = {m, mix(l1, l2), mix(a1, a2)};
  online.finalize = b.binary(ScalarOp::Mul, a1, b.unary(ScalarOp::Recip, l1));
  return b.add_monoid(online);
}

enum class ScoreMask { None, Causal, Input };

struct AttentionShape {
  std::int64_t head_dim = 16;  // t: the scores' inner reduction
  std::int64_t columns = 16;   // c: the innermost output loop
  ScoreMask mask = ScoreMask::None;
  bool softmax = true;         // the online-softmax monoid, or a plain sum of x_j * y_j
  // Loops (i, head, c), the output [seq, heads, columns]: the loop around c is the heads,
  // whose keys differ (as a [seq, heads * d] activation's attention reads them).
  bool heads_inside = false;
  // The value a computation (y = v * 2), not one load: the CPU copies a block's values before
  // weighting them instead of reading them in place.
  bool computed_value = false;
};

// Inputs q [heads, seq, head_dim], k [heads, seq, head_dim], v [heads, seq, columns] and, for
// ScoreMask::Input, an additive mask [seq, seq]; output [heads, seq, columns] (or [seq, heads,
// columns], heads_inside).
inline graph::Body attention_body(const AttentionShape& shape, graph::DType f = graph::DType::F32) {
  using graph::Expr;
  using graph::ScalarId;
  using graph::ScalarOp;
  std::vector<graph::DType> inputs{f, f, f};
  if (shape.mask == ScoreMask::Input) inputs.push_back(f);
  graph::BodyBuilder b(inputs);
  const Expr heads = Expr::dim("heads"), seq = Expr::dim("seq");
  Expr h, i;
  if (shape.heads_inside) {
    i = b.output_loop(seq);
    h = b.output_loop(heads);
  } else {
    h = b.output_loop(heads);
    i = b.output_loop(seq);
  }
  const Expr c = b.output_loop(shape.columns);
  const std::string j = b.reduce_var(), t = b.reduce_var();
  const Expr D = shape.head_dim, E = shape.columns;
  const ScalarId q = b.load(0, (h * seq + i) * D + Expr::dim(t));
  const ScalarId k = b.load(1, (h * seq + Expr::dim(j)) * D + Expr::dim(t));
  const ScalarId dot = b.reduce(b.sum_monoid(f), t, D, {b.binary(ScalarOp::Mul, q, k)}, f);
  ScalarId x = b.binary(ScalarOp::Mul, dot, b.constant(1.0 / std::sqrt(double(shape.head_dim)), f));
  if (shape.mask == ScoreMask::Causal) {
    const ScalarId visible = b.less_than(b.index(Expr::dim(j), f), b.index(i + 1, f), f);
    // Hidden keys score -inf for the softmax (weight 0), 0 for the plain sum (term 0).
    x = b.select(visible, x, b.constant(shape.softmax ? -INFINITY : 0.0, f));
  } else if (shape.mask == ScoreMask::Input) {
    x = b.binary(ScalarOp::Add, x, b.load(3, i * seq + Expr::dim(j)));
  }
  ScalarId y = b.load(2, (h * seq + Expr::dim(j)) * E + c);
  if (shape.computed_value) y = b.binary(ScalarOp::Mul, y, b.constant(2.0, f));
  const ScalarId value =
      shape.softmax
          ? b.reduce(online_softmax_monoid(b, f), j, seq, {x, y}, f)
          : b.reduce(b.sum_monoid(f), j, seq, {b.binary(ScalarOp::Mul, x, y)}, f);
  const Expr row = shape.heads_inside ? i * heads + h : h * seq + i;
  return b.finish(value, heads * seq * E, row * E + c);
}

// Random inputs for attention_body at `heads` and `seq`. The mask input is 0 or -inf, and every
// third row is all -inf (a fully masked row).
inline BodyCase attention_case(const std::string& label, const graph::Body& body,
                               const AttentionShape& shape, std::int64_t heads, std::int64_t seq,
                               std::mt19937& rng) {
  std::uniform_real_distribution<double> value(-2.0, 2.0);
  auto fill = [&](std::int64_t n) {
    std::vector<double> v(static_cast<std::size_t>(n));
    for (double& x : v) x = value(rng);
    return v;
  };
  BodyCase c{label + " heads=" + std::to_string(heads) + " seq=" + std::to_string(seq), body, {},
             {{"heads", heads}, {"seq", seq}}};
  c.inputs.push_back(fill(heads * seq * shape.head_dim));
  c.inputs.push_back(fill(heads * seq * shape.head_dim));
  c.inputs.push_back(fill(heads * seq * shape.columns));
  if (shape.mask == ScoreMask::Input) {
    std::vector<double> mask(static_cast<std::size_t>(seq * seq), 0.0);
    std::bernoulli_distribution hidden(0.3);
    for (std::int64_t r = 0; r < seq; ++r) {
      for (std::int64_t col = 0; col < seq; ++col) {
        if (r % 3 == 2 || hidden(rng)) mask[static_cast<std::size_t>(r * seq + col)] = -INFINITY;
      }
    }
    c.inputs.push_back(mask);
  }
  return c;
}

}  // namespace kiln::testing
