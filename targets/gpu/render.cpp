// Body -> GPU kernel source; see render.hpp for the kernel's contract, schedule.hpp for the
// mappings.
#include "targets/gpu/render.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "support/diagnostic.hpp"
#include "targets/c_index_expr.hpp"
#include "targets/node_homes.hpp"

namespace kiln::targets::gpu {

using graph::Body;
using graph::DType;
using graph::Expr;
using graph::ExprOp;
using graph::Monoid;
using graph::Scalar;
using graph::ScalarId;
using graph::ScalarOp;

std::string gpu_prelude(const Dialect& dialect) {
  static const std::string helpers = R"(
KILN_FN kiln_i64 kiln_fdiv(kiln_i64 a, kiln_i64 b) {
  kiln_i64 q = a / b; return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}
KILN_FN kiln_i64 kiln_cdiv(kiln_i64 a, kiln_i64 b) { return -kiln_fdiv(-a, b); }
KILN_FN kiln_i64 kiln_imod(kiln_i64 a, kiln_i64 b) {
  if (b == 0) return 0;
  kiln_i64 r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
KILN_FN kiln_i64 kiln_imin(kiln_i64 a, kiln_i64 b) { return a < b ? a : b; }
KILN_FN kiln_i64 kiln_imax(kiln_i64 a, kiln_i64 b) { return a > b ? a : b; }
KILN_FN float kiln_fmaxf(float a, float b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }
KILN_FN float kiln_fminf(float a, float b) { return (a != a || b != b) ? a + b : (a < b ? a : b); }
KILN_FN float kiln_bf16_load(unsigned short b) { return kiln_bits_float((unsigned int)b << 16); }
KILN_FN unsigned short kiln_bf16_store(float f) {
  unsigned int u = kiln_float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u); return (unsigned short)(u >> 16);
}
KILN_FN float kiln_round_bf16(float x) { return kiln_bf16_load(kiln_bf16_store(x)); }
#ifdef KILN_HAS_F64
KILN_FN double kiln_fmax(double a, double b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }
KILN_FN double kiln_fmin(double a, double b) { return (a != a || b != b) ? a + b : (a < b ? a : b); }
KILN_FN double kiln_sat(double v, double lo, double hi) {
  if (v != v) return 0; v = kiln_trunc(v); return v < lo ? lo : (v > hi ? hi : v);
}
#endif
)";
  return "// kiln GPU kernels (generated).\n" + dialect.header() + helpers;
}

namespace {

// The variable holding the thread's index in its group.
constexpr const char* kThread = "kiln_tid";

class Renderer {
 public:
  Renderer(const Body& body, const Schedule& schedule, const Dialect& dialect)
      : body_(body), nodes_(body.scalars()), schedule_(schedule), d_(dialect), homes_(body) {}

  KernelSource render() {
    const std::string problem = schedule_problem(body_, schedule_);
    KILN_ASSERT(problem.empty(), "gpu render: " + problem);
    KernelSource out;
    const support::Hash128 key = body_.key();
    char hex[40];
    std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(key.high),
                  static_cast<unsigned long long>(key.low));
    out.name = std::string("kiln_") + hex + "_" + schedule_tag(schedule_);
    out.dims = graph::body_dims(body_);
    out.schedule = schedule_;
    out.groups = group_count(body_, schedule_);

    std::string params;
    std::vector<std::string> setup;
    const std::size_t n = body_.inputs().size();
    for (std::size_t k = 0; k <= n; ++k) {
      const bool is_output = k == n;
      const DType t = is_output ? body_.dtype() : body_.inputs()[k];
      BufferParam p = d_.buffer_param(k, storage_type(t), is_output,
                                      is_output ? "out" : "in" + std::to_string(k));
      params += (params.empty() ? "" : ", ") + p.params;
      if (!p.setup.empty()) setup.push_back(p.setup);
    }
    for (const std::string& dim : out.dims) params += ", kiln_i64 D_" + dim;
    if (params.empty()) params = "void";

    emit_body();
    std::ostringstream code;
    code << d_.kernel_declaration(out.name, params, schedule_.block) << " {\n";
    for (const std::string& s : setup) code << "  " << s << "\n";
    for (const std::string& s : locals_) code << "  " << s << "\n";
    code << body_text_.str() << "}\n";
    out.code = code.str();
    return out;
  }

 private:
  // ---- types and literals ----

