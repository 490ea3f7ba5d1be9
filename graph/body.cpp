// Body construction, printing and keys; see body.hpp.
#include "graph/body.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <sstream>
#include <utility>

#include "support/diagnostic.hpp"

namespace kiln::graph {

namespace {

std::string number_text(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", v);
  return buffer;
}

// One node's text with its operands written as `%N` through `name` (ids or renumbered ids).
template <class Name>
std::string scalar_text(const Scalar& s, Name&& name) {
  std::ostringstream out;
  out << scalar_op_name(s.op) << ' ' << dtype_name(s.dtype);
  switch (s.op) {
    case ScalarOp::Const: out << ' ' << number_text(s.value); break;
    case ScalarOp::Param: out << ' ' << s.slot; break;
    case ScalarOp::Index: out << ' ' << to_string(s.index); break;
    case ScalarOp::Load:
      out << " in" << s.slot << '[' << to_string(s.index);
      if (!s.args.empty()) {
        out << " + " << name(s.args[0]) << " * " << to_string(s.row_stride) << " (rows "
            << to_string(s.row_count) << ')';
      }
      out << ']';
      if (!(s.valid == Expr(1))) out << " if " << to_string(s.valid);
      return out.str();
    case ScalarOp::Reduce:
      out << " m" << s.slot << ' ' << s.var << " < " << to_string(s.extent);
      break;
    default: break;
  }
  for (ScalarId a : s.args) out << ' ' << name(a);
  return out.str();
}

}  // namespace

const char* scalar_op_name(ScalarOp op) {
  switch (op) {
    case ScalarOp::Const: return "const";
    case ScalarOp::Param: return "param";
    case ScalarOp::Index: return "index";
    case ScalarOp::Load: return "load";
    case ScalarOp::Cast: return "cast";
    case ScalarOp::Exp2: return "exp2";
    case ScalarOp::Log2: return "log2";
    case ScalarOp::Sin: return "sin";
    case ScalarOp::Recip: return "recip";
    case ScalarOp::Sqrt: return "sqrt";
    case ScalarOp::Add: return "add";
    case ScalarOp::Mul: return "mul";
    case ScalarOp::Mod: return "mod";
    case ScalarOp::LessThan: return "lt";
    case ScalarOp::Max: return "max";
    case ScalarOp::Min: return "min";
    case ScalarOp::Select: return "select";
    case ScalarOp::Reduce: return "reduce";
  }
  return "?";
}

// ---- printing ------------------------------------------------------------------------------

// The text form prints only nodes reachable from the store (value, dynamic row) and from the
// monoids, renumbered in id order, so equal computations print equally whatever unused nodes a
// builder left behind. Example:
//   body f32 (in0 f32)
//     m0 sum 1: identity 0; lift %0; combine %2; finalize %0
//     %0 = param f32 0
//     ...
//     loop o0 < 4
//     store [o0] of 4 = %5
std::string to_text(const Body& body) {
  const std::vector<Scalar>& nodes = body.scalars_;
  std::vector<bool> live(nodes.size(), false);
  std::vector<ScalarId> stack;
  auto mark = [&](ScalarId id) { stack.push_back(id); };
  mark(body.value_);
  if (body.store_row_) mark(*body.store_row_);
  for (const Monoid& m : body.monoids_) {
    for (ScalarId id : m.lift) mark(id);
    for (ScalarId id : m.combine) mark(id);
    mark(m.finalize);
  }
  while (!stack.empty()) {
    ScalarId id = stack.back();
    stack.pop_back();
    if (live[id]) continue;
    live[id] = true;
    for (ScalarId a : nodes[id].args) stack.push_back(a);
  }
  std::vector<std::size_t> number(nodes.size(), 0);
  std::size_t next = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (live[i]) number[i] = next++;
  }
  auto name = [&](ScalarId id) { return "%" + std::to_string(number[id]); };

  std::ostringstream out;
  out << "body " << dtype_name(body.dtype()) << " (";
  for (std::size_t k = 0; k < body.inputs_.size(); ++k) {
    out << (k ? ", " : "") << "in" << k << ' ' << dtype_name(body.inputs_[k]);
  }
  out << ")\n";
  for (std::size_t k = 0; k < body.monoids_.size(); ++k) {
    const Monoid& m = body.monoids_[k];
    out << "  m" << k << ' ' << m.name << ' ' << m.elements << ": identity";
    for (double v : m.identity) out << ' ' << number_text(v);
    out << "; lift";
    for (ScalarId id : m.lift) out << ' ' << name(id);
    out << "; combine";
    for (ScalarId id : m.combine) out << ' ' << name(id);
    out << "; finalize " << name(m.finalize) << '\n';
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (live[i]) out << "  " << name(static_cast<ScalarId>(i)) << " = "
                     << scalar_text(nodes[i], name) << '\n';
  }
  for (const Loop& loop : body.loops_) {
    out << "  loop " << loop.var << " < " << to_string(loop.extent)
        << (loop.parallel ? "" : " serial") << '\n';
  }
  out << "  store [" << to_string(body.store_index_);
  if (body.store_row_) {
    out << " + " << name(*body.store_row_) << " * " << to_string(body.store_row_stride_)
        << " (rows " << to_string(body.store_row_count_) << ')';
  }
  out << ']';
  if (!(body.guard_ == Expr(1))) out << " if " << to_string(body.guard_);
  out << " of " << to_string(body.output_size_);
  if (body.output_aliases_) out << " over in" << *body.output_aliases_;
  out << " = " << name(body.value_) << '\n';
  return out.str();
}

