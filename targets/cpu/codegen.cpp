// Body -> C++ for the CPU; see codegen.hpp for the shape of the generated code.
#include "targets/cpu/codegen.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <numbers>
#include <optional>
#include <set>
#include <sstream>

#include "support/diagnostic.hpp"
#include "targets/c_index_expr.hpp"
#include "targets/cpu/row_state.hpp"
#include "targets/cpu/tiled_product.hpp"
#include "targets/node_homes.hpp"

namespace kiln::targets::cpu {

using graph::Body;
using graph::DType;
using graph::Expr;
using graph::ExprOp;
using graph::Monoid;
using graph::Scalar;
using graph::ScalarId;
using graph::ScalarOp;

namespace {

// The prelude's scalar helpers (before the tiled products' micro-kernel, which uses them).
std::string prelude_helpers() {
  return R"(// kiln CPU kernels (generated).
typedef long long kiln_i64;
static inline kiln_i64 kiln_fdiv(kiln_i64 a, kiln_i64 b) {
  kiln_i64 q = a / b; return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline kiln_i64 kiln_cdiv(kiln_i64 a, kiln_i64 b) { return -kiln_fdiv(-a, b); }
static inline kiln_i64 kiln_imod(kiln_i64 a, kiln_i64 b) {
  if (b == 0) return 0;
  kiln_i64 r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
static inline kiln_i64 kiln_imin(kiln_i64 a, kiln_i64 b) { return a < b ? a : b; }
static inline kiln_i64 kiln_imax(kiln_i64 a, kiln_i64 b) { return a > b ? a : b; }
static inline float kiln_fmaxf(float a, float b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }
static inline float kiln_fminf(float a, float b) { return (a != a || b != b) ? a + b : (a < b ? a : b); }
static inline double kiln_fmax(double a, double b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }
static inline double kiln_fmin(double a, double b) { return (a != a || b != b) ? a + b : (a < b ? a : b); }
static inline double kiln_sat(double v, double lo, double hi) {
  if (v != v) return 0; v = __builtin_trunc(v); return v < lo ? lo : (v > hi ? hi : v);
}
// Sixteen floats: one AVX-512 register (two AVX2 ones), the key products' accumulators.
typedef float kiln_f32x16 __attribute__((vector_size(64)));
static inline float kiln_round_f16(float x) { return (float)(_Float16)x; }
static inline float kiln_bf16_load(unsigned short b) {
  unsigned int u = (unsigned int)b << 16; float f; __builtin_memcpy(&f, &u, 4); return f;
}
static inline unsigned short kiln_bf16_store(float f) {
  unsigned int u; __builtin_memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u); return (unsigned short)(u >> 16);
}
static inline float kiln_round_bf16(float x) { return kiln_bf16_load(kiln_bf16_store(x)); }
static inline float kiln_exp2f(float x) {
  // 2^x = 2^k * 2^f, k = round(x), f in [-0.5, 0.5]: a degree-6 polynomial (< 1 ulp), then the
  // exponent in two halves so that 2^k stays representable down to subnormals. No branches,
  // no libm call: the loop around it vectorizes.
  const float c = x < -150.0f ? -150.0f : (x > 129.0f ? 129.0f : x);
  const float k = ((c == c ? c : 0.0f) + 12582912.0f) - 12582912.0f;  // round to nearest
  const float f = c - k;
  float p = 1.5337577e-4f;
  p = p * f + 1.3399860e-3f;
  p = p * f + 9.6185198e-3f;
  p = p * f + 5.5503290e-2f;
  p = p * f + 2.4022646e-1f;
  p = p * f + 6.9314718e-1f;
  p = p * f + 1.0f;
  const int ki = (int)k;
  const int k1 = ki >> 1;
  const int k2 = ki - k1;
  const unsigned int b1 = (unsigned int)(k1 + 127) << 23, b2 = (unsigned int)(k2 + 127) << 23;
  float s1, s2;
  __builtin_memcpy(&s1, &b1, 4);
  __builtin_memcpy(&s2, &b2, 4);
  const float r = p * s1 * s2;
  return x != x ? x : r;
}
// 2^x on sixteen floats, for x <= 0 or -inf (the online softmax's weights and rescales): as
// kiln_exp2f, but results below 2^-126 are 0 and 2^k is one exponent field (its argument is
// clamped at -127, whose exponent field is 0), so that it is four operations shorter.
typedef int kiln_i32x16 __attribute__((vector_size(64)));
static inline kiln_f32x16 kiln_exp2_x16(kiln_f32x16 x) {
  const kiln_f32x16 c = x > -127.0f ? x : kiln_f32x16{} - 127.0f;
  const kiln_f32x16 k = (c + 12582912.0f) - 12582912.0f;  // round to nearest
  const kiln_f32x16 f = c - k;
  kiln_f32x16 p = f * 1.5337577e-4f + 1.3399860e-3f;
  p = p * f + 9.6185198e-3f;
  p = p * f + 5.5503290e-2f;
  p = p * f + 2.4022646e-1f;
  p = p * f + 6.9314718e-1f;
  p = p * f + 1.0f;
  return p * (kiln_f32x16)((__builtin_convertvector(k, kiln_i32x16) + 127) << 23);
}
static inline float kiln_log2f(float x) {
  // x = m * 2^e with m in [sqrt(1/2), sqrt(2)); log2 m = 2/ln 2 * atanh(t), t = (m-1)/(m+1),
  // |t| < 0.172, by its odd series to t^11. Subnormals are scaled up first; 0, negatives,
  // infinities and NaN take their IEEE results (selects, not branches: it vectorizes).
  const float scale = x < 1.17549435e-38f ? 8388608.0f : 1.0f;  // 2^23 for subnormals
  const float y = x * scale;
  unsigned int u;
  __builtin_memcpy(&u, &y, 4);
  const unsigned int mu = (u & 0x007fffffu) | 0x3f800000u;  // m in [1, 2)
  float m;
  __builtin_memcpy(&m, &mu, 4);
  float e = (float)((int)((u >> 23) & 0xffu) - 127) - (scale > 1.0f ? 23.0f : 0.0f);
  const float half = m > 1.41421356f ? 0.5f : 1.0f;
  m = m * half;
  e = e + (half < 1.0f ? 1.0f : 0.0f);
  const float t = (m - 1.0f) / (m + 1.0f);
  const float t2 = t * t;
  float p = 1.0f / 11.0f;
  p = p * t2 + 1.0f / 9.0f;
  p = p * t2 + 1.0f / 7.0f;
  p = p * t2 + 1.0f / 5.0f;
  p = p * t2 + 1.0f / 3.0f;
  p = p * t2 + 1.0f;
  float r = 2.88539008f * t * p + e;
  r = x == __builtin_inff() ? x : r;
  r = x == 0.0f ? -__builtin_inff() : r;
  return ((x < 0.0f) | (x != x)) ? __builtin_nanf("") : r;
}
static inline float kiln_sinf(float x) {
  // x = q * pi/2 + r, q = round(x * 2/pi), reduced in double with pi/2 in two parts (the
  // first of 24 bits, so q times it is exact for |q| < 2^29: |x| below 8e8, which covers every
  // rotary position); then sin or cos of r in [-pi/4, pi/4] by their Taylor polynomials (next
  // terms < 2e-9), chosen and signed by q mod 4. Infinities and NaN give NaN; past 8e8 the
  // result stays in [-1, 1] but loses digits. Selects, not branches: it vectorizes.
  const double xd = x;
  const double q = __builtin_rint(xd * 0.63661977236758134);
  float r = (float)((xd - q * 1.57079637050628662109375) + q * 4.3711390001862426e-8);
  r = r > 0.7854f ? 0.7854f : (r < -0.7854f ? -0.7854f : r);
  const double m = q - 4.0 * __builtin_floor(q * 0.25);  // q mod 4, NaN for infinite q
  const int k = (int)(m == m ? m : 0.0);
  const float r2 = r * r;
  float s = 2.7557319e-6f;  // 1/9!
  s = s * r2 - 1.9841270e-4f;
  s = s * r2 + 8.3333333e-3f;
  s = s * r2 - 1.6666667e-1f;
  s = r + r * r2 * s;
  float c = -2.7557319e-7f;  // -1/10!
  c = c * r2 + 2.4801587e-5f;
  c = c * r2 - 1.3888889e-3f;
  c = c * r2 + 4.1666667e-2f;
  c = c * r2 - 0.5f;
  c = 1.0f + r2 * c;
  const float v = (k & 1) ? c : s;
  return (k & 2) ? -v : v;
}
)";
}

}  // namespace

const std::string& cpu_prelude() {
  static const std::string text = prelude_helpers() + tiled_product_prelude();
  return text;
}

namespace {

// Scalar operations a parallel loop must hold to be split across threads: waking threads that
// have gone to sleep (after their bounded spin, jit.cpp) and joining them costs tens of
// microseconds, about as much as this much work on one core.
constexpr long long kParallelWork = 1 << 18;
// What one sin, exp2 or log2 counts for in that work (a vectorized RoPE kernel at seq 512,
// 131072 elements with two sins each, took 0.3 ms on one core: well past the threshold).
constexpr long long kMathFunctionWork = 16;
// Iterations of the outer loops that are enough to share among threads, leaving the innermost
// loop out of the collapse (see emit_output_scope).
constexpr long long kOuterTripsToShare = 16;
// The most parts an innermost loop is split into at the edges of its loads' valid ranges (a
// concatenation of two or three pieces; more would mean code growth for little gain).
constexpr std::size_t kMaxLoopParts = 4;

// The C type a node computes in.
const char* compute_type(DType t) {
  switch (t) {
    case DType::F32: case DType::F16: case DType::BF16: return "float";
    case DType::F64: return "double";
    case DType::I32: return "int";
    case DType::I64: return "long long";
    case DType::U8: case DType::Bool: return "unsigned char";
  }
  return "double";
}

// The C type of a buffer element.
const char* storage_type(DType t) {
  switch (t) {
    case DType::F16: return "_Float16";
    case DType::BF16: return "unsigned short";
    default: return compute_type(t);
  }
}

std::string literal(double v, DType t) {
  if (graph::is_float(t)) {
    if (std::isnan(v)) return "(__builtin_nanf(\"\"))";
    if (std::isinf(v)) return v > 0 ? "(__builtin_inff())" : "(-__builtin_inff())";
    char buffer[40];
    std::snprintf(buffer, sizeof buffer, "%.17g", v);
    std::string text = buffer;
    if (text.find_first_of(".en") == std::string::npos) text += ".0";
    return t == DType::F64 ? "(" + text + ")" : "(" + text + "f)";
  }
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%lld", static_cast<long long>(v));
  return std::string("((") + compute_type(t) + ")" + buffer + "LL)";
}

class Renderer : private KernelWriter {
 public:
  Renderer(const Body& body, const RenderOptions& options)
      : body_(body), nodes_(body.scalars()), homes_(body) {
    if (options.tiled_products) tiled_product_ = plan_tiled_product(body, homes_);
    if (options.row_state && !tiled_product_) row_state_ = plan_row_state(body, homes_);
    if (row_state_ && !options.key_blocks) row_state_->key_block = 0;
    if (row_state_ && !options.key_products) row_state_->key_products.clear();
    if (row_state_ && row_state_->key_block && !row_state_->key_products.empty()) {
      row_tile_ = kKeyTileRows;
      row_loop_ = row_state_->key_tile_loop;
    } else if (row_state_ && row_state_->key_block && row_state_->tiles_rows) {
      row_tile_ = kRowTile;
      row_loop_ = body.loops().size() - 2;
    }
    symbol_suffix_ = !options.tiled_products ? "_untiled"
                     : !options.row_state    ? "_plain"
                     : !options.key_blocks   ? "_keywise"
                     : !options.key_products ? "_rowwise"
                                             : "";
  }