  static const char* compute_type(DType t) {
    switch (t) {
      case DType::F32: case DType::F16: case DType::BF16: return "float";
      case DType::F64: return "double";
      case DType::I32: return "int";
      case DType::I64: return "kiln_i64";
      case DType::U8: case DType::Bool: return "unsigned char";
    }
    return "float";
  }

  std::string storage_type(DType t) const {
    if (t == DType::F16) return d_.half_type();
    if (t == DType::BF16) return "unsigned short";
    return compute_type(t);
  }

  std::string literal(double v, DType t) const {
    if (graph::is_float(t)) {
      const bool f64 = t == DType::F64;
      if (std::isnan(v)) return "(" + d_.nan(f64) + ")";
      if (std::isinf(v)) return v > 0 ? "(" + d_.infinity(f64) + ")" : "(-" + d_.infinity(f64) + ")";
      char buffer[40];
      std::snprintf(buffer, sizeof buffer, "%.17g", v);
      std::string text = buffer;
      if (text.find_first_of(".en") == std::string::npos) text += ".0";
      return f64 ? "(" + text + ")" : "(" + text + "f)";
    }
    char buffer[40];
    std::snprintf(buffer, sizeof buffer, "%lld", static_cast<long long>(v));
    return std::string("((") + compute_type(t) + ")" + buffer + ")";
  }

  // ---- expressions ----

  std::string var_name(const std::string& dim) const {
    return (homes_.is_loop_var(dim) ? "L_" : "D_") + dim;
  }

  std::string expr(const Expr& e) const {
    return c_index_expr(
        e, [this](const std::string& d) { return var_name(d); },
        [](std::int64_t v) { return "((kiln_i64)" + std::to_string(v) + ")"; });
  }

  std::string value(ScalarId id, const std::map<std::size_t, std::string>* params) const {
    const Scalar& s = nodes_[id];
    if (s.op == ScalarOp::Const) return literal(s.value, s.dtype);
    if (s.op == ScalarOp::Param) {
      KILN_ASSERT(params && params->count(s.slot), "Body: param outside a monoid");
      return params->at(s.slot);
    }
    if (params) return compute(id, params);  // monoid expressions are rendered inline
    return "v" + std::to_string(id);
  }

  static std::string rounded(const std::string& text, DType t) {
    if (t == DType::F16) return "kiln_round_f16(" + text + ")";
    if (t == DType::BF16) return "kiln_round_bf16(" + text + ")";
    return text;
  }

  std::string load_element(std::size_t input, const std::string& position) const {
    const DType t = body_.inputs()[input];
    const std::string buffer = "in" + std::to_string(input);
    if (t == DType::F16) return "kiln_load_f16(" + buffer + ", " + position + ")";
    if (t == DType::BF16) return "kiln_bf16_load(" + buffer + "[" + position + "])";
    return buffer + "[" + position + "]";
  }

  std::string cast(const std::string& x, DType from, DType to) const {
    if (to == DType::Bool) return "(unsigned char)(" + x + " != 0)";
    if (graph::is_float(to) || !graph::is_float(from)) {
      return rounded(std::string("(") + compute_type(to) + ")(" + x + ")", to);
    }
    // Float to integer: saturate, NaN to 0 (the conversion is undefined out of range).
    const char* range = to == DType::I32   ? "-2147483648.0, 2147483647.0"
                        : to == DType::U8  ? "0.0, 255.0"
                                           : "-9223372036854775808.0, 9223372036854774784.0";
    return std::string("(") + compute_type(to) + ")kiln_sat((double)(" + x + "), " + range + ")";
  }

