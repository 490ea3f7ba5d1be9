// The gemm LibraryCall as loops; see gemm_reference.hpp.
#include "targets/gemm_reference.hpp"

#include <algorithm>
#include <cmath>

#include "support/diagnostic.hpp"

namespace kiln::targets {

namespace {

long long param(const runtime::LibraryCall& call, const char* name, const graph::DimValues& dims,
                long long fallback) {
  auto it = call.params.find(name);
  if (it == call.params.end()) return fallback;
  return graph::evaluate(it->second, dims);
}

}  // namespace

GemmShape gemm_shape(const runtime::LibraryCall& call, const graph::DimValues& dims) {
  const std::optional<graph::QuantFormat> quantized = quantized_gemm_format(call.op);
  KILN_ASSERT(call.op == "gemm" || quantized, "gemm_shape of a " + call.op + " call");
  GemmShape s{};
  s.batch = param(call, "batch", dims, 1);
  s.m = param(call, "m", dims, -1);
  s.n = param(call, "n", dims, -1);
  s.k = param(call, "k", dims, -1);
  if (s.m < 0 || s.n < 0 || s.k < 0) throw support::UserError("gemm: m, n and k are required");
  s.trans_a = param(call, "trans_a", dims, 0) != 0;
  s.trans_b = param(call, "trans_b", dims, 0) != 0;
  s.lda = param(call, "lda", dims, s.trans_a ? s.m : s.k);
  s.ldb = param(call, "ldb", dims, s.trans_b ? s.k : s.n);
  s.ldc = param(call, "ldc", dims, s.n);
  s.stride_a = param(call, "stride_a", dims, s.m * s.k);
  s.stride_b = param(call, "stride_b", dims, s.k * s.n);
  s.stride_c = param(call, "stride_c", dims, s.m * s.n);
  s.offset_a = param(call, "offset_a", dims, 0);
  s.offset_b = param(call, "offset_b", dims, 0);
  s.bias = param(call, "bias", dims, 0) != 0;
  s.accumulate = param(call, "accumulate", dims, 0) != 0;
  const long long act = param(call, "activation", dims, 0);
  if (act < 0 || act > 2) throw support::UserError("gemm: unknown activation " + std::to_string(act));
  s.activation = static_cast<GemmActivation>(act);
  if (quantized) {  // W [n, k]: B = W^T, whole rows, one matrix
    if (s.k % graph::kQuantBlock != 0) {
      throw support::UserError(call.op + ": k = " + std::to_string(s.k) +
                               " is not whole blocks of " + std::to_string(graph::kQuantBlock));
    }
    s.trans_b = true;
    s.ldb = s.k;
    s.stride_b = 0;
    s.offset_b = 0;
  }
  return s;
}

long long GemmShape::a_elements() const {
  // The last row needs only its own columns, not a whole leading dimension.
  const long long rows = trans_a ? k : m, cols = trans_a ? m : k;
  return batch == 0 || rows == 0 ? 0 : offset_a + (batch - 1) * stride_a + (rows - 1) * lda + cols;
}
long long GemmShape::b_elements() const {
  const long long rows = trans_b ? n : k, cols = trans_b ? k : n;
  return batch == 0 || rows == 0 ? 0 : offset_b + (batch - 1) * stride_b + (rows - 1) * ldb + cols;
}
long long GemmShape::c_elements() const {
  return batch == 0 || m == 0 ? 0 : (batch - 1) * stride_c + (m - 1) * ldc + n;
}

double gelu_tanh(double x) {
  const double k = 0.7978845608028654;  // sqrt(2 / pi)
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

long long GemmShape::quants_elements(graph::QuantFormat f) const {
  return n * (k / graph::kQuantBlock) * graph::quant_bytes(f);
}
long long GemmShape::scales_elements(graph::QuantFormat f) const {
  return n * (k / graph::kQuantBlock) * graph::scales_per_block(f);
}

std::string quantized_gemm_op(graph::QuantFormat f) {
  return "gemm-" + std::string(graph::quant_format_name(f));
}

std::optional<graph::QuantFormat> quantized_gemm_format(const std::string& op) {
  if (op.rfind("gemm-", 0) != 0) return std::nullopt;
  return graph::parse_quant_format(std::string_view(op).substr(5));
}

void quantized_gemm_reference(const runtime::LibraryCall& call, const graph::DimValues& dims,
                              const std::vector<double>& a, const std::vector<double>& quants,
                              const std::vector<double>& scales, std::vector<double>& c) {
  const std::optional<graph::QuantFormat> f = quantized_gemm_format(call.op);
  KILN_ASSERT(f.has_value(), "quantized_gemm_reference of a " + call.op + " call");
  const GemmShape s = gemm_shape(call, dims);
  KILN_ASSERT(static_cast<long long>(quants.size()) >= s.quants_elements(*f) &&
                  static_cast<long long>(scales.size()) >= s.scales_elements(*f),
              "quantized gemm: weight buffers too small");
  const std::vector<double> w = graph::dequantize_values(
      *f, {quants.begin(), quants.begin() + s.quants_elements(*f)},
      {scales.begin(), scales.begin() + s.scales_elements(*f)}, s.n, s.k);
  runtime::LibraryCall plain = call;
  plain.op = "gemm";
  plain.params["trans_b"] = graph::Expr(1);
  plain.params["ldb"] = graph::Expr(s.k);
  plain.params["stride_b"] = graph::Expr(0);
  plain.params["offset_b"] = graph::Expr(0);
  gemm_reference(plain, dims, a, w, c);
}

void gemm_reference(const runtime::LibraryCall& call, const graph::DimValues& dims,
                    const std::vector<double>& a, const std::vector<double>& b,
                    std::vector<double>& c) {
  gemm_reference(call, dims, {a, b}, c);
}

void gemm_reference(const runtime::LibraryCall& call, const graph::DimValues& dims,
                    const std::vector<std::vector<double>>& inputs, std::vector<double>& c) {
  const GemmShape s = gemm_shape(call, dims);
  KILN_ASSERT(inputs.size() == s.inputs(), "gemm: wrong number of input buffers");
  const std::vector<double>& a = inputs[0];
  const std::vector<double>& b = inputs[1];
  const std::vector<double>* bias = s.bias ? &inputs[2] : nullptr;
  const std::vector<double>* c0 = s.accumulate ? &inputs.back() : nullptr;
  KILN_ASSERT((!bias || static_cast<long long>(bias->size()) >= s.n) &&
                  (!c0 || static_cast<long long>(c0->size()) >= s.c_elements()),
              "gemm: bias or C0 buffer too small");
  KILN_ASSERT(static_cast<long long>(a.size()) >= s.a_elements() &&
                  static_cast<long long>(b.size()) >= s.b_elements() &&
                  static_cast<long long>(c.size()) >= s.c_elements(),
              "gemm: operand buffers too small");
  for (long long p = 0; p < s.batch; ++p) {
    for (long long i = 0; i < s.m; ++i) {
      for (long long j = 0; j < s.n; ++j) {
        double sum = 0.0;
        for (long long q = 0; q < s.k; ++q) {
          double x = a[static_cast<std::size_t>(s.offset_a + p * s.stride_a +
                                                (s.trans_a ? q * s.lda + i : i * s.lda + q))];
          double y = b[static_cast<std::size_t>(s.offset_b + p * s.stride_b +
                                                (s.trans_b ? j * s.ldb + q : q * s.ldb + j))];
          sum += x * y;
        }
        const auto at = static_cast<std::size_t>(p * s.stride_c + i * s.ldc + j);
        if (c0) sum += (*c0)[at];
        if (bias) sum += (*bias)[static_cast<std::size_t>(j)];
        if (s.activation == GemmActivation::Relu) sum = std::max(sum, 0.0);
        if (s.activation == GemmActivation::Gelu) sum = gelu_tanh(sum);
        c[at] = sum;
      }
    }
  }
}

}  // namespace kiln::targets
