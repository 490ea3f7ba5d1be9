// Copying Body nodes; see body_copy.hpp.
#include "graph/body_copy.hpp"

#include <algorithm>

#include "support/diagnostic.hpp"

namespace kiln::graph {

BodyCopier::BodyCopier(BodyBuilder& b, const Body& src, std::map<std::string, Expr> subst,
                       std::function<std::size_t(std::size_t)> slot_of, Expr extra_valid,
                       std::map<std::string, Expr>& extents)
    : b_(b), src_(src), subst_(std::move(subst)), slot_of_(std::move(slot_of)),
      extra_valid_(std::move(extra_valid)), extents_(extents), memo_(src.scalars().size()) {}

void BodyCopier::inline_slot(std::size_t slot, InlineLoad load) {
  inline_slot_ = slot;
  inline_load_ = std::move(load);
}

void BodyCopier::guard_loads(const Expr& guard) { load_guard_ = guard; }

void BodyCopier::replace_reduce(ScalarId reduce, ReplaceReduce make) {
  replaced_[reduce] = std::move(make);
}

Expr BodyCopier::sub(const Expr& e) const { return substitute(e, subst_); }

ScalarId BodyCopier::copy(ScalarId id) {
  if (memo_[id]) return *memo_[id];
  const Scalar& s = src_.scalar(id);
  ScalarId out = 0;
  switch (s.op) {
    case ScalarOp::Const: out = b_.constant(s.value, s.dtype); break;
    case ScalarOp::Param: out = b_.param(s.slot, s.dtype); break;
    case ScalarOp::Index: out = b_.index(sub(s.index), s.dtype); break;
    case ScalarOp::Load: out = load(s); break;
    case ScalarOp::Cast: out = b_.cast(copy(s.args[0]), s.dtype); break;
    case ScalarOp::Exp2: case ScalarOp::Log2: case ScalarOp::Sin: case ScalarOp::Recip:
    case ScalarOp::Sqrt:
      out = b_.unary(s.op, copy(s.args[0]));
      break;
    case ScalarOp::LessThan: {
      ScalarId a = copy(s.args[0]);
      out = b_.less_than(a, copy(s.args[1]), s.dtype);
      break;
    }
    case ScalarOp::Add: case ScalarOp::Mul: case ScalarOp::Mod: case ScalarOp::Max:
    case ScalarOp::Min: {
      ScalarId a = copy(s.args[0]);
      out = b_.binary(s.op, a, copy(s.args[1]));
      break;
    }
    case ScalarOp::Select: {
      ScalarId c = copy(s.args[0]);
      ScalarId t = copy(s.args[1]);
      out = b_.select(c, t, copy(s.args[2]));
      break;
    }
    case ScalarOp::Reduce: out = reduce(id, s); break;
  }
  memo_[id] = out;
  return out;
}

ScalarId BodyCopier::load(const Scalar& s) {
  const Expr position = sub(s.index);
  Expr valid = simplify(sub(s.valid) * extra_valid_);
  if (!(load_guard_ == Expr(1))) {
    bool guarded = false;
    for (const std::string& d : free_dims(load_guard_)) {
      for (const Expr* e : {&position, static_cast<const Expr*>(&valid)}) {
        const std::vector<std::string> named = free_dims(*e);
        guarded = guarded || std::find(named.begin(), named.end(), d) != named.end();
      }
    }
    if (guarded) valid = simplify(valid * load_guard_);
  }
  if (inline_slot_ && s.slot == *inline_slot_) {
    if (!s.args.empty()) {
      throw support::UserError("the consumer reads the producer through an index");
    }
    return inline_load_(position, valid);
  }
  const std::size_t slot = slot_of_(s.slot);
  if (s.args.empty()) return b_.load(slot, position, valid);
  ScalarId row = copy(s.args[0]);
  return b_.load_row(slot, position, row, sub(s.row_stride), sub(s.row_count), valid);
}

ScalarId BodyCopier::reduce(ScalarId source, const Scalar& s) {
  const std::string var = b_.reduce_var();
  const Expr extent = sub(s.extent);
  subst_[s.var] = Expr::dim(var);
  extents_[var] = extent;
  if (auto r = replaced_.find(source); r != replaced_.end()) return r->second(var, extent);
  const Monoid& m = src_.monoids().at(s.slot);
  Monoid copied = m;
  for (ScalarId& id : copied.lift) id = copy(id);
  for (ScalarId& id : copied.combine) id = copy(id);
  copied.finalize = copy(m.finalize);
  const std::size_t monoid = b_.add_monoid(std::move(copied));
  std::vector<ScalarId> elements;
  for (ScalarId a : s.args) elements.push_back(copy(a));
  return b_.reduce(monoid, var, extent, std::move(elements), s.dtype);
}

Body BodyCopier::finish(std::optional<std::size_t> output_aliases) {
  const ScalarId value = copy(src_.value());
  b_.set_guard(simplify(sub(src_.guard())));
  if (!src_.store_row()) return b_.finish(value, src_.output_size(), sub(src_.store_index()));
  KILN_ASSERT(output_aliases.has_value(), "BodyCopier: a row store without its alias");
  const ScalarId row = copy(*src_.store_row());
  return b_.finish_rows(value, src_.output_size(), sub(src_.store_index()), row,
                        sub(src_.store_row_stride()), sub(src_.store_row_count()),
                        *output_aliases);
}

}  // namespace kiln::graph