  KernelSource render() {
    KernelSource out;
    const support::Hash128 key = body_.key();
    char hex[40];
    std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(key.high),
                  static_cast<unsigned long long>(key.low));
    out.symbol = std::string("kiln_") + hex + symbol_suffix_;
    out.dims = graph::body_dims(body_);
    code_ << "extern \"C\" void " << out.symbol
          << "(void* const* kiln_buffers, const long long* kiln_dims) {\n";
    for (std::size_t k = 0; k < body_.inputs().size(); ++k) {
      code_ << "  const " << storage_type(body_.inputs()[k]) << "* const in" << k << " = (const "
            << storage_type(body_.inputs()[k]) << "*)kiln_buffers[" << k << "];\n";
    }
    code_ << "  " << storage_type(body_.dtype()) << "* const out = (" << storage_type(body_.dtype())
          << "*)kiln_buffers[" << body_.inputs().size() << "];\n";
    for (std::size_t i = 0; i < out.dims.size(); ++i) {
      code_ << "  const kiln_i64 D_" << out.dims[i] << " = kiln_dims[" << i << "];\n";
    }
    code_ << "  (void)kiln_dims;\n";
    emit_output_scope(0, 1);
    code_ << "}\n";
    out.code = code_.str();
    return out;
  }

 private:
  // ---- expressions ----

  std::string var_name(const std::string& dim) const {
    return (homes_.is_loop_var(dim) ? "L_" : "D_") + dim;
  }

  std::string expr(const Expr& e) const {
    return c_index_expr(
        ranged(e), [this](const std::string& d) { return var_name(d); },
        [](std::int64_t v) { return "(" + std::to_string(v) + "LL)"; });
  }

  // `e` where the innermost loop runs over one part of its range (split_parts): comparisons and
  // clamps of its variable at that part's edges fold to constants there.
  Expr ranged(const Expr& e) const {
    return segment_.empty() ? e : graph::simplify(e, segment_);
  }

  // The value of a node: its local variable, or (for constants and monoid parameters) text.
  std::string value(ScalarId id, const std::map<std::size_t, std::string>* params) const {
    const Scalar& s = nodes_[id];
    if (s.op == ScalarOp::Const) return literal(s.value, s.dtype);
    if (s.op == ScalarOp::Param) {
      KILN_ASSERT(params && params->count(s.slot), "Body: param outside a monoid");
      return params->at(s.slot);
    }
    if (params) {
      if (auto it = shared_combine_.find(id); it != shared_combine_.end()) return it->second;
      return compute(id, params);  // monoid expressions are rendered inline
    }
    if (auto it = renamed_.find(id); it != renamed_.end()) return it->second;
    return "v" + std::to_string(id);
  }

  // Rounds a float computed for an f16/bf16 node, as the reference does at every node.
  static std::string rounded(const std::string& text, DType t) {
    if (t == DType::F16) return "kiln_round_f16(" + text + ")";
    if (t == DType::BF16) return "kiln_round_bf16(" + text + ")";
    return text;
  }

  std::string load_element(std::size_t input, const std::string& position) const {
    DType t = body_.inputs()[input];
    std::string element = "in" + std::to_string(input) + "[" + position + "]";
    if (t == DType::F16) return "(float)" + element;
    if (t == DType::BF16) return "kiln_bf16_load(" + element + ")";
    return element;
  }

  std::string cast(const std::string& x, DType from, DType to) const {
    if (graph::is_float(to) || !graph::is_float(from)) {
      if (to == DType::Bool) return "(unsigned char)(" + x + " != 0)";
      if (graph::is_float(to) || graph::is_float(from) == graph::is_float(to)) {
        // u8 and bool reach a float through int: GCC has no vector form of an unsigned char to
        // float conversion, so a ReLU's (x > 0) * x kept the whole fused loop scalar (exact
        // either way: every u8 is an int and a float).
        const bool via_int = graph::is_float(to) && (from == DType::U8 || from == DType::Bool);
        return rounded(std::string("(") + compute_type(to) + ")(" + (via_int ? "(int)(" : "(") +
                           x + "))",
                       to);
      }
    }
    // Float to integer: saturate, NaN to 0 (C's conversion is undefined out of range).
    if (to == DType::Bool) return "(unsigned char)(" + x + " != 0)";
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
    auto math = [&](const char* name) {
      return rounded(std::string("__builtin_") + name + (f64 ? "" : "f") + "(" + a(0) + ")", t);
    };
    // exp2, log2 and sin in float: the prelude's branch-free versions, which vectorize (libm's
    // are calls); double keeps libm's.
    auto vector_math = [&](const char* name) {
      if (f64) return math(name);
      return rounded(std::string("kiln_") + name + "f(" + a(0) + ")", t);
    };
    switch (s.op) {
      case ScalarOp::Const: case ScalarOp::Param: return value(id, params);
      case ScalarOp::Index: return std::string("(") + compute_type(t) + ")" + expr(s.index);
      case ScalarOp::Load: {
        std::string position = expr(s.index);
        std::string element;
        if (!s.args.empty()) {
          std::string row = "(kiln_i64)" + a(0);
          std::string rows = expr(s.row_count);
          std::string nan = is_float ? literal(NAN, t) : literal(0, t);
          element = "((" + row + " >= 0 && " + row + " < " + rows + ") ? " +
                    load_element(s.slot, position + " + " + row + " * " + expr(s.row_stride)) +
                    " : " + nan + ")";
        } else {
          element = load_element(s.slot, position);
        }
        const Expr valid = ranged(s.valid);
        if (valid == Expr(1)) return element;
        if (valid == Expr(0)) return literal(0, t);  // a part of the loop that reads padding
        return "(" + expr(valid) + " ? " + element + " : " + literal(0, t) + ")";
      }
      case ScalarOp::Cast: return cast(a(0), nodes_[s.args[0]].dtype, t);
      case ScalarOp::Exp2: return vector_math("exp2");
      case ScalarOp::Log2: {
        // The log2 of a 0 or 1 (a boolean or a comparison) cast to a float, an additive mask,
        // is a select: exact, and no polynomial.
        const Scalar& arg = nodes_[s.args[0]];
        const auto zero_or_one = [&](const Scalar& x) {
          return x.dtype == DType::Bool || x.op == ScalarOp::LessThan;
        };
        if (is_float && arg.op == ScalarOp::Cast && zero_or_one(nodes_[arg.args[0]])) {
          return "(" + a(0) + " != 0 ? " + literal(0, t) + " : " + literal(-INFINITY, t) + ")";
        }
        return vector_math("log2");
      }
      case ScalarOp::Sin: return vector_math("sin");
      case ScalarOp::Sqrt: return math("sqrt");
      case ScalarOp::Recip:
        return rounded(std::string("(") + (f64 ? "1.0" : "1.0f") + " / " + a(0) + ")", t);
      case ScalarOp::Add: case ScalarOp::Mul: {
        const char* op = s.op == ScalarOp::Add ? " + " : " * ";
        return rounded(std::string("(") + compute_type(t) + ")(" + a(0) + op + a(1) + ")", t);
      }
      case ScalarOp::Mod:
        if (is_float) {
          return rounded(std::string("__builtin_fmod") + (f64 ? "" : "f") + "(" + a(0) + ", " +
                             a(1) + ")",
                         t);
        }
        return std::string("(") + compute_type(t) + ")kiln_imod(" + a(0) + ", " + a(1) + ")";
      case ScalarOp::LessThan:
        return std::string("(") + compute_type(t) + ")(" + a(0) + " < " + a(1) + ")";
      case ScalarOp::Max: case ScalarOp::Min: {
        const bool mx = s.op == ScalarOp::Max;
        if (is_float) {
          return std::string(mx ? "kiln_fmax" : "kiln_fmin") + (f64 ? "" : "f") + "(" + a(0) +
                 ", " + a(1) + ")";
        }
        return std::string("(") + compute_type(t) + ")" + (mx ? "kiln_imax(" : "kiln_imin(") +
               a(0) + ", " + a(1) + ")";
      }
      case ScalarOp::Select: return "(" + a(0) + " != 0 ? " + a(1) + " : " + a(2) + ")";
      case ScalarOp::Reduce: break;
    }
    KILN_ASSERT(false, "codegen: a Reduce inside a monoid expression");
    return "";
  }

  // ---- statements ----

  void line(std::size_t indent, const std::string& text) override {
    code_ << std::string(2 * indent, ' ') << text << '\n';
  }

  // The tiled product's emitter reads and writes through these (tiled_product.hpp).
  void node(ScalarId id, std::size_t indent) override { emit_node(id, indent); }
  void store(std::size_t indent) override { emit_store(indent); }
  void rename(ScalarId id, const std::string& text) override {
    if (text.empty()) {
      renamed_.erase(id);
    } else {
      renamed_[id] = text;
    }
  }
  std::string index(const Expr& e) const override { return expr(e); }
  std::string value(ScalarId id) const override { return value(id, nullptr); }

  void emit_nodes(std::size_t scope, std::size_t indent) {
    for (ScalarId id : homes_.homed(scope)) emit_node(id, indent);
  }

  void emit_node(ScalarId id, std::size_t indent) {
    const Scalar& s = nodes_[id];
    if (s.op == ScalarOp::Const || s.op == ScalarOp::Param) return;
    if (s.op == ScalarOp::Reduce) {
      emit_reduce(id, indent);
      return;
    }
    line(indent, std::string("const ") + compute_type(s.dtype) + " v" + std::to_string(id) +
                     " = " + compute(id, nullptr) + ";");
  }

  void emit_vector_max(ScalarId id, std::size_t indent, std::size_t scope, const std::string& acc,
                       const char* type) {
    const Scalar& s = nodes_[id];
    line(indent, "long long " + acc + "nan = 0, " + acc + "real = 0;");
    line(indent, "#pragma omp simd reduction(max: " + acc + "0) reduction(+: " + acc + "nan, " +
                     acc + "real)");
    const std::string var = "L_" + s.var;
    line(indent, "for (kiln_i64 " + var + " = 0; " + var + " < " + expr(s.extent) + "; ++" + var +
                     ") {");
    if (scope != 0) emit_nodes(scope, indent + 1);
    const std::string e = "e" + std::to_string(id);
    line(indent + 1, std::string("const ") + type + " " + e + " = " + value(s.args[0], nullptr) +
                         ";");
    line(indent + 1, acc + "0 = " + e + " > " + acc + "0 ? " + e + " : " + acc + "0;");
    line(indent + 1, acc + "nan += " + e + " != " + e + ";");
    line(indent + 1, acc + "real += " + e + " > -__builtin_inff();");
    line(indent, "}");
    const bool f64 = s.dtype == DType::F64;
    line(indent, std::string("const ") + type + " v" + std::to_string(id) + " = " + acc +
                     "nan ? " + (f64 ? "__builtin_nan(\"\")" : "__builtin_nanf(\"\")") + " : (" +
                     acc + "real ? " + acc + "0 : -__builtin_inff());");
  }

