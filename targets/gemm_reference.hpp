// The meaning of the "gemm" LibraryCall (runtime/target.hpp) as plain loops over doubles; the
// reference target runs it, and tests compare library implementations with it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graph/expr.hpp"
#include "graph/quantized.hpp"
#include "runtime/target.hpp"

namespace kiln::targets {

// Reads A and B (as doubles) and writes C (as doubles), sized by the call's params at `dims`.
// A call with an epilogue (bias, accumulate) needs the overload below.
void gemm_reference(const runtime::LibraryCall& call, const graph::DimValues& dims,
                    const std::vector<double>& a, const std::vector<double>& b,
                    std::vector<double>& c);
// Any gemm call: `inputs` are the call's input buffers in order (A, B, then the bias and the
// accumulated C0 where the call has them).
void gemm_reference(const runtime::LibraryCall& call, const graph::DimValues& dims,
                    const std::vector<std::vector<double>>& inputs, std::vector<double>& c);

// The activation a gemm call's epilogue applies last ("activation" param).
enum class GemmActivation { None = 0, Relu = 1, Gelu = 2 };
// GELU as cuBLASLt computes it (the tanh approximation).
double gelu_tanh(double x);

// "gemm-<format>" (a QGemm, rules/hlir.egg): C[b] = A[b] x W^T in f32 for b < batch, where W
// [n, k] is one quantized matrix (graph/quantized.hpp) held by two buffers, quants and scales,
// read whole rows from row 0 for every batch entry. Params as "gemm" (A's lda, offset_a,
// stride_a, trans_a; ldc, stride_c); B's are implied. Buffers: A, quants, scales, then C.
std::string quantized_gemm_op(graph::QuantFormat f);
// The format of a "gemm-<format>" op; nullopt for any other op.
std::optional<graph::QuantFormat> quantized_gemm_format(const std::string& op);
// Reads A, the quants (bytes as doubles) and the scales, writes C, as gemm_reference does.
void quantized_gemm_reference(const runtime::LibraryCall& call, const graph::DimValues& dims,
                              const std::vector<double>& a, const std::vector<double>& quants,
                              const std::vector<double>& scales, std::vector<double>& c);

// The params of a gemm call (or a quantized one's, with B's implied) evaluated at `dims`.
struct GemmShape {
  long long batch, m, n, k, lda, ldb, ldc, stride_a, stride_b, stride_c, offset_a, offset_b;
  bool trans_a, trans_b;
  // The epilogue: C = act(A x B + C0 + bias), C0 an input laid out like C (accumulate, i.e.
  // BLAS's beta = 1), bias n elements added to every row.
  bool bias = false, accumulate = false;
  GemmActivation activation = GemmActivation::None;
  bool plain() const { return !bias && !accumulate && activation == GemmActivation::None; }
  // The input buffers of the call: A, B, then the bias and C0 where present.
  std::size_t inputs() const { return 2 + (bias ? 1 : 0) + (accumulate ? 1 : 0); }
  // Elements each operand spans (the buffer size a call needs).
  long long a_elements() const;
  long long b_elements() const;
  long long c_elements() const;
  // A quantized call's quants and scales buffers: n rows of k / 32 blocks.
  long long quants_elements(graph::QuantFormat f) const;
  long long scales_elements(graph::QuantFormat f) const;
};
GemmShape gemm_shape(const runtime::LibraryCall& call, const graph::DimValues& dims);

}  // namespace kiln::targets