  std::string compute(ScalarId id, const std::map<std::size_t, std::string>* params) const {
    const Scalar& s = nodes_[id];
    const DType t = s.dtype;
    const bool f64 = t == DType::F64;
    const bool is_float = graph::is_float(t);
    auto a = [&](std::size_t i) { return value(s.args[i], params); };
    auto math = [&](const char* name) { return rounded(d_.math(name, f64) + "(" + a(0) + ")", t); };
    switch (s.op) {
      case ScalarOp::Const: case ScalarOp::Param: return value(id, params);
      case ScalarOp::Index: return std::string("(") + compute_type(t) + ")" + expr(s.index);
      case ScalarOp::Load: {
        const std::string position = expr(s.index);
        std::string element;
        if (!s.args.empty()) {
          const std::string row = "(kiln_i64)" + a(0);
          const std::string missing = is_float ? literal(NAN, t) : literal(0, t);
          element = "((" + row + " >= 0 && " + row + " < " + expr(s.row_count) + ") ? " +
                    load_element(s.slot, position + " + " + row + " * " + expr(s.row_stride)) +
                    " : " + missing + ")";
        } else {
          element = load_element(s.slot, position);
        }
        if (s.valid == Expr(1)) return element;
        return "(" + expr(s.valid) + " ? " + element + " : " + literal(0, t) + ")";
      }
      case ScalarOp::Cast: return cast(a(0), nodes_[s.args[0]].dtype, t);
      case ScalarOp::Exp2: return math("exp2");
      case ScalarOp::Log2: return math("log2");
      case ScalarOp::Sin: return math("sin");
      case ScalarOp::Sqrt: return math("sqrt");
      case ScalarOp::Recip:
        return rounded(std::string("(") + (f64 ? "1.0" : "1.0f") + " / " + a(0) + ")", t);
      case ScalarOp::Add: case ScalarOp::Mul: {
        const char* op = s.op == ScalarOp::Add ? " + " : " * ";
        return rounded(std::string("(") + compute_type(t) + ")(" + a(0) + op + a(1) + ")", t);
      }
      case ScalarOp::Mod:
        if (is_float) return rounded(d_.math("fmod", f64) + "(" + a(0) + ", " + a(1) + ")", t);
        return std::string("(") + compute_type(t) + ")kiln_imod(" + a(0) + ", " + a(1) + ")";
      case ScalarOp::LessThan:
        return std::string("(") + compute_type(t) + ")(" + a(0) + " < " + a(1) + ")";
      case ScalarOp::Max: case ScalarOp::Min: {
        const bool mx = s.op == ScalarOp::Max;
        if (is_float) {
          return rounded(std::string(mx ? "kiln_fmax" : "kiln_fmin") + (f64 ? "" : "f") + "(" +
                             a(0) + ", " + a(1) + ")",
                         t);
        }
        return std::string("(") + compute_type(t) + ")" + (mx ? "kiln_imax(" : "kiln_imin(") +
               a(0) + ", " + a(1) + ")";
      }
      case ScalarOp::Select: return "(" + a(0) + " != 0 ? " + a(1) + " : " + a(2) + ")";
      case ScalarOp::Reduce: break;
    }
    KILN_ASSERT(false, "gpu render: a Reduce inside a monoid expression");
    return "";
  }

  // ---- statements ----

  void line(std::size_t indent, const std::string& text) {
    body_text_ << std::string(2 * indent, ' ') << text << '\n';
  }

  // The nodes computed in `scope`; reductions there are folded by the whole group when
  // `group` is set (every thread of the group reaches this point).
  void emit_nodes(std::size_t scope, std::size_t indent, bool group) {
    for (ScalarId id : homes_.homed(scope)) {
      const Scalar& s = nodes_[id];
      if (s.op == ScalarOp::Const || s.op == ScalarOp::Param) continue;
      if (s.op == ScalarOp::Reduce) {
        emit_reduce(id, indent, group);
        continue;
      }
      line(indent, std::string("const ") + compute_type(s.dtype) + " v" + std::to_string(id) +
                       " = " + compute(id, nullptr) + ";");
    }
  }