  void emit_reduce(ScalarId id, std::size_t indent) {
    const Scalar& s = nodes_[id];
    const Monoid& m = body_.monoids().at(s.slot);
    const char* type = compute_type(s.dtype);
    const std::string acc = "a" + std::to_string(id) + "_";
    const std::size_t scope = homes_.reduce_scope(id);
    for (std::size_t k = 0; k < m.identity.size(); ++k) {
      line(indent, std::string(type) + " " + acc + std::to_string(k) + " = " +
                       literal(m.identity[k], s.dtype) + ";");
    }
    const bool innermost = !homes_.has_child_scope(scope);
    const bool vector_float = innermost && graph::is_float(s.dtype) && s.dtype != DType::F16 &&
                              s.dtype != DType::BF16;
    if (m.name == "sum" && vector_float) {
      line(indent, "#pragma omp simd reduction(+: " + acc + "0)");
    }
    // The built-in max: OpenMP's max reduction vectorizes, but starts its lanes at the least
    // finite value and drops NaN, so the loop also counts NaN elements and elements above -inf,
    // and the result is fixed after it (NaN if any; -inf if every element was -inf: a fully
    // masked row).
    const bool vector_max = m.name == "max" && vector_float && m.identity.size() == 1 &&
                            s.args.size() == 1 && nodes_[m.combine[0]].op == ScalarOp::Max;
    if (vector_max) {
      emit_vector_max(id, indent, scope, acc, type);
      return;
    }
    const std::string var = "L_" + s.var;
    line(indent, "for (kiln_i64 " + var + " = 0; " + var + " < " + expr(s.extent) + "; ++" + var +
                     ") {");
    if (scope != 0) emit_nodes(scope, indent + 1);
    std::map<std::size_t, std::string> element;
    for (std::size_t e = 0; e < s.args.size(); ++e) element[e] = value(s.args[e], nullptr);
    std::map<std::size_t, std::string> pair;
    const std::size_t states = m.identity.size();
    for (std::size_t k = 0; k < states; ++k) pair[k] = acc + std::to_string(k);
    for (std::size_t k = 0; k < m.lift.size(); ++k) {
      std::string lifted = "l" + std::to_string(id) + "_" + std::to_string(k);
      line(indent + 1, std::string("const ") + type + " " + lifted + " = " +
                           value(m.lift[k], &element) + ";");
      pair[states + k] = lifted;
    }
    for (std::size_t k = 0; k < states; ++k) {
      line(indent + 1, std::string("const ") + type + " n" + std::to_string(id) + "_" +
                           std::to_string(k) + " = " + value(m.combine[k], &pair) + ";");
    }
    for (std::size_t k = 0; k < states; ++k) {
      line(indent + 1, acc + std::to_string(k) + " = n" + std::to_string(id) + "_" +
                           std::to_string(k) + ";");
    }
    line(indent, "}");
    std::map<std::size_t, std::string> state;
    for (std::size_t k = 0; k < states; ++k) state[k] = acc + std::to_string(k);
    line(indent, std::string("const ") + type + " v" + std::to_string(id) + " = " +
                     value(m.finalize, &state) + ";");
  }

  std::string store_value() const {
    DType t = body_.dtype();
    std::string v = value(body_.value(), nullptr);
    if (t == DType::BF16) return "kiln_bf16_store(" + v + ")";
    if (t == DType::F16) return "(_Float16)" + v;
    return v;
  }

  void emit_store(std::size_t indent) {
    std::string position = expr(body_.store_index());
    if (!(body_.guard() == Expr(1))) {  // a ragged tile's tail stores nothing
      line(indent, "if (" + expr(body_.guard()) + ")");
      ++indent;
    }
    if (body_.store_row()) {
      std::string row = "(kiln_i64)" + value(*body_.store_row(), nullptr);
      line(indent, "if (" + row + " >= 0 && " + row + " < " + expr(body_.store_row_count()) +
                       ")");
      position += " + " + row + " * " + expr(body_.store_row_stride());
      ++indent;
    }
    line(indent, "out[" + position + "] = " + store_value() + ";");
  }

  // Output scope `scope` (inside loops 0..scope-1) and everything inside it.
  void emit_output_scope(std::size_t scope, std::size_t indent) {
    const std::vector<graph::Loop>& loops = body_.loops();
    for (ScalarId id : homes_.homed(scope)) {
      if (!per_row(id)) emit_node(id, indent);  // else in the tile, for each row
    }
    if (scope == loops.size()) {
      emit_store(indent);
      return;
    }
    if (tiled_product_) {
      emit_tiled_product(body_, homes_, *tiled_product_, kParallelWork, *this);
      return;
    }
    if (row_state_ && scope + 1 == loops.size()) {
      emit_row_state(*row_state_, indent);
      return;
    }
    // Collapse the perfectly nested parallel loops that start here (not the innermost one of a
    // row-state reduction: it runs inside the reduction's loop).
    const std::size_t collapsible = row_state_ ? loops.size() - 1 : loops.size();
    std::size_t run = 0;
    if (!in_parallel_) {
      const auto nothing_between = [&](std::size_t at) {
        const std::vector<ScalarId>& homed = homes_.homed(at);
        return std::all_of(homed.begin(), homed.end(), [&](ScalarId id) { return per_row(id); });
      };
      while (scope + run < collapsible && loops[scope + run].parallel &&
             (run == 0 || nothing_between(scope + run))) {
        ++run;
      }
    }
    if (run > 1 && scope + run == loops.size()) {
      // Keep the innermost loop out of the collapse, so that it vectorizes (a collapsed loop
      // is one linear index) -- unless the outer loops are too few to share (a decode step's
      // [1, n] rows): then the innermost loop is collapsed too, and split across threads.
      const std::string outer = trips_text(scope, run - 1);
      line(indent, "if (" + outer + " >= " + std::to_string(kOuterTripsToShare) + ") {");
      emit_parallel_nest(scope, indent + 1, run - 1);
      line(indent, "} else {");
      emit_parallel_nest(scope, indent + 1, run);
      line(indent, "}");
      return;
    }
    emit_parallel_nest(scope, indent, run);
  }

  // Output loops scope .. scope+run-1 collapsed into one `omp parallel for` (a plain loop when
  // run is 0), then everything inside them.
  void emit_parallel_nest(std::size_t scope, std::size_t indent, std::size_t run) {
    const std::vector<graph::Loop>& loops = body_.loops();
    if (run > 0) {
      // Parallel by work, not by trip count: the iterations times what each does (the loops
      // and reductions inside) must pay for waking the threads.
      line(indent, "#pragma omp parallel for collapse(" + std::to_string(run) +
                       ") schedule(static) if(" + trips_text(scope, run) + " > 1 && " +
                       work_text(scope) + " >= " + std::to_string(kParallelWork) + ")");
      in_parallel_ = true;
    }
    const std::size_t loops_here = run > 0 ? run : 1;
    if (run == 0 && scope + 1 == loops.size() && loops[scope].parallel &&
        !homes_.has_child_scope(scope + 1)) {
      const std::vector<std::int64_t> edges = split_edges(scope);
      if (edges.size() > 2) {
        emit_split_loop(scope, edges, indent);
        return;
      }
      line(indent, "#pragma omp simd");
    }
    // The loops in order; but where they are collapsed from the tiled loop to the one around c,
    // the tiled loop goes last (a query position's heads outside the tiles of positions: each
    // head's keys and values stay in cache for all its tiles; row_state.hpp).
    std::vector<std::size_t> order;
    for (std::size_t k = 0; k < loops_here; ++k) order.push_back(scope + k);
    if (row_tile_ && run > 0 && scope <= row_loop_ && scope + run + 1 == loops.size()) {
      order.erase(order.begin() + static_cast<std::ptrdiff_t>(row_loop_ - scope));
      order.push_back(row_loop_);
    }
    for (std::size_t k = 0; k < loops_here; ++k) {
      const graph::Loop& loop = loops[order[k]];
      if (row_tile_ && order[k] == row_loop_) {  // the rows, row_tile_ at a time
        line(indent + k, "for (kiln_i64 " + row_tile_start() + " = 0; " + row_tile_start() +
                             " < " + expr(loop.extent) + "; " + row_tile_start() +
                             " += " + std::to_string(row_tile_) + ") {");
        continue;
      }
      const std::string var = "L_" + loop.var;
      line(indent + k, "for (kiln_i64 " + var + " = 0; " + var + " < " + expr(loop.extent) +
                           "; ++" + var + ") {");
    }
    emit_output_scope(scope + loops_here, indent + loops_here);
    for (std::size_t k = loops_here; k-- > 0;) line(indent + k, "}");
    if (run > 0) in_parallel_ = false;
  }

  // Where the innermost loop's loads are valid on constant ranges of its variable (a padded or
  // concatenated read: `o2 <= 31`, `32 <= o2`, `max(o2, 32)`), the edges of those ranges, from
  // 0 to its constant extent: the loop runs as one loop per part, in which each validity and
  // clamp is a constant, so that every part is a plain loop that vectorizes (GCC does not
  // vectorize the conditional loads). Fewer than 3 edges: no split.
  std::vector<std::int64_t> split_edges(std::size_t scope) const {
    const graph::Loop& loop = body_.loops()[scope];
    std::optional<std::int64_t> extent = loop.extent.as_constant();
    if (!extent) return {};
    std::set<std::int64_t> edges{0, *extent};
    // Edges at the constants compared with or clamping the variable.
    std::function<void(const Expr&)> walk = [&](const Expr& e) {
      const graph::ExprOp op = e.op();
      if ((op == graph::ExprOp::Le || op == graph::ExprOp::Lt || op == graph::ExprOp::Max ||
           op == graph::ExprOp::Min) && e.args().size() == 2) {
        for (std::size_t i = 0; i < 2; ++i) {
          const Expr& v = e.args()[i];
          std::optional<std::int64_t> c = e.args()[1 - i].as_constant();
          if (v.op() != graph::ExprOp::Dim || v.name() != loop.var || !c) continue;
          // v <= c and c < v change at c + 1; v < c, c <= v, max and min at c.
          const bool after = (op == graph::ExprOp::Le && i == 0) ||
                             (op == graph::ExprOp::Lt && i == 1) ||
                             (op == graph::ExprOp::Min);
          const std::int64_t at = *c + (after ? 1 : 0);
          if (at > 0 && at < *extent) edges.insert(at);
        }
      }
      for (const Expr& a : e.args()) walk(a);
    };
    for (ScalarId id : homes_.homed(scope + 1)) {
      const Scalar& n = nodes_[id];
      if (n.op == ScalarOp::Load && !(n.valid == Expr(1))) {
        walk(n.valid);
        walk(n.index);
      }
    }
    if (edges.size() > kMaxLoopParts + 1) return {};
    return {edges.begin(), edges.end()};
  }

