// The online-softmax monoid; see monoid_online_softmax.hpp.
#include "graph/monoid_online_softmax.hpp"

#include <limits>
#include <numbers>

namespace kiln::graph {

std::size_t online_softmax_monoid(BodyBuilder& b, DType dtype) {
  auto p = [&](std::size_t slot) { return b.param(slot, dtype); };
  const ScalarId one = b.constant(1.0, dtype);
  const ScalarId minus_one = b.constant(-1.0, dtype);
  const ScalarId log2e = b.constant(std::numbers::log2e, dtype);
  // Two states: (m1, l1, a1) are params 0..2, (m2, l2, a2) params 3..5.
  const ScalarId m = b.binary(ScalarOp::Max, p(0), p(3));
  // One side holds the max and keeps scale 1; the other is scaled by e^(min - max), written as
  // kiln writes e^x (2^(x * log2 e)): one exp2 per combine, not one per side.
  const ScalarId low = b.binary(ScalarOp::Min, p(0), p(3));
  const ScalarId shifted = b.binary(ScalarOp::Add, low, b.binary(ScalarOp::Mul, m, minus_one));
  const ScalarId e = b.unary(ScalarOp::Exp2, b.binary(ScalarOp::Mul, shifted, log2e));
  auto scale = [&](ScalarId m_i) { return b.select(b.less_than(m_i, m, dtype), e, one); };
  const ScalarId s1 = scale(p(0));
  const ScalarId s2 = scale(p(3));
  auto rescaled_sum = [&](ScalarId v1, ScalarId v2) {
    return b.binary(ScalarOp::Add, b.binary(ScalarOp::Mul, v1, s1),
                    b.binary(ScalarOp::Mul, v2, s2));
  };
  Monoid monoid;
  monoid.name = "online_softmax";
  monoid.elements = 2;
  monoid.identity = {-std::numeric_limits<double>::infinity(), 0.0, 0.0};
  monoid.lift = {p(0), one, p(1)};
  monoid.combine = {m, rescaled_sum(p(1), p(4)), rescaled_sum(p(2), p(5))};
  monoid.finalize = b.binary(ScalarOp::Mul, p(2), b.unary(ScalarOp::Recip, p(1)));
  return b.add_monoid(std::move(monoid));
}

}  // namespace kiln::graph