  // state = combine(state, lift(element)) over the reduction's range: all of it, or (group)
  // this thread's strided part, then a tree over the group's partial states in local memory.
  // The strided split reorders elements: group reductions need a commutative monoid (sum, max
  // and the online softmax are).
  void emit_reduce(ScalarId id, std::size_t indent, bool group) {
    const Scalar& s = nodes_[id];
    const Monoid& m = body_.monoids().at(s.slot);
    const char* type = compute_type(s.dtype);
    const std::string acc = "a" + std::to_string(id) + "_";
    const std::size_t states = m.identity.size();
    const std::size_t scope = homes_.reduce_scope(id);
    for (std::size_t k = 0; k < states; ++k) {
      line(indent, std::string(type) + " " + acc + std::to_string(k) + " = " +
                       literal(m.identity[k], s.dtype) + ";");
    }
    const std::string var = "L_" + s.var;
    if (group) {
      line(indent, "for (kiln_i64 " + var + " = " + kThread + "; " + var + " < " +
                       expr(s.extent) + "; " + var + " += " + std::to_string(schedule_.block) +
                       ") {");
    } else {
      line(indent, "for (kiln_i64 " + var + " = 0; " + var + " < " + expr(s.extent) + "; ++" +
                       var + ") {");
    }
    if (scope != 0) emit_nodes(scope, indent + 1, false);
    std::map<std::size_t, std::string> element;
    for (std::size_t e = 0; e < s.args.size(); ++e) element[e] = value(s.args[e], nullptr);
    std::map<std::size_t, std::string> pair;
    for (std::size_t k = 0; k < states; ++k) pair[k] = acc + std::to_string(k);
    for (std::size_t k = 0; k < m.lift.size(); ++k) {
      const std::string lifted = "l" + std::to_string(id) + "_" + std::to_string(k);
      line(indent + 1, std::string("const ") + type + " " + lifted + " = " +
                           value(m.lift[k], &element) + ";");
      pair[states + k] = lifted;
    }
    emit_combine(id, indent + 1, pair, acc);
    line(indent, "}");
    std::map<std::size_t, std::string> state;
    for (std::size_t k = 0; k < states; ++k) state[k] = acc + std::to_string(k);
    if (group && schedule_.warp_reduce) {
      emit_sub_group_reduce(id, indent, acc);
    } else if (group) {
      // The partial states meet in local memory; each level halves them.
      const std::string shared = "kiln_s" + std::to_string(id) + "_";
      for (std::size_t k = 0; k < states; ++k) {
        locals_.push_back(d_.local_array(type, shared + std::to_string(k), schedule_.block));
        line(indent, shared + std::to_string(k) + "[" + kThread + "] = " + acc +
                         std::to_string(k) + ";");
      }
      line(indent, d_.barrier() + ";");
      line(indent, "for (kiln_i64 kiln_w = " + std::to_string(schedule_.block / 2) +
                       "; kiln_w > 0; kiln_w /= 2) {");
      line(indent + 1, std::string("if (") + kThread + " < kiln_w) {");
      std::map<std::size_t, std::string> halves;
      for (std::size_t k = 0; k < states; ++k) {
        halves[k] = shared + std::to_string(k) + "[" + kThread + "]";
        halves[states + k] = shared + std::to_string(k) + "[" + kThread + " + kiln_w]";
      }
      emit_combine(id, indent + 2, halves, shared, "[" + std::string(kThread) + "]");
      line(indent + 1, "}");
      line(indent + 1, d_.barrier() + ";");
      line(indent, "}");
      for (std::size_t k = 0; k < states; ++k) state[k] = shared + std::to_string(k) + "[0]";
    }
    line(indent, std::string("const ") + type + " v" + std::to_string(id) + " = " +
                     value(m.finalize, &state) + ";");
  }

  // The group's partial states acc_k folded by sub-groups: a butterfly of lane exchanges in
  // each sub-group, one partial per sub-group into local memory, one barrier, and every
  // sub-group folds those partials (padded with the identity) the same way. Every thread ends
  // with the group's state in acc_k.
  void emit_sub_group_reduce(ScalarId id, std::size_t indent, const std::string& acc) {
    const Scalar& s = nodes_[id];
    const Monoid& m = body_.monoids().at(s.slot);
    const char* type = compute_type(s.dtype);
    const std::size_t states = m.identity.size();
    const int width = kSubGroup;
    const int parts = schedule_.block / width;
    const std::string lane = "(" + std::string(kThread) + " % " + std::to_string(width) + ")";
    const std::string shared = "kiln_s" + std::to_string(id) + "_";
    for (std::size_t k = 0; k < states; ++k) {
      locals_.push_back(d_.local_array(type, shared + std::to_string(k), parts));
    }
    emit_butterfly(id, indent, acc);
    line(indent, "if (" + lane + " == 0) {");
    for (std::size_t k = 0; k < states; ++k) {
      line(indent + 1, shared + std::to_string(k) + "[" + kThread + " / " +
                           std::to_string(width) + "] = " + acc + std::to_string(k) + ";");
    }
    line(indent, "}");
    line(indent, d_.barrier() + ";");
    for (std::size_t k = 0; k < states; ++k) {
      line(indent, acc + std::to_string(k) + " = " + lane + " < " + std::to_string(parts) + " ? " +
                       shared + std::to_string(k) + "[" + lane + "] : " +
                       literal(m.identity[k], s.dtype) + ";");
    }
    emit_butterfly(id, indent, acc);
  }