  // The innermost loop of `scope` as one vectorized loop per part between `edges`.
  void emit_split_loop(std::size_t scope, const std::vector<std::int64_t>& edges,
                       std::size_t indent) {
    const graph::Loop& loop = body_.loops()[scope];
    const std::string var = "L_" + loop.var;
    for (std::size_t k = 0; k + 1 < edges.size(); ++k) {
      segment_[loop.var] = graph::Interval{edges[k], edges[k + 1] - 1};
      line(indent, "#pragma omp simd");
      line(indent, "for (kiln_i64 " + var + " = " + std::to_string(edges[k]) + "; " + var +
                       " < " + std::to_string(edges[k + 1]) + "; ++" + var + ") {");
      emit_output_scope(scope + 1, indent + 1);
      line(indent, "}");
    }
    segment_.clear();
  }

  // The innermost output loop around a row-state reduction (row_state.hpp): row inputs into
  // arrays, then the reduction with its state in arrays of the loop's extent (shared components
  // and combine parts once per r), then the loop again for the finalize and the store.
  void emit_row_state(const RowStatePlan& plan, std::size_t indent) {
    const Scalar& s = nodes_[plan.reduce];
    const Monoid& m = body_.monoids().at(s.slot);
    const std::string columns = std::to_string(plan.columns);
    line(indent, "// row state of %" + std::to_string(plan.reduce) + ": every " + plan.column_var +
                     " < " + columns + " at once" +
                     (plan.key_block ? ", keys in blocks of " + std::to_string(plan.key_block) : "") +
                     (plan.key_block && row_tile_ == kKeyTileRows
                          ? ", rows " + std::to_string(row_tile_) + " at a time with key products"
                          : ""));
    if (!plan.row_inputs.empty()) {
      for (ScalarId id : plan.row_inputs) {
        line(indent, std::string(compute_type(nodes_[id].dtype)) + " p" + std::to_string(id) +
                         "[" + columns + "];");
      }
      open_column_loop(plan, plan.row_inputs, indent);
      for (ScalarId id : plan.row_inputs) emit_node(id, indent + 1);
      for (ScalarId id : plan.row_inputs) {
        line(indent + 1, "p" + std::to_string(id) + "[" + column(plan) + "] = v" +
                             std::to_string(id) + ";");
      }
      line(indent, "}");
      for (ScalarId id : plan.row_inputs) {
        renamed_[id] = "p" + std::to_string(id) + "[" + column(plan) + "]";
      }
    }
    emit_state(plan, indent);
    if (plan.key_block && row_tile_ == kKeyTileRows) {
      emit_key_tiled_fold(plan, indent);
    } else if (plan.key_block) {
      emit_blocked_fold(plan, indent);
    } else {
      emit_keywise_fold(plan, indent);
    }
    // Finalize, the rest of the value and the store, for every column.
    std::vector<ScalarId> rest;
    for (ScalarId id : homes_.homed(body_.loops().size())) {
      if (!renamed_.count(id)) rest.push_back(id);
    }
    if (row_tile_) open_tile_row(indent++);
    open_column_loop(plan, rest, indent);
    std::map<std::size_t, std::string> state;
    for (std::size_t k = 0; k < m.identity.size(); ++k) state[k] = row_state(plan, k);
    for (ScalarId id : rest) {
      if (id != plan.reduce) {
        emit_node(id, indent + 1);
        continue;
      }
      line(indent + 1, std::string("const ") + compute_type(s.dtype) + " v" + std::to_string(id) +
                           " = " + value(m.finalize, &state) + ";");
    }
    emit_store(indent + 1);
    line(indent, "}");
    if (row_tile_) line(--indent, "}");
    renamed_.clear();
  }

  // The row-state fold key by key: for r { shared nodes ; shared fold step ; for c { column
  // nodes ; column fold step } }.
  void emit_keywise_fold(const RowStatePlan& plan, std::size_t indent) {
    const Scalar& s = nodes_[plan.reduce];
    const Monoid& m = body_.monoids().at(s.slot);
    const std::string r = "L_" + s.var;
    line(indent, "for (kiln_i64 " + r + " = 0; " + r + " < " + expr(s.extent) + "; ++" + r +
                     ") {");
    for (ScalarId id : plan.shared_nodes) emit_node(id, indent + 1);
    std::map<std::size_t, std::string> pair;
    emit_row_fold_step(plan, true, pair, indent + 1);
    open_column_loop(plan, plan.column_nodes, indent + 1);
    for (ScalarId id : plan.column_nodes) emit_node(id, indent + 2);
    emit_row_fold_step(plan, false, pair, indent + 2);
    line(indent + 1, "}");
    shared_combine_.clear();
    for (std::size_t k = 0; k < m.identity.size(); ++k) {
      if (plan.shared_state[k]) line(indent + 1, row_state(plan, k) + " = " + folded(plan, k) + ";");
    }
    line(indent, "}");
  }

  // The online softmax folded in blocks of keys (row_state.hpp): per block, the scores into an
  // array, their max and exps in vectorized loops, one rescale of the state, then the weighted
  // values added column-vectorized. The state is (m, l, a[c]): row_state(plan, 0..2).
  // Opens the loop over blocks of `block` keys of reduction `s` (`end` its extent, `first` a
  // block's first key, `count` its keys, the last block ragged); the body goes at indent + 1.
  void open_key_blocks(std::size_t indent, const Scalar& s, const std::string& end,
                       const std::string& first, const std::string& count,
                       const std::string& block) {
    line(indent, "const kiln_i64 " + end + " = " + expr(s.extent) + ";");
    line(indent, "for (kiln_i64 " + first + " = 0; " + first + " < " + end + "; " + first +
                     " += " + block + ") {");
    line(indent + 1, "const kiln_i64 " + count + " = kiln_imin(" + block + ", " + end + " - " +
                         first + ");");
  }

  void emit_blocked_fold(const RowStatePlan& plan, std::size_t indent) {
    const Scalar& s = nodes_[plan.reduce];
    const std::string id = std::to_string(plan.reduce);
    const std::string block = std::to_string(plan.key_block);
    const std::string m = row_state(plan, 0), l = row_state(plan, 1), a = row_state(plan, 2);
    const std::string log2e = literal(std::numbers::log2e, s.dtype);
    const std::string end = "ke" + id, start = "kb" + id, count = "kn" + id, key = "kj" + id;
    const std::string scores = "ks" + id, weights = "kw" + id, top = "kx" + id, nan = "kq" + id,
                      real = "kr" + id, max = "km" + id, scale = "kc" + id, sum = "kt" + id,
                      masked = "kg" + id;
    const std::string r = "L_" + s.var;
    auto key_loop = [&](std::size_t at) {
      line(at, "for (kiln_i64 " + key + " = 0; " + key + " < " + count + "; ++" + key + ") {");
    };
    // The keys left after the groups (see emit_key_group_reductions), from `from`.
    auto rest_loop = [&](std::size_t at, const std::string& from) {
      line(at, "for (kiln_i64 " + key + " = " + from + "; " + key + " < " + count + "; ++" + key +
                   ") {");
    };
    open_key_blocks(indent, s, end, start, count, block);
    std::size_t in = indent + 1;
    if (row_tile_) open_tile_row(in++);  // the block's keys for each row of the tile
    // The block's scores: the inner reductions into arrays, then the rest, vectorized.
    line(in, "float " + scores + "[" + block + "];");
    if (!plan.key_reductions.empty()) {
      for (ScalarId n : plan.key_arrays) {
        line(in, std::string(compute_type(nodes_[n].dtype)) + " kd" + std::to_string(n) + "[" +
                     block + "];");
      }
      if (plan.key_guard) {
        // The mask first: a masked key skips the reductions (row_state.hpp).
        line(in, "unsigned char " + masked + "[" + block + "];");
        line(in, "#pragma omp simd");
        key_loop(in);
        line(in + 1, "const kiln_i64 " + r + " = " + start + " + " + key + ";");
        for (ScalarId n : plan.guard_nodes) emit_node(n, in + 1);
        line(in + 1, masked + "[" + key + "] = " + guard_hides(plan) + ";");
        line(in, "}");
      }
      const std::string grouped = "kf" + id;
      line(in, "kiln_i64 " + grouped + " = 0;");
      if (groups_key_reductions(plan)) {
        emit_key_group_reductions(plan, grouped, count, start, masked, in);
      }
      rest_loop(in, grouped);
      line(in + 1, "const kiln_i64 " + r + " = " + start + " + " + key + ";");
      if (plan.key_guard) {
        line(in + 1, "if (" + masked + "[" + key + "]) {");
        for (ScalarId n : plan.key_arrays) {
          line(in + 2, "kd" + std::to_string(n) + "[" + key + "] = " + literal(0, nodes_[n].dtype) +
                           ";");
        }
        line(in + 2, "continue;");
        line(in + 1, "}");
      }
      for (ScalarId n : plan.key_reductions) emit_node(n, in + 1);
      for (ScalarId n : plan.key_arrays) {
        line(in + 1, "kd" + std::to_string(n) + "[" + key + "] = v" + std::to_string(n) + ";");
      }
      line(in, "}");
      for (ScalarId n : plan.key_arrays) renamed_[n] = "kd" + std::to_string(n) + "[" + key + "]";
    }
    line(in, "#pragma omp simd");
    key_loop(in);
    line(in + 1, "const kiln_i64 " + r + " = " + start + " + " + key + ";");
    for (ScalarId n : plan.key_elementwise) emit_node(n, in + 1);
    line(in + 1, scores + "[" + key + "] = " +
                     (plan.key_guard ? masked + "[" + key + "] ? -__builtin_inff() : " : "") +
                     value(s.args[0], nullptr) + ";");
    line(in, "}");
    for (ScalarId n : plan.key_arrays) renamed_.erase(n);
    // The new max: as emit_vector_max, OpenMP's max starts its lanes at the least finite value
    // and drops NaN, so NaN and elements above -inf are counted and the result fixed after.
    line(in, "float " + top + " = -__builtin_inff();");
    line(in, "long long " + nan + " = 0, " + real + " = 0;");
    line(in, "#pragma omp simd reduction(max: " + top + ") reduction(+: " + nan + ", " + real + ")");
    key_loop(in);
    line(in + 1, "const float e = " + scores + "[" + key + "];");
    line(in + 1, top + " = e > " + top + " ? e : " + top + ";");
    line(in + 1, nan + " += e != e;");
    line(in + 1, real + " += e > -__builtin_inff();");
    line(in, "}");
    line(in, "const float " + max + " = " + nan + " ? __builtin_nanf(\"\") : (" + real +
                 " ? kiln_fmaxf(" + m + ", " + top + ") : " + m + ");");
    // A block whose scores are all -inf after a finite max weighs every key 0 and rescales by
    // 1: it changes nothing, and its values are not read (a causal mask's blocks past the row).
    line(in, "if (!" + nan + " && !" + real + " && " + m + " > -__builtin_inff()) continue;");
    // The weights, and the monoid's rescale of the old state (1 where it holds the max).
    line(in, "const float " + scale + " = " + m + " < " + max + " ? kiln_exp2f((" + m + " - " +
                 max + ") * " + log2e + ") : 1.0f;");
    line(in, "float " + weights + "[" + block + "];");
    line(in, "float " + sum + " = 0.0f;");
    line(in, "#pragma omp simd reduction(+: " + sum + ")");
    key_loop(in);
    line(in + 1, "const float e = " + scores + "[" + key + "];");
    line(in + 1, "const float w = e < " + max + " ? kiln_exp2f((e - " + max + ") * " + log2e +
                     ") : 1.0f;");
    line(in + 1, weights + "[" + key + "] = w;");
    line(in + 1, sum + " += w;");
    line(in, "}");
    line(in, l + " = " + l + " * " + scale + " + " + sum + ";");
    open_column_loop(plan, {}, in);
    line(in + 1, a + " *= " + scale + ";");
    line(in, "}");
    // The weighted values: kValueGroup keys per pass over the columns, then the rest.
    const std::string valued = "kv" + id;
    line(in, "kiln_i64 " + valued + " = 0;");
    emit_value_groups(plan, valued, count, start, weights, in);
    rest_loop(in, valued);
    line(in + 1, "const kiln_i64 " + r + " = " + start + " + " + key + ";");
    line(in + 1, "const float w = " + weights + "[" + key + "];");
    open_column_loop(plan, plan.column_nodes, in + 1);
    for (ScalarId n : plan.column_nodes) emit_node(n, in + 2);
    line(in + 2, a + " += w * " + value(s.args[1], nullptr) + ";");
    line(in + 1, "}");
    line(in, "}");
    line(in, m + " = " + max + ";");
    if (row_tile_) line(--in, "}");
    line(indent, "}");
  }