support::Hash128 Body::key() const {
  const std::string text = to_text(*this);
  return support::hash128(text.data(), text.size());
}

std::vector<std::string> body_dims(const Body& body) {
  std::set<std::string> loop_vars, dims;
  for (const Loop& loop : body.loops()) loop_vars.insert(loop.var);
  auto add = [&](const Expr& e) {
    for (const std::string& d : free_dims(e)) dims.insert(d);
  };
  for (const Loop& loop : body.loops()) add(loop.extent);
  add(body.output_size());
  add(body.store_index());
  add(body.store_row_stride());
  add(body.store_row_count());
  add(body.guard());
  for (const Scalar& s : body.scalars()) {
    if (s.op == ScalarOp::Reduce) loop_vars.insert(s.var);
    for (const Expr* e : {&s.index, &s.valid, &s.row_stride, &s.row_count, &s.extent}) add(*e);
  }
  std::vector<std::string> out;
  for (const std::string& d : dims) {
    if (!loop_vars.count(d)) out.push_back(d);
  }
  return out;
}

// ---- building ------------------------------------------------------------------------------

BodyBuilder::BodyBuilder(std::vector<DType> inputs) { body_.inputs_ = std::move(inputs); }

Expr BodyBuilder::output_loop(const Expr& extent, bool parallel) {
  std::string var = "o" + std::to_string(body_.loops_.size());
  body_.loops_.push_back(Loop{var, extent, parallel});
  return Expr::dim(var);
}

std::string BodyBuilder::reduce_var() { return "r" + std::to_string(next_reduce_var_++); }

void BodyBuilder::check_id(ScalarId id) const {
  KILN_ASSERT(id < body_.scalars_.size(), "Body: unknown scalar %" + std::to_string(id));
}

ScalarId BodyBuilder::add(Scalar s) {
  for (ScalarId a : s.args) check_id(a);
  // Hash-consing by the node's text with operands as raw ids: equal nodes print equally.
  std::string key = scalar_text(s, [](ScalarId id) { return "%" + std::to_string(id); });
  auto [it, inserted] = interned_.emplace(std::move(key), 0);
  if (inserted) {
    it->second = static_cast<ScalarId>(body_.scalars_.size());
    body_.scalars_.push_back(std::move(s));
  }
  return it->second;
}

ScalarId BodyBuilder::constant(double value, DType dtype) {
  Scalar s;
  s.op = ScalarOp::Const;
  s.dtype = dtype;
  s.value = value;
  return add(std::move(s));
}

ScalarId BodyBuilder::param(std::size_t slot, DType dtype) {
  Scalar s;
  s.op = ScalarOp::Param;
  s.dtype = dtype;
  s.slot = slot;
  return add(std::move(s));
}

ScalarId BodyBuilder::index(const Expr& value, DType dtype) {
  Scalar s;
  s.op = ScalarOp::Index;
  s.dtype = dtype;
  s.index = value;
  return add(std::move(s));
}

// A Load node of `input` at `index`, not yet added.
Scalar BodyBuilder::load_node(std::size_t input, const Expr& index, const Expr& valid) const {
  KILN_ASSERT(input < body_.inputs_.size(), "Body: load of unknown input " +
                                                std::to_string(input));
  Scalar s;
  s.op = ScalarOp::Load;
  s.dtype = body_.inputs_[input];
  s.slot = input;
  s.index = index;
  s.valid = valid;
  return s;
}

ScalarId BodyBuilder::load(std::size_t input, const Expr& index, const Expr& valid) {
  return add(load_node(input, index, valid));
}

ScalarId BodyBuilder::load_row(std::size_t input, const Expr& index, ScalarId row,
                               const Expr& row_stride, const Expr& row_count,
                               const Expr& valid) {
  Scalar s = load_node(input, index, valid);
  s.args = {row};
  s.row_stride = row_stride;
  s.row_count = row_count;
  return add(std::move(s));
}