  // acc_k = combine(acc_k, the partner lane's acc_k) for lane masks kSubGroup/2 .. 1. Without
  // the dialect's exchange, through a local array of the group's size and two barriers a step.
  void emit_butterfly(ScalarId id, std::size_t indent, const std::string& acc) {
    const Scalar& s = nodes_[id];
    const std::size_t states = body_.monoids().at(s.slot).identity.size();
    const char* type = compute_type(s.dtype);
    const bool native = !d_.shuffle_xor(type, "x", "1").empty();
    const std::string x = "kiln_x" + std::to_string(id) + "_";
    if (!native && exchange_declared_.insert(id).second) {
      for (std::size_t k = 0; k < states; ++k) {
        locals_.push_back(d_.local_array(type, x + std::to_string(k), schedule_.block));
      }
    }
    line(indent, "for (int kiln_m = " + std::to_string(kSubGroup / 2) +
                     "; kiln_m > 0; kiln_m /= 2) {");
    std::map<std::size_t, std::string> pair;
    for (std::size_t k = 0; k < states; ++k) {
      const std::string mine = acc + std::to_string(k);
      const std::string theirs = "o" + std::to_string(id) + "_" + std::to_string(k);
      if (native) {
        line(indent + 1, std::string("const ") + type + " " + theirs + " = " +
                             d_.shuffle_xor(type, mine, "kiln_m") + ";");
      } else {
        line(indent + 1, x + std::to_string(k) + "[" + kThread + "] = " + mine + ";");
      }
      pair[k] = mine;
      pair[states + k] = theirs;
    }
    if (!native) {
      line(indent + 1, d_.barrier() + ";");
      for (std::size_t k = 0; k < states; ++k) {
        line(indent + 1, std::string("const ") + type + " o" + std::to_string(id) + "_" +
                             std::to_string(k) + " = " + x + std::to_string(k) + "[" + kThread +
                             " ^ kiln_m];");
      }
      line(indent + 1, d_.barrier() + ";");  // all read before the next step writes
    }
    emit_combine(id, indent + 1, pair, acc);
    line(indent, "}");
  }

  // target_k = combine_k(args) for every state component (all read before any is written).
  void emit_combine(ScalarId id, std::size_t indent, const std::map<std::size_t, std::string>& args,
                    const std::string& target, const std::string& subscript = "") {
    const Scalar& s = nodes_[id];
    const Monoid& m = body_.monoids().at(s.slot);
    const std::size_t states = m.identity.size();
    for (std::size_t k = 0; k < states; ++k) {
      line(indent, std::string("const ") + compute_type(s.dtype) + " n" + std::to_string(id) + "_" +
                       std::to_string(k) + " = " + value(m.combine[k], &args) + ";");
    }
    for (std::size_t k = 0; k < states; ++k) {
      line(indent, target + std::to_string(k) + subscript + " = n" + std::to_string(id) + "_" +
                       std::to_string(k) + ";");
    }
  }

  std::string store_value() const {
    const std::string v = value(body_.value(), nullptr);
    if (body_.dtype() == DType::BF16) return "kiln_bf16_store(" + v + ")";
    return v;
  }

  void emit_store(std::size_t indent) {
    std::string position = expr(body_.store_index());
    if (!(body_.guard() == Expr(1))) {  // a ragged tile's tail stores nothing
      line(indent, "if (" + expr(body_.guard()) + ")");
      ++indent;
    }
    if (body_.store_row()) {
      const std::string row = "(kiln_i64)" + value(*body_.store_row(), nullptr);
      line(indent, "if (" + row + " >= 0 && " + row + " < " + expr(body_.store_row_count()) + ")");
      position += " + " + row + " * " + expr(body_.store_row_stride());
      ++indent;
    }
    if (body_.dtype() == DType::F16) {
      line(indent, "kiln_store_f16(out, " + position + ", " + store_value() + ");");
    } else {
      line(indent, "out[" + position + "] = " + store_value() + ";");
    }
  }

  // Output loops first .. L-1 as plain loops in one thread, with their nodes, then the store.
  void emit_plain_loops(std::size_t first, std::size_t indent) {
    const std::vector<graph::Loop>& loops = body_.loops();
    for (std::size_t k = first; k < loops.size(); ++k) {
      const std::string var = "L_" + loops[k].var;
      line(indent, "for (kiln_i64 " + var + " = 0; " + var + " < " + expr(loops[k].extent) +
                       "; ++" + var + ") {");
      ++indent;
      emit_nodes(k + 1, indent, false);
    }
    emit_store(indent);
    for (std::size_t k = first; k < loops.size(); ++k) line(--indent, "}");
  }

  // The end of the run of loops from `first` whose extents name no loop variable (they can be
  // collapsed into one index), at most `limit`.
  std::size_t collapsible_end(std::size_t first, std::size_t limit) const {
    std::size_t end = first;
    while (end < limit && !homes_.mentions_loop_var(body_.loops()[end].extent)) ++end;
    return end;
  }