  // The online softmax folded in blocks of keys for a tile of kKeyTileRows rows at once, its
  // inner reductions key products (row_state.hpp): the rows are the lanes of every loop over
  // a block's keys (the scores: `omp simd` over the tile's rows; their max, the rescale and
  // the weights: kiln_f32x16 code per vector of rows), the key products are a small matrix
  // product per block (kKeyTileKeys keys by the tile's vectors of rows, an accumulator vector
  // each, by the row operands set out [t][row] once per tile), and the weighted values in
  // vectors across the block's keys (emit_register_values), or kValueRows rows by kValueGroup
  // keys per pass over the columns (emit_tiled_values). A partial tile repeats its last row
  // (in bounds; its copies are not stored); the keys of a ragged block past its end are not
  // read (a product's pass repeats its last key).
  void emit_key_tiled_fold(const RowStatePlan& plan, std::size_t indent) {
    const Scalar& s = nodes_[plan.reduce];
    const std::vector<graph::Loop>& loops = body_.loops();
    const std::string id = std::to_string(plan.reduce);
    const std::string block = std::to_string(plan.key_block);
    const std::string rows = std::to_string(row_tile_);
    const std::string rows_end = expr(loops[row_loop_].extent);
    const std::string row_var = "L_" + loops[row_loop_].var;
    const std::string start = row_tile_start();
    const std::string r = "L_" + s.var;
    const std::string state = row_state_name(plan, 0), sum_state = row_state_name(plan, 1),
                      values = row_state_name(plan, 2);
    const std::string m = state + "[ki]";
    const std::string log2e = literal(std::numbers::log2e, s.dtype);
    const std::string end = "ke" + id, begin = "kb" + id, count = "kn" + id, key = "kj" + id;
    const std::string scores = "ks" + id, weights = "kw" + id, top = "kx" + id, nan = "kq" + id,
                      max = "km" + id, scale = "kc" + id, sum = "kt" + id, sees = "kg" + id;
    // `for` each row of the tile as a lane: the row variable, clamped.
    // Loops over the tile's rows run on vectors of kLanes rows.
    const std::string lanes = "#pragma omp simd simdlen(" + std::to_string(kLanes) + ")";
    auto open_lanes = [&](std::size_t at) {
      line(at, lanes);
      line(at, "for (kiln_i64 ki = 0; ki < " + rows + "; ++ki) {");
      line(at + 1, "const kiln_i64 " + row_var + " = kiln_imin(" + start + " + ki, " + rows_end +
                       " - 1);");
    };
    auto key_loop = [&](std::size_t at) {
      line(at, "for (kiln_i64 " + key + " = 0; " + key + " < " + count + "; ++" + key + ") {");
    };
    // The nodes computed per row, once per tile, into arrays of the tile's rows.
    const std::vector<ScalarId> row_nodes = per_row_nodes();
    if (!row_nodes.empty()) {
      for (ScalarId n : row_nodes) {
        line(indent, std::string(compute_type(nodes_[n].dtype)) + " kl" + std::to_string(n) + "[" +
                         rows + "];");
      }
      open_lanes(indent);
      for (ScalarId n : row_nodes) emit_node(n, indent + 1);  // Const and Param emit nothing
      for (ScalarId n : row_nodes) {
        line(indent + 1, "kl" + std::to_string(n) + "[ki] = v" + std::to_string(n) + ";");
      }
      line(indent, "}");
      for (ScalarId n : row_nodes) renamed_[n] = "kl" + std::to_string(n) + "[ki]";
    }
    // Each key product's row operands, [t][row], once per tile.
    for (const KeyProduct& p : plan.key_products) {
      const Scalar& inner = nodes_[p.reduce];
      const std::string t = "L_" + inner.var;
      const std::string operands = "ka" + std::to_string(p.reduce);
      line(indent, "float " + operands + "[" + std::to_string(p.extent) + "][" + rows +
                       "] __attribute__((aligned(64)));");
      line(indent, "for (kiln_i64 " + t + " = 0; " + t + " < " + std::to_string(p.extent) +
                       "; ++" + t + ") {");
      open_lanes(indent + 1);
      emit_under(p.row_operand, homes_.reduce_scope(p.reduce), indent + 2);
      line(indent + 2, operands + "[" + t + "][ki] = " + value(p.row_operand, nullptr) + ";");
      line(indent + 1, "}");
      line(indent, "}");
    }
    open_key_blocks(indent, s, end, begin, count, block);
    std::size_t in = indent + 1;
    if (plan.key_guard) {
      // The mask first: a block that it hides from every row of the tile, and that finds each
      // row's max finite, changes nothing (row_state.hpp) and is skipped. (Each lane keeps
      // whether its row sees a key: no sum across lanes per key. The lanes are read after
      // every kKeyTileKeys keys, and the first key seen ends the scan: a block mostly seen,
      // as below a causal mask's diagonal, reads its mask for a few keys.)
      const std::string chunk = "kgc" + id, keys = std::to_string(kKeyTileKeys);
      line(in, "int " + sees + "[" + rows + "];");
      line(in, lanes);
      line(in, "for (kiln_i64 ki = 0; ki < " + rows + "; ++ki) " + sees + "[ki] = 0;");
      line(in, "int seen = 0, finite = 1;");
      line(in, "for (kiln_i64 " + chunk + " = 0; " + chunk + " < " + count + " && !seen; " +
                   chunk + " += " + keys + ") {");
      line(in + 1, "for (kiln_i64 " + key + " = " + chunk + "; " + key + " < kiln_imin(" + chunk +
                       " + " + keys + ", " + count + "); ++" + key + ") {");
      open_lanes(in + 2);
      line(in + 3, "const kiln_i64 " + r + " = " + begin + " + " + key + ";");
      for (ScalarId n : plan.guard_nodes) emit_node(n, in + 3);
      line(in + 3, sees + "[ki] |= !(" + guard_hides(plan) + ");");
      line(in + 2, "}");
      line(in + 1, "}");
      line(in + 1, "for (kiln_i64 ki = 0; ki < " + rows + "; ++ki) seen |= " + sees + "[ki];");
      line(in, "}");
      line(in, "for (kiln_i64 ki = 0; ki < " + rows + "; ++ki) finite &= " + m +
                   " > -__builtin_inff();");
      line(in, "if (!seen && finite) continue;");
    }
    for (const KeyProduct& p : plan.key_products) emit_key_product(p, begin, count, in);
    // The scores.
    line(in, "float " + scores + "[" + block + "][" + rows + "] __attribute__((aligned(64)));");
    key_loop(in);
    open_lanes(in + 1);
    line(in + 2, "const kiln_i64 " + r + " = " + begin + " + " + key + ";");
    for (ScalarId n : plan.key_elementwise) emit_node(n, in + 2);
    line(in + 2, scores + "[" + key + "][ki] = " +
                     (plan.key_guard ? "(" + guard_hides(plan) + ") ? -__builtin_inff() : " : "") +
                     value(s.args[0], nullptr) + ";");
    line(in + 1, "}");
    line(in, "}");
    for (const KeyProduct& p : plan.key_products) renamed_.erase(p.reduce);
    // Per vector of the tile's rows: the new max (as emit_blocked_fold: NaN counted, and a
    // row whose scores are all -inf keeps its max; two running maxima, every other key), the
    // monoid's rescale of the state, the weights and their sum, then the state's max and sum.
    const std::string vec = "kz" + id, at = "[" + vec + " * " + std::to_string(kLanes) + "]";
    auto load = [&](const std::string& name, const std::string& from) {
      line(in + 1, "kiln_f32x16 " + name + ";");
      line(in + 1, "__builtin_memcpy(&" + name + ", &" + from + ", sizeof " + name + ");");
    };
    auto store = [&](std::size_t at_indent, const std::string& to, const std::string& from) {
      line(at_indent, "__builtin_memcpy(&" + to + ", &" + from + ", sizeof " + from + ");");
    };
    line(in, "float " + weights + "[" + block + "][" + rows + "] __attribute__((aligned(64)));");
    line(in, "float " + scale + "[" + rows + "] __attribute__((aligned(64)));");
    line(in, "for (kiln_i64 " + vec + " = 0; " + vec + " < " + std::to_string(row_tile_ / kLanes) +
                 "; ++" + vec + ") {");
    load("m", state + at);
    line(in + 1, "const kiln_f32x16 none = kiln_f32x16{} - __builtin_inff(), one = kiln_f32x16{} + 1.0f;");
    line(in + 1, "kiln_f32x16 " + top + " = none, " + top + "_1 = none;");
    line(in + 1, "kiln_i32x16 " + nan + " = {};");
    line(in + 1, "kiln_i64 " + key + " = 0;");
    line(in + 1, "for (; " + key + " + 1 < " + count + "; " + key + " += 2) {");
    line(in + 2, "kiln_f32x16 e, f;");
    line(in + 2, "__builtin_memcpy(&e, &" + scores + "[" + key + "]" + at + ", sizeof e);");
    line(in + 2, "__builtin_memcpy(&f, &" + scores + "[" + key + " + 1]" + at + ", sizeof f);");
    line(in + 2, top + " = e > " + top + " ? e : " + top + ";");
    line(in + 2, top + "_1 = f > " + top + "_1 ? f : " + top + "_1;");
    line(in + 2, nan + " |= (e != e) | (f != f);");
    line(in + 1, "}");
    line(in + 1, "if (" + key + " < " + count + ") {");
    line(in + 2, "kiln_f32x16 e;");
    line(in + 2, "__builtin_memcpy(&e, &" + scores + "[" + key + "]" + at + ", sizeof e);");
    line(in + 2, top + " = e > " + top + " ? e : " + top + ";");
    line(in + 2, nan + " |= e != e;");
    line(in + 1, "}");
    line(in + 1, top + " = " + top + "_1 > " + top + " ? " + top + "_1 : " + top + ";");
    line(in + 1, "kiln_f32x16 " + max + " = m != m ? m + " + top + " : (m > " + top + " ? m : " +
                     top + ");");
    line(in + 1, max + " = " + top + " > none ? " + max + " : m;");
    line(in + 1, max + " = " + nan + " ? kiln_f32x16{} + __builtin_nanf(\"\") : " + max + ";");
    line(in + 1, "const kiln_f32x16 c = m < " + max + " ? kiln_exp2_x16((m - " + max + ") * " +
                     log2e + ") : one;");
    line(in + 1, "kiln_f32x16 " + sum + " = {};");
    line(in + 1, "for (" + key + " = 0; " + key + " < " + count + "; ++" + key + ") {");
    line(in + 2, "kiln_f32x16 e;");
    line(in + 2, "__builtin_memcpy(&e, &" + scores + "[" + key + "]" + at + ", sizeof e);");
    line(in + 2, "const kiln_f32x16 w = e < " + max + " ? kiln_exp2_x16((e - " + max + ") * " +
                     log2e + ") : one;");
    store(in + 2, weights + "[" + key + "]" + at, "w");
    line(in + 2, sum + " += w;");
    line(in + 1, "}");
    load("l", sum_state + at);
    line(in + 1, "l = l * c + " + sum + ";");
    store(in + 1, sum_state + at, "l");
    store(in + 1, state + at, max);
    store(in + 1, scale + at, "c");
    line(in, "}");
    if (plan.columns % kLanes == 0 && plan.columns <= kMaxRegisterValueColumns) {
      emit_register_values(plan, begin, count, weights, scale, in);
    } else {
      line(in, "for (kiln_i64 ki = 0; ki < " + rows + "; ++ki) {");
      open_column_loop(plan, {}, in + 1);
      line(in + 2, values + "[ki][" + column(plan) + "] *= " + scale + "[ki];");
      line(in + 1, "}");
      line(in, "}");
      emit_tiled_values(plan, begin, count, weights, in);
    }
    line(indent, "}");
    for (ScalarId n : row_nodes) renamed_.erase(n);
  }

