// The gemm LibraryCall as loops; see gemm_reference.hpp.
#include "targets/gemm_reference.hpp"

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
  KILN_ASSERT(call.op == "gemm", "gemm_shape of a " + call.op + " call");
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

void gemm_reference(const runtime::LibraryCall& call, const graph::DimValues& dims,
                    const std::vector<double>& a, const std::vector<double>& b,
                    std::vector<double>& c) {
  const GemmShape s = gemm_shape(call, dims);
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
        c[static_cast<std::size_t>(p * s.stride_c + i * s.ldc + j)] = sum;
      }
    }
  }
}

}  // namespace kiln::targets