  // Output loops first .. end-1 from one index `index` (mixed radix, innermost fastest), and the
  // nodes of their scopes.
  void emit_decompose(const std::string& index, std::size_t first, std::size_t end,
                      std::size_t indent) {
    if (first == end) return;
    line(indent, "kiln_i64 kiln_rest_" + std::to_string(first) + " = " + index + ";");
    const std::string rest = "kiln_rest_" + std::to_string(first);
    for (std::size_t k = end; k-- > first;) {
      const graph::Loop& loop = body_.loops()[k];
      if (k == first) {
        line(indent, "const kiln_i64 L_" + loop.var + " = " + rest + ";");
      } else {
        line(indent, "const kiln_i64 L_" + loop.var + " = " + rest + " % " + expr(loop.extent) + ";");
        line(indent, rest + " /= " + expr(loop.extent) + ";");
      }
    }
    line(indent, "(void)" + rest + ";");
  }

  std::string trips(std::size_t first, std::size_t end) const {
    Expr n = 1;
    for (std::size_t k = first; k < end; ++k) n = n * body_.loops()[k].extent;
    return expr(graph::simplify(n));
  }

  void emit_body() {
    const std::size_t loops = body_.loops().size();
    const std::string block = std::to_string(schedule_.block);
    if (schedule_.mapping == Mapping::ThreadPerOutput) {
      emit_nodes(0, 1, false);
      const std::size_t end = collapsible_end(0, loops);
      line(1, "for (kiln_i64 kiln_i = " + d_.group_id() + " * " + block + " + " + d_.local_id() +
                  "; kiln_i < " + trips(0, end) + "; kiln_i += " + d_.group_count() + " * " +
                  block + ") {");
      emit_decompose("kiln_i", 0, end, 2);
      for (std::size_t k = 1; k <= end; ++k) emit_nodes(k, 2, false);
      emit_plain_loops(end, 2);
      line(1, "}");
      return;
    }
    const std::size_t rows = schedule_.group_loops;
    const std::size_t serial = serial_prefix(body_);
    const bool group = schedule_.group_reduce;
    line(1, std::string("const kiln_i64 ") + kThread + " = " + d_.local_id() + ";");
    line(1, "for (kiln_i64 kiln_g = " + d_.group_id() + "; kiln_g < " + trips(0, rows) +
                "; kiln_g += " + d_.group_count() + ") {");
    emit_decompose("kiln_g", 0, rows, 2);
    for (std::size_t k = 0; k <= rows; ++k) emit_nodes(k, 2, group);
    // Serial loops (rows is 0 then): every thread walks them in order; a barrier ends each
    // iteration, so that the next one sees its stores.
    std::size_t indent = 2;
    for (std::size_t k = rows; k < serial; ++k) {
      const graph::Loop& loop = body_.loops()[k];
      const std::string var = "L_" + loop.var;
      line(indent, "for (kiln_i64 " + var + " = 0; " + var + " < " + expr(loop.extent) + "; ++" +
                       var + ") {");
      ++indent;
      emit_nodes(k + 1, indent, false);
    }
    const std::size_t first = std::max(rows, serial);
    const std::size_t end = collapsible_end(first, loops);
    line(indent, "for (kiln_i64 kiln_t = " + std::string(kThread) + "; kiln_t < " +
                     trips(first, end) + "; kiln_t += " + block + ") {");
    emit_decompose("kiln_t", first, end, indent + 1);
    for (std::size_t k = first + 1; k <= end; ++k) emit_nodes(k, indent + 1, false);
    emit_plain_loops(end, indent + 1);
    line(indent, "}");
    for (std::size_t k = rows; k < serial; ++k) {
      line(indent, d_.barrier() + ";");
      line(--indent, "}");
    }
    // The next row reuses local memory: every thread must be done reading it.
    line(2, d_.barrier() + ";");
    line(1, "}");
  }

  const Body& body_;
  const std::vector<Scalar>& nodes_;
  Schedule schedule_;
  const Dialect& d_;
  NodeHomes homes_;
  std::vector<std::string> locals_;
  std::set<ScalarId> exchange_declared_;  // reductions whose exchange arrays are declared
  std::ostringstream body_text_;
};

}  // namespace

KernelSource render_gpu_kernel(const Body& body, const Schedule& schedule, const Dialect& dialect) {
  return Renderer(body, schedule, dialect).render();
}

}  // namespace kiln::targets::gpu