  // Whether the guard of a blocked fold hides the key (row_state.hpp), as C.
  std::string guard_hides(const RowStatePlan& plan) const {
    const std::string g = value(*plan.key_guard, nullptr);
    return plan.guard_selects ? g + " == 0" : g + " == -__builtin_inff()";
  }

  // The nodes under `root` computed in `scope` (root included), in id order.
  void emit_under(ScalarId root, std::size_t scope, std::size_t indent) {
    const std::set<ScalarId> under = nodes_under(nodes_, root);
    for (ScalarId n : homes_.homed(scope)) {
      if (under.count(n)) emit_node(n, indent);
    }
  }

  // One key product for a block of keys and the tile's rows, into kd<reduce>[key][row]: per
  // pass, kKeyTileKeys keys by the tile's vectors of rows, an accumulator vector each, add row
  // operand vector times key operand along t, in the order of the reduction (no horizontal
  // sums); each key's operand is broadcast once for all the vectors. The keys of a pass past
  // the block's end repeat its last key.
  void emit_key_product(const KeyProduct& p, const std::string& begin, const std::string& count,
                        std::size_t indent) {
    const Scalar& inner = nodes_[p.reduce];
    const std::string n = std::to_string(p.reduce);
    const std::string t = "L_" + inner.var, r = "L_" + nodes_[row_state_->reduce].var;
    const std::string sums = "kd" + n, operands = "ka" + n, pass = "kp" + n;
    const std::size_t keys = static_cast<std::size_t>(kKeyTileKeys);
    const std::size_t vectors = static_cast<std::size_t>(row_tile_ / kLanes);
    auto acc = [&](std::size_t g, std::size_t v) {
      return sums + "_" + std::to_string(g) + "_" + std::to_string(v);
    };
    auto lanes = [&](std::size_t v) { return std::to_string(v * kLanes); };
    line(indent, "float " + sums + "[" + std::to_string(row_state_->key_block) + "][" +
                     std::to_string(row_tile_) + "] __attribute__((aligned(64)));");
    line(indent, "for (kiln_i64 " + pass + " = 0; " + pass + " < " + count + "; " + pass +
                     " += " + std::to_string(keys) + ") {");
    const std::size_t in = indent + 1;
    // The pass from key `first` of the block; `clamp`: its keys past the block's end repeat
    // its last key.
    auto product = [&](std::size_t at, const std::string& first, bool clamp) {
      for (std::size_t g = 0; g < keys; ++g) {
        for (std::size_t v = 0; v < vectors; ++v) line(at, "kiln_f32x16 " + acc(g, v) + " = {};");
      }
      line(at, "for (kiln_i64 " + t + " = 0; " + t + " < " + std::to_string(p.extent) + "; ++" +
                   t + ") {");
      for (std::size_t v = 0; v < vectors; ++v) {
        const std::string q = "q" + std::to_string(v);
        line(at + 1, "kiln_f32x16 " + q + ";");
        line(at + 1, "__builtin_memcpy(&" + q + ", &" + operands + "[" + t + "][" + lanes(v) +
                         "], sizeof " + q + ");");
      }
      for (std::size_t g = 0; g < keys; ++g) {
        const std::string k = std::to_string(g);
        line(at + 1, "{");
        line(at + 2, "const kiln_i64 " + r + " = " + begin + " + " +
                         (clamp ? "kiln_imin(" + first + " + " + k + ", " + count + " - 1)"
                                : first + " + " + k) +
                         ";");
        emit_under(p.key_operand, homes_.reduce_scope(p.reduce), at + 2);
        line(at + 2, "const float kk = " + value(p.key_operand, nullptr) + ";");
        for (std::size_t v = 0; v < vectors; ++v) {
          line(at + 2, acc(g, v) + " += q" + std::to_string(v) + " * kk;");
        }
        line(at + 1, "}");
      }
      line(at, "}");
      for (std::size_t g = 0; g < keys; ++g) {
        const std::string k = std::to_string(g);
        for (std::size_t v = 0; v < vectors; ++v) {
          line(at, "__builtin_memcpy(&" + sums + "[" + first + " + " + k + "][" + lanes(v) +
                       "], &" + acc(g, v) + ", sizeof " + acc(g, v) + ");");
        }
      }
    };
    // A block of at least kKeyTileKeys keys: its last pass starts early enough to end at the
    // block's end (it computes some keys again, the same way); the keys then sit at fixed
    // offsets from one address. A shorter block clamps its keys.
    line(in, "if (" + count + " >= " + std::to_string(keys) + ") {");
    line(in + 1, "const kiln_i64 " + pass + "s = kiln_imin(" + pass + ", " + count + " - " +
                     std::to_string(keys) + ");");
    product(in + 1, pass + "s", false);
    line(in, "} else {");
    product(in + 1, pass, true);
    line(in, "}");
    line(indent, "}");
    renamed_[p.reduce] = sums + "[kj" + std::to_string(row_state_->reduce) + "][ki]";
  }

  // The weighted values of a block for the tile's rows, where the columns are whole vectors:
  // for kValueRows rows by up to 4 vectors of columns, an accumulator vector each held across
  // the block's keys (each a[c] read, rescaled by the row's `scale`, and written once per
  // block, its terms added in key order). The values are read where they are
  // (RowStatePlan::value_load), else copied first into an array of the block's keys by the
  // columns.
  void emit_register_values(const RowStatePlan& plan, const std::string& begin,
                            const std::string& count, const std::string& weights,
                            const std::string& scale, std::size_t indent) {
    const Scalar& s = nodes_[plan.reduce];
    const std::string id = std::to_string(plan.reduce);
    const std::string r = "L_" + s.var, values = row_state_name(plan, 2), c = column(plan);
    const std::string block = "kv" + id, rows = "kh" + id, chunk = "ko" + id, key = "kj" + id;
    const std::string columns = std::to_string(plan.columns);
    const std::int64_t vectors = plan.columns / kLanes;
    std::int64_t per_chunk = std::min<std::int64_t>(4, vectors);
    while (vectors % per_chunk != 0) --per_chunk;
    // A key's values from column `first` on.
    std::function<std::string(const std::string&)> key_values;
    if (plan.value_load) {
      const Scalar& load = nodes_[*plan.value_load];
      const std::string first_column =
          expr(graph::substitute(load.index, {{plan.column_var, Expr(0)}}));
      key_values = [&, first_column](const std::string& first) {
        return "&in" + std::to_string(load.slot) + "[" + first_column + " + " + first + "]";
      };
    } else {
      line(indent, "float " + block + "[" + std::to_string(plan.key_block) + "][" + columns +
                       "] __attribute__((aligned(64)));");
      line(indent, "for (kiln_i64 " + key + " = 0; " + key + " < " + count + "; ++" + key + ") {");
      open_column_loop(plan, plan.column_nodes, indent + 1, kLanes);
      line(indent + 2, "const kiln_i64 " + r + " = " + begin + " + " + key + ";");
      for (ScalarId n : plan.column_nodes) emit_node(n, indent + 2);
      line(indent + 2, block + "[" + key + "][" + c + "] = " + value(s.args[1], nullptr) + ";");
      line(indent + 1, "}");
      line(indent, "}");
      key_values = [&](const std::string& first) {
        return "&" + block + "[" + key + "][" + first + "]";
      };
    }
    line(indent, "for (kiln_i64 " + rows + " = 0; " + rows + " < " + std::to_string(row_tile_) +
                     "; " + rows + " += " + std::to_string(kValueRows) + ") {");
    line(indent + 1, "for (kiln_i64 " + chunk + " = 0; " + chunk + " < " + columns + "; " +
                         chunk + " += " + std::to_string(per_chunk * kLanes) + ") {");
    const std::size_t in = indent + 2;
    auto acc = [&](std::int64_t row, std::int64_t v) {
      return "y" + std::to_string(row) + "_" + std::to_string(v);
    };
    auto at = [&](std::int64_t row, std::int64_t v) {
      return "&" + values + "[" + rows + " + " + std::to_string(row) + "][" + chunk + " + " +
             std::to_string(v * kLanes) + "]";
    };
    for (std::int64_t row = 0; row < kValueRows; ++row) {
      for (std::int64_t v = 0; v < per_chunk; ++v) {
        line(in, "kiln_f32x16 " + acc(row, v) + ";");
        line(in, "__builtin_memcpy(&" + acc(row, v) + ", " + at(row, v) + ", sizeof " +
                     acc(row, v) + ");");
        line(in, acc(row, v) + " *= " + scale + "[" + rows + " + " + std::to_string(row) + "];");
      }
    }
    line(in, "for (kiln_i64 " + key + " = 0; " + key + " < " + count + "; ++" + key + ") {");
    if (plan.value_load) line(in + 1, "const kiln_i64 " + r + " = " + begin + " + " + key + ";");
    for (std::int64_t v = 0; v < per_chunk; ++v) {
      line(in + 1, "kiln_f32x16 x" + std::to_string(v) + ";");
      line(in + 1, "__builtin_memcpy(&x" + std::to_string(v) + ", " +
                       key_values(chunk + " + " + std::to_string(v * kLanes)) + ", sizeof x" +
                       std::to_string(v) + ");");
    }
    for (std::int64_t row = 0; row < kValueRows; ++row) {
      const std::string w = "w" + std::to_string(row);
      line(in + 1, "const float " + w + " = " + weights + "[" + key + "][" + rows + " + " +
                       std::to_string(row) + "];");
      for (std::int64_t v = 0; v < per_chunk; ++v) {
        line(in + 1, acc(row, v) + " += x" + std::to_string(v) + " * " + w + ";");
      }
    }
    line(in, "}");
    for (std::int64_t row = 0; row < kValueRows; ++row) {
      for (std::int64_t v = 0; v < per_chunk; ++v) {
        line(in, "__builtin_memcpy(" + at(row, v) + ", &" + acc(row, v) + ", sizeof " +
                     acc(row, v) + ");");
      }
    }
    line(indent + 1, "}");
    line(indent, "}");
  }