ScalarId BodyBuilder::unary(ScalarOp op, ScalarId x) {
  check_id(x);
  KILN_ASSERT(op == ScalarOp::Exp2 || op == ScalarOp::Log2 || op == ScalarOp::Sin ||
                  op == ScalarOp::Recip || op == ScalarOp::Sqrt,
              std::string("Body: ") + scalar_op_name(op) + " is not unary");
  Scalar s;
  s.op = op;
  s.dtype = body_.scalars_[x].dtype;
  s.args = {x};
  return add(std::move(s));
}

ScalarId BodyBuilder::cast(ScalarId x, DType dtype) {
  check_id(x);
  Scalar s;
  s.op = ScalarOp::Cast;
  s.dtype = dtype;
  s.args = {x};
  return add(std::move(s));
}

ScalarId BodyBuilder::binary(ScalarOp op, ScalarId a, ScalarId b) {
  check_id(a);
  check_id(b);
  KILN_ASSERT(op == ScalarOp::Add || op == ScalarOp::Mul || op == ScalarOp::Mod ||
                  op == ScalarOp::Max || op == ScalarOp::Min,
              std::string("Body: ") + scalar_op_name(op) + " is not a same-dtype binary op");
  Scalar s;
  s.op = op;
  s.dtype = body_.scalars_[a].dtype;
  s.args = {a, b};
  return add(std::move(s));
}

ScalarId BodyBuilder::less_than(ScalarId a, ScalarId b, DType result) {
  check_id(a);
  check_id(b);
  Scalar s;
  s.op = ScalarOp::LessThan;
  s.dtype = result;
  s.args = {a, b};
  return add(std::move(s));
}

ScalarId BodyBuilder::select(ScalarId condition, ScalarId if_true, ScalarId if_false) {
  check_id(condition);
  check_id(if_true);
  check_id(if_false);
  Scalar s;
  s.op = ScalarOp::Select;
  s.dtype = body_.scalars_[if_true].dtype;
  s.args = {condition, if_true, if_false};
  return add(std::move(s));
}

ScalarId BodyBuilder::reduce(std::size_t monoid, const std::string& var, const Expr& extent,
                             std::vector<ScalarId> elements, DType dtype) {
  KILN_ASSERT(monoid < body_.monoids_.size(), "Body: unknown monoid " + std::to_string(monoid));
  KILN_ASSERT(elements.size() == body_.monoids_[monoid].elements,
              "Body: reduce with the wrong number of elements for monoid " +
                  body_.monoids_[monoid].name);
  Scalar s;
  s.op = ScalarOp::Reduce;
  s.dtype = dtype;
  s.slot = monoid;
  s.var = var;
  s.extent = extent;
  s.args = std::move(elements);
  return add(std::move(s));
}

std::size_t BodyBuilder::add_monoid(Monoid monoid) {
  for (std::size_t k = 0; k < body_.monoids_.size(); ++k) {
    if (body_.monoids_[k] == monoid) return k;
  }
  body_.monoids_.push_back(std::move(monoid));
  return body_.monoids_.size() - 1;
}

std::size_t BodyBuilder::sum_monoid(DType dtype) {
  Monoid m;
  m.name = "sum";
  m.identity = {0.0};
  m.lift = {param(0, dtype)};
  m.combine = {binary(ScalarOp::Add, param(0, dtype), param(1, dtype))};
  m.finalize = param(0, dtype);
  return add_monoid(std::move(m));
}

std::size_t BodyBuilder::max_monoid(DType dtype) {
  Monoid m;
  m.name = "max";
  m.identity = {-std::numeric_limits<double>::infinity()};
  m.lift = {param(0, dtype)};
  m.combine = {binary(ScalarOp::Max, param(0, dtype), param(1, dtype))};
  m.finalize = param(0, dtype);
  return add_monoid(std::move(m));
}

void BodyBuilder::set_guard(const Expr& guard) { body_.guard_ = guard; }

Body BodyBuilder::finish(ScalarId value, const Expr& output_size, const Expr& store_index) {
  check_id(value);
  body_.value_ = value;
  body_.output_size_ = output_size;
  body_.store_index_ = store_index;
  return body_;
}

Body BodyBuilder::finish_rows(ScalarId value, const Expr& output_size, const Expr& store_index,
                              ScalarId row, const Expr& row_stride, const Expr& row_count,
                              std::size_t output_aliases) {
  check_id(row);
  KILN_ASSERT(output_aliases < body_.inputs_.size(), "Body: aliased input out of range");
  body_.store_row_ = row;
  body_.store_row_stride_ = row_stride;
  body_.store_row_count_ = row_count;
  body_.output_aliases_ = output_aliases;
  return finish(value, output_size, store_index);
}

}  // namespace kiln::graph