  // The weighted values of a block for the tile's rows: kValueRows rows by kValueGroup keys
  // per pass over the columns (each a[c] read and written once for them, its terms added in
  // key order), then the keys left one by one.
  void emit_tiled_values(const RowStatePlan& plan, const std::string& begin,
                         const std::string& count, const std::string& weights,
                         std::size_t indent) {
    const Scalar& s = nodes_[plan.reduce];
    const std::string id = std::to_string(plan.reduce);
    const std::string r = "L_" + s.var, values = row_state_name(plan, 2);
    const std::string c = column(plan), rows = "kh" + id, done = "ku" + id;
    line(indent, "for (kiln_i64 " + rows + " = 0; " + rows + " < " + std::to_string(row_tile_) +
                     "; " + rows + " += " + std::to_string(kValueRows) + ") {");
    const std::size_t in = indent + 1;
    line(in, "kiln_i64 " + done + " = 0;");
    // A pass over the columns for `keys` keys from `from`.
    auto pass = [&](std::size_t at, const std::string& from, std::int64_t keys) {
      open_column_loop(plan, plan.column_nodes, at, kLanes);
      for (std::int64_t k = 0; k < kValueRows; ++k) {
        line(at + 1, "float y" + std::to_string(k) + " = " + values + "[" + rows + " + " +
                         std::to_string(k) + "][" + c + "];");
      }
      for (std::int64_t g = 0; g < keys; ++g) {
        const std::string at_key = from + " + " + std::to_string(g);
        line(at + 1, "{");
        line(at + 2, "const kiln_i64 " + r + " = " + begin + " + " + at_key + ";");
        for (ScalarId n : plan.column_nodes) emit_node(n, at + 2);
        const std::string v = value(s.args[1], nullptr);
        for (std::int64_t k = 0; k < kValueRows; ++k) {
          line(at + 2, "y" + std::to_string(k) + " += " + weights + "[" + at_key + "][" + rows +
                           " + " + std::to_string(k) + "] * " + v + ";");
        }
        line(at + 1, "}");
      }
      for (std::int64_t k = 0; k < kValueRows; ++k) {
        line(at + 1, values + "[" + rows + " + " + std::to_string(k) + "][" + c + "] = y" +
                         std::to_string(k) + ";");
      }
      line(at, "}");
    };
    const std::string group = std::to_string(kValueGroup);
    line(in, "for (; " + done + " + " + group + " <= " + count + "; " + done + " += " + group +
                 ") {");
    pass(in + 1, done, kValueGroup);
    line(in, "}");
    line(in, "for (; " + done + " < " + count + "; ++" + done + ") {");
    pass(in + 1, done, 1);
    line(in, "}");
    line(indent, "}");
  }

  std::string row_tile_start() const { return "kt_" + body_.loops()[row_loop_].var; }

  // Whether node `id` is computed for each row of a tile (not where it lives): it lives inside
  // the tiled loop, outside c, and depends on the row.
  bool per_row(ScalarId id) const {
    const std::size_t home = homes_.home(id);
    return row_tile_ && home > row_loop_ && home < body_.loops().size() &&
           homes_.deps(id).count(body_.loops()[row_loop_].var);
  }

  // The nodes computed for each row of a tile, in id order.
  std::vector<ScalarId> per_row_nodes() const {
    std::vector<ScalarId> out;
    for (std::size_t scope = row_loop_ + 1; scope < body_.loops().size(); ++scope) {
      for (ScalarId id : homes_.homed(scope)) {
        if (per_row(id)) out.push_back(id);
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // `for` each row of the tile, with the row variable and the nodes computed per row.
  void open_tile_row(std::size_t indent) {
    const std::vector<graph::Loop>& loops = body_.loops();
    const std::string start = row_tile_start();
    line(indent, "for (kiln_i64 ki = 0; ki < " + std::to_string(row_tile_) + " && " + start +
                     " + ki < " + expr(loops[row_loop_].extent) + "; ++ki) {");
    line(indent + 1, "const kiln_i64 L_" + loops[row_loop_].var + " = " + start + " + ki;");
    for (ScalarId id : per_row_nodes()) emit_node(id, indent + 1);
  }

  // The state: shared components are scalars, the others arrays of the columns (with row
  // tiles, one of each per row of the tile), set to the identity.
  void emit_state(const RowStatePlan& plan, std::size_t indent) {
    const Scalar& s = nodes_[plan.reduce];
    const Monoid& m = body_.monoids().at(s.slot);
    const std::string rows = row_tile_ ? "[" + std::to_string(row_tile_) + "]" : "";
    bool arrays = false;
    for (std::size_t k = 0; k < m.identity.size(); ++k) {
      const std::string type = compute_type(s.dtype);
      if (plan.shared_state[k] && !row_tile_) {
        line(indent,
             type + " " + row_state(plan, k) + " = " + literal(m.identity[k], s.dtype) + ";");
        continue;
      }
      const std::string columns = "[" + std::to_string(plan.columns) + "]";
      line(indent, type + " " + row_state_name(plan, k) + rows +
                       (plan.shared_state[k] ? "" : columns) + ";");
      arrays = arrays || !plan.shared_state[k];
    }
    std::size_t in = indent;
    auto reset = [&](std::size_t k, std::size_t at) {
      line(at, row_state(plan, k) + " = " + literal(m.identity[k], s.dtype) + ";");
    };
    if (row_tile_) {
      line(in++, "for (kiln_i64 ki = 0; ki < " + std::to_string(row_tile_) + "; ++ki) {");
      for (std::size_t k = 0; k < m.identity.size(); ++k) {
        if (plan.shared_state[k]) reset(k, in);
      }
    }
    if (arrays) {
      open_column_loop(plan, {}, in);
      for (std::size_t k = 0; k < m.identity.size(); ++k) {
        if (!plan.shared_state[k]) reset(k, in + 1);
      }
      line(in, "}");
    }
    if (row_tile_) line(--in, "}");
  }

  // Whether the inner reductions of a key block (q.k) can run kKeyGroup keys in one loop: each
  // a vectorizable float sum, innermost, with an extent free of the key, and nothing else among
  // the key reductions' nodes (a node shared by the keys' copies would be per key).
  bool groups_key_reductions(const RowStatePlan& plan) const {
    const std::string& key_var = nodes_[plan.reduce].var;
    for (ScalarId n : plan.key_reductions) {
      const Scalar& s = nodes_[n];
      if (s.op != ScalarOp::Reduce) return false;
      const Monoid& m = body_.monoids().at(s.slot);
      if (m.name != "sum" || m.identity.size() != 1 || m.lift.size() != 1) return false;
      if (s.dtype != DType::F32 && s.dtype != DType::F64) return false;
      if (homes_.has_child_scope(homes_.reduce_scope(n))) return false;
      const std::vector<std::string> dims = graph::free_dims(s.extent);
      if (std::find(dims.begin(), dims.end(), key_var) != dims.end()) return false;
    }
    return true;
  }

  // The inner reductions of kKeyGroup keys at a time, in one loop over their variable with an
  // accumulator per key: the keys' chains of adds interleave, and what does not depend on the
  // key (q) is loaded once for all of them. Each key's nodes are in a block of their own, with
  // the key variable set to that key; each accumulator adds in the order of the single-key
  // loop. A group whose keys are all masked is skipped; a group with some masked computes them
  // too (the score loop replaces them by -inf). Leaves `grouped` at the first key not done.
  void emit_key_group_reductions(const RowStatePlan& plan, const std::string& grouped,
                                 const std::string& count, const std::string& start,
                                 const std::string& masked, std::size_t indent) {
    const std::string r = "L_" + nodes_[plan.reduce].var;
    const std::string group = std::to_string(kKeyGroup);
    line(indent, "for (; " + grouped + " + " + group + " <= " + count + "; " + grouped + " += " +
                     group + ") {");
    const std::size_t in = indent + 1;
    if (plan.key_guard) {
      std::string all = masked + "[" + grouped + "]";
      for (std::int64_t g = 1; g < kKeyGroup; ++g) {
        all += " && " + masked + "[" + grouped + " + " + std::to_string(g) + "]";
      }
      line(in, "if (" + all + ") {");
      for (ScalarId n : plan.key_arrays) {
        for (std::int64_t g = 0; g < kKeyGroup; ++g) {
          line(in + 1, "kd" + std::to_string(n) + "[" + grouped + " + " + std::to_string(g) +
                           "] = " + literal(0, nodes_[n].dtype) + ";");
        }
      }
      line(in + 1, "continue;");
      line(in, "}");
    }
    for (ScalarId n : plan.key_reductions) {
      const Scalar& s = nodes_[n];
      const Monoid& m = body_.monoids().at(s.slot);
      const char* type = compute_type(s.dtype);
      const std::string acc = "a" + std::to_string(n) + "_g";
      std::string accs;
      for (std::int64_t g = 0; g < kKeyGroup; ++g) {
        line(in, std::string(type) + " " + acc + std::to_string(g) + " = " +
                     literal(m.identity[0], s.dtype) + ";");
        accs += (g ? ", " : "") + acc + std::to_string(g);
      }
      line(in, "#pragma omp simd reduction(+: " + accs + ")");
      const std::string var = "L_" + s.var;
      line(in, "for (kiln_i64 " + var + " = 0; " + var + " < " + expr(s.extent) + "; ++" + var +
                   ") {");
      for (std::int64_t g = 0; g < kKeyGroup; ++g) {
        line(in + 1, "{");
        line(in + 2, "const kiln_i64 " + r + " = " + start + " + " + grouped + " + " +
                         std::to_string(g) + ";");
        emit_nodes(homes_.reduce_scope(n), in + 2);
        std::map<std::size_t, std::string> element;
        for (std::size_t e = 0; e < s.args.size(); ++e) element[e] = value(s.args[e], nullptr);
        std::map<std::size_t, std::string> pair{{0, acc + std::to_string(g)}};
        pair[1] = value(m.lift[0], &element);
        line(in + 2, acc + std::to_string(g) + " = " + value(m.combine[0], &pair) + ";");
        line(in + 1, "}");
      }
      line(in, "}");
      for (std::int64_t g = 0; g < kKeyGroup; ++g) {
        std::map<std::size_t, std::string> state{{0, acc + std::to_string(g)}};
        line(in, std::string("const ") + type + " v" + std::to_string(n) + "_g" +
                     std::to_string(g) + " = " + value(m.finalize, &state) + ";");
      }
    }
    for (ScalarId n : plan.key_arrays) {
      for (std::int64_t g = 0; g < kKeyGroup; ++g) {
        line(in, "kd" + std::to_string(n) + "[" + grouped + " + " + std::to_string(g) + "] = v" +
                     std::to_string(n) + "_g" + std::to_string(g) + ";");
      }
    }
    line(indent, "}");
  }

  // The weighted values of kValueGroup keys per pass over the columns: a[c] is read and written
  // once for the group, and adds their terms in key order (as key by key). Leaves `valued` at
  // the first key not done.
  void emit_value_groups(const RowStatePlan& plan, const std::string& valued,
                         const std::string& count, const std::string& start,
                         const std::string& weights, std::size_t indent) {
    const Scalar& s = nodes_[plan.reduce];
    const std::string r = "L_" + s.var;
    const std::string group = std::to_string(kValueGroup);
    const std::string sum = "ky" + std::to_string(plan.reduce);
    line(indent, "for (; " + valued + " + " + group + " <= " + count + "; " + valued + " += " +
                     group + ") {");
    open_column_loop(plan, plan.column_nodes, indent + 1);
    line(indent + 2, std::string(compute_type(s.dtype)) + " " + sum + " = " + row_state(plan, 2) +
                         ";");
    for (std::int64_t g = 0; g < kValueGroup; ++g) {
      const std::string at = valued + " + " + std::to_string(g);
      line(indent + 2, "{");
      line(indent + 3, "const kiln_i64 " + r + " = " + start + " + " + at + ";");
      for (ScalarId n : plan.column_nodes) emit_node(n, indent + 3);
      line(indent + 3, sum + " += " + weights + "[" + at + "] * " + value(s.args[1], nullptr) +
                           ";");
      line(indent + 2, "}");
    }
    line(indent + 2, row_state(plan, 2) + " = " + sum + ";");
    line(indent + 1, "}");
    line(indent, "}");
  }

  // One step of the row-state fold: the lifts and new state components of the shared parts
  // (`shared`, before the column loop, with the shared parts of every combine) or of the others
  // (inside it, stored into the arrays). `pair` holds the combine's arguments as named so far.
  void emit_row_fold_step(const RowStatePlan& plan, bool shared,
                          std::map<std::size_t, std::string>& pair, std::size_t indent) {
    const Scalar& s = nodes_[plan.reduce];
    const Monoid& m = body_.monoids().at(s.slot);
    const char* type = compute_type(s.dtype);
    const std::size_t states = m.identity.size();
    std::map<std::size_t, std::string> element;
    for (std::size_t e = 0; e < s.args.size(); ++e) {
      if (plan.shared_element[e] || !shared) element[e] = value(s.args[e], nullptr);
    }
    for (std::size_t k = 0; k < states; ++k) {
      if (plan.shared_state[k] || !shared) pair[k] = row_state(plan, k);  // the old values
    }
    // Lifts read elements, not the combine's params: no shared combine part stands for them.
    std::map<ScalarId, std::string> combine_parts;
    std::swap(combine_parts, shared_combine_);
    for (std::size_t k = 0; k < m.lift.size(); ++k) {
      if (plan.shared_lift[k] != shared) continue;
      const std::string lifted = "l" + std::to_string(plan.reduce) + "_" + std::to_string(k);
      line(indent, std::string("const ") + type + " " + lifted + " = " +
                       value(m.lift[k], &element) + ";");
      pair[states + k] = lifted;
    }
    std::swap(combine_parts, shared_combine_);
    if (shared) {
      for (ScalarId id : plan.shared_combine) {
        const std::string name = "h" + std::to_string(plan.reduce) + "_" + std::to_string(id);
        line(indent, std::string("const ") + compute_type(nodes_[id].dtype) + " " + name + " = " +
                         compute(id, &pair) + ";");
        shared_combine_[id] = name;
      }
    }
    for (std::size_t k = 0; k < states; ++k) {
      if (plan.shared_state[k] != shared) continue;
      line(indent, std::string("const ") + type + " " + folded(plan, k) + " = " +
                       value(m.combine[k], &pair) + ";");
    }
    if (shared) return;  // assigned after the column loop, which reads the old values
    for (std::size_t k = 0; k < states; ++k) {
      if (!plan.shared_state[k]) line(indent, row_state(plan, k) + " = " + folded(plan, k) + ";");
    }
  }

  // `for c < E {`, vectorized unless `nodes` (computed inside) hold a reduction (`lanes`: so
  // many lanes, else the compiler's choice).
  void open_column_loop(const RowStatePlan& plan, const std::vector<ScalarId>& nodes,
                        std::size_t indent, std::int64_t lanes = 0) {
    const bool reduce = std::any_of(nodes.begin(), nodes.end(), [&](ScalarId id) {
      return nodes_[id].op == ScalarOp::Reduce && id != plan.reduce;
    });
    if (!reduce) {
      line(indent, "#pragma omp simd" +
                       (lanes ? " simdlen(" + std::to_string(lanes) + ")" : std::string()));
    }
    const std::string c = column(plan);
    line(indent, "for (kiln_i64 " + c + " = 0; " + c + " < " + std::to_string(plan.columns) +
                     "; ++" + c + ") {");
  }

  static std::string column(const RowStatePlan& plan) { return "L_" + plan.column_var; }
  static std::string row_state_name(const RowStatePlan& plan, std::size_t k) {
    return "a" + std::to_string(plan.reduce) + "_" + std::to_string(k);
  }
  // State component k as read and written in the column loop.
  std::string row_state(const RowStatePlan& plan, std::size_t k) const {
    return row_state_name(plan, k) + (row_tile_ ? "[ki]" : "") +
           (plan.shared_state[k] ? "" : "[" + column(plan) + "]");
  }
  // Its new value in one fold step.
  static std::string folded(const RowStatePlan& plan, std::size_t k) {
    return "n" + std::to_string(plan.reduce) + "_" + std::to_string(k);
  }

  // The iterations of output loops scope .. scope+run-1, as C.
  std::string trips_text(std::size_t scope, std::size_t run) const {
    Expr trips = 1;
    for (std::size_t k = 0; k < run; ++k) trips = trips * body_.loops()[scope + k].extent;
    return expr(graph::simplify(trips));
  }

  // An estimate of the scalar operations under output loop `scope`, as C: one store per
  // iteration of it and the loops inside, plus every reduction's trips. Extents that depend on
  // a loop variable (a causal mask's row length) count at the variable's largest value.
  std::string work_text(std::size_t scope) const {
    std::map<std::string, Expr> largest;  // loop variable -> its extent
    for (const graph::Loop& loop : body_.loops()) largest[loop.var] = loop.extent;
    for (const Scalar& n : nodes_) {
      if (n.op == ScalarOp::Reduce) largest[n.var] = n.extent;
    }
    auto bounded = [&](Expr e) {
      for (int round = 0; round < 4; ++round) {  // extents may name outer loop variables
        if (!homes_.mentions_loop_var(e)) return e;
        try {
          e = graph::substitute(e, largest);
        } catch (const support::UserError&) {
          return Expr(1);  // a replacement that may be negative: count one trip
        }
      }
      return Expr(1);  // still unbounded: count one trip
    };
    // Iterations of output loops scope .. end-1, each extent bounded.
    auto iterations = [&](std::size_t end) {
      Expr n = 1;
      for (std::size_t k = scope; k < end; ++k) n = n * bounded(body_.loops()[k].extent);
      return n;
    };
    // `per_run` times the runs of node `id`: once per iteration of the loops around it, its
    // enclosing reductions and the output loops down to the scope it lives in (a softmax's
    // row sum: once a row).
    auto runs = [&](std::size_t id, Expr per_run) {
      const std::vector<NodeHomes::Scope>& scopes = homes_.scopes();
      std::size_t sc = homes_.home(static_cast<ScalarId>(id));
      for (; scopes[sc].reduce; sc = scopes[sc].parent) {
        per_run = per_run * bounded(nodes_[*scopes[sc].reduce].extent);
      }
      return per_run * iterations(std::max(sc, scope));
    };
    Expr work = iterations(body_.loops().size());  // the stores
    for (std::size_t id = 0; id < nodes_.size(); ++id) {
      if (!homes_.live(static_cast<ScalarId>(id))) continue;
      const ScalarOp op = nodes_[id].op;
      if (op == ScalarOp::Reduce) work = work + runs(id, bounded(nodes_[id].extent));
      // The prelude's sin, exp2 and log2 are polynomials of a dozen operations or more.
      if (op == ScalarOp::Sin || op == ScalarOp::Exp2 || op == ScalarOp::Log2) {
        work = work + runs(id, Expr(kMathFunctionWork));
      }
    }
    return expr(graph::simplify(work));
  }

  const Body& body_;
  const std::vector<Scalar>& nodes_;
  NodeHomes homes_;
  std::optional<TiledProduct> tiled_product_;
  std::optional<RowStatePlan> row_state_;
  std::string symbol_suffix_;
  // Rows done together (kRowTile, kKeyTileRows), or 0, and the output loop they are
  // iterations of (row_state.hpp).
  std::int64_t row_tile_ = 0;
  std::size_t row_loop_ = 0;
  // Names of nodes held elsewhere than `v<id>` (a row-state reduction's row inputs, in arrays)
  // and of the shared parts of its combine expressions (computed once per r).
  std::map<ScalarId, std::string> renamed_;
  std::map<ScalarId, std::string> shared_combine_;
  bool in_parallel_ = false;
  // The range of the innermost loop's variable in the part being emitted (emit_split_loop).
  graph::DimRanges segment_;
  std::ostringstream code_;
};

}  // namespace

KernelSource render_kernel(const Body& body, const RenderOptions& options) {
  return Renderer(body, options).render();
}

}  // namespace kiln::targets::cpu
