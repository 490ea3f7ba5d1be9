// Products with quantized weights on the CPU; see quantized_gemm.hpp.
#include "targets/cpu/quantized_gemm.hpp"

#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "graph/dtype.hpp"
#include "graph/quantized.hpp"
#include "support/diagnostic.hpp"
#include "targets/cpu/gemm.hpp"
#include "targets/cpu/threads.hpp"
#include "targets/cpu/vector_clones.hpp"
#include "targets/gemm_reference.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace kiln::targets::cpu {

namespace {

using graph::QuantFormat;

// Sixteen lanes: one AVX-512 register, two AVX ones; GCC lowers it to what the clone targets.
typedef float F16 __attribute__((vector_size(64)));
typedef std::int32_t I16 __attribute__((vector_size(64)));
typedef std::uint8_t U8x16 __attribute__((vector_size(16)));

KILN_INLINE F16 load16(const float* p) {
  F16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
KILN_INLINE float sum16(F16 v) {  // a tree: four adds deep, not sixteen
  float s[8];
  for (int i = 0; i < 8; ++i) s[i] = v[i] + v[i + 8];
  return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}
KILN_INLINE float half_at(const std::uint16_t* p) {
#ifdef __FLT16_MAX__  // the compiler has _Float16 (GCC 12 and clang 15 on x86-64; not clang 14)
  _Float16 h;
  std::memcpy(&h, p, 2);
  return static_cast<float>(h);
#else
  return static_cast<float>(graph::half_value(*p));
#endif
}

// n f16 scales as f32 (a row's, converted once so that each block's scale is one broadcast
// operand of its multiply-add). GCC 12 converts f16 vectors element by element, so the
// instructions are asked for by name, on the machines that have them.
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2,f16c"))) void halves_f16c(const std::uint16_t* h, float* out,
                                                      long long n) {
  long long i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(
                                  reinterpret_cast<const __m128i*>(h + i))));
  }
  for (; i < n; ++i) out[i] = _cvtsh_ss(h[i]);
}
#endif
void halves_portable(const std::uint16_t* h, float* out, long long n) {
  for (long long i = 0; i < n; ++i) out[i] = static_cast<float>(graph::half_value(h[i]));
}
using HalvesFn = void (*)(const std::uint16_t*, float*, long long);
HalvesFn pick_halves() {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  unsigned eax, ebx, ecx, edx;  // F16C from CPUID: clang 14 has no "f16c" for __builtin_cpu_supports
  bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
  if (__builtin_cpu_supports("avx2") && f16c) return halves_f16c;
#endif
  return halves_portable;
}
const HalvesFn halves = pick_halves();

// The 32 elements of one block as two vectors of f32 quants (before the scale): elements
// 0..15 and 16..31.
template <QuantFormat F>
KILN_INLINE void block_quants(const std::uint8_t* q, F16& lo, F16& hi) {
  if constexpr (F == QuantFormat::Q8_0) {
    // int8 q = (q ^ 0x80) - 128 with the xor on the bytes: GCC 12 widens a byte vector that an
    // operation has put in a register in a few instructions, but a signed one, or one straight
    // from memory, element by element.
    U8x16 a, b;
    std::memcpy(&a, q, 16);
    std::memcpy(&b, q + 16, 16);
    lo = __builtin_convertvector(__builtin_convertvector(a ^ 0x80, I16) - 128, F16);
    hi = __builtin_convertvector(__builtin_convertvector(b ^ 0x80, I16) - 128, F16);
  } else {
    U8x16 v;
    std::memcpy(&v, q, 16);
    I16 l = __builtin_convertvector(v & 15, I16);
    I16 h = __builtin_convertvector(v >> 4, I16);
    if constexpr (F == QuantFormat::Q4_0) {
      l -= 8;
      h -= 8;
    }
    lo = __builtin_convertvector(l, F16);
    hi = __builtin_convertvector(h, F16);
  }
}

// How far ahead of the row being read its successors' blocks are prefetched (scales: an
// eighth of it, as they are about an eighth of the bytes).
constexpr long long kPrefetchBytes = 2048;

constexpr long long kQuantBytes(QuantFormat f) { return f == QuantFormat::Q8_0 ? 32 : 16; }
constexpr long long kScales(QuantFormat f) { return f == QuantFormat::Q4_1 ? 2 : 1; }

// y[o * incy] = W[o, :] . x for o in [first, last); `pair_sums` holds x[32b + j] +
// x[32b + 16 + j] for block b, j < 16 (for Q4_1's offsets m), `row_scales` room for one row's
// scales as f32. Two blocks a pass, so two accumulator chains overlap.
template <QuantFormat F>
KILN_INLINE void dot_rows(const float* x, const float* pair_sums, const std::uint8_t* quants,
                          const std::uint16_t* scales, long long blocks, float* y, long long incy,
                          long long first, long long last, float* row_scales) {
  constexpr long long qb = kQuantBytes(F), sb = kScales(F);
  for (long long o = first; o < last; ++o) {
    const std::uint8_t* q = quants + o * blocks * qb;
    // The blocks a few rows ahead, asked for now: the loop below is too busy converting for
    // the hardware's prefetcher alone to keep the memory reads in flight.
    for (long long line = 0; line < blocks * qb; line += 64) {
      __builtin_prefetch(q + kPrefetchBytes + line);
    }
    for (long long line = 0; line < blocks * sb * 2; line += 64) {
      __builtin_prefetch(scales + o * blocks * sb + kPrefetchBytes / 8 + line / 2);
    }
    halves(scales + o * blocks * sb, row_scales, blocks * sb);
    const float* s = row_scales;
    // Q4_1's offsets m go to their own accumulators, as m times the block's two halves of x
    // added (`pair_sums`), so no scalar chain runs beside the vectors.
    F16 acc0 = {}, acc1 = {}, off0 = {}, off1 = {};
    long long b = 0;
    for (; b + 2 <= blocks; b += 2) {
      F16 l0, h0, l1, h1;
      block_quants<F>(q + b * qb, l0, h0);
      block_quants<F>(q + (b + 1) * qb, l1, h1);
      const float* xb = x + b * 32;
      const F16 t0 = l0 * load16(xb) + h0 * load16(xb + 16);
      const F16 t1 = l1 * load16(xb + 32) + h1 * load16(xb + 48);
      acc0 += t0 * s[b * sb];
      acc1 += t1 * s[(b + 1) * sb];
      if constexpr (F == QuantFormat::Q4_1) {
        off0 += load16(pair_sums + b * 16) * s[b * 2 + 1];
        off1 += load16(pair_sums + b * 16 + 16) * s[b * 2 + 3];
      }
    }
    for (; b < blocks; ++b) {
      F16 l0, h0;
      block_quants<F>(q + b * qb, l0, h0);
      const float* xb = x + b * 32;
      acc0 += (l0 * load16(xb) + h0 * load16(xb + 16)) * s[b * sb];
      if constexpr (F == QuantFormat::Q4_1) off0 += load16(pair_sums + b * 16) * s[b * 2 + 1];
    }
    y[o * incy] = sum16((acc0 + acc1) + (off0 + off1));
  }
}

// Rows [first, last) of W as f32, row-major with k = blocks * 32 columns, into `out`.
template <QuantFormat F>
KILN_INLINE void dequantize_rows(const std::uint8_t* quants, const std::uint16_t* scales, long long blocks,
                     long long first, long long last, float* out) {
  constexpr long long qb = kQuantBytes(F), sb = kScales(F);
  for (long long o = first; o < last; ++o) {
    const std::uint8_t* q = quants + o * blocks * qb;
    const std::uint16_t* s = scales + o * blocks * sb;
    float* row = out + (o - first) * blocks * 32;
    for (long long b = 0; b < blocks; ++b) {
      F16 lo, hi;
      block_quants<F>(q + b * qb, lo, hi);
      const float d = half_at(s + b * sb);
      F16 vlo = lo * d, vhi = hi * d;
      if constexpr (F == QuantFormat::Q4_1) {
        const float m = half_at(s + b * sb + 1);
        vlo += m;
        vhi += m;
      }
      std::memcpy(row + b * 32, &vlo, sizeof vlo);
      std::memcpy(row + b * 32 + 16, &vhi, sizeof vhi);
    }
  }
}

// The format's entry points, one clone set each (target_clones does not mix with templates).
KILN_VECTOR_CLONES void dot_rows_q8_0(const float* x, const float* bs, const std::uint8_t* q,
                                      const std::uint16_t* s, long long blocks, float* y,
                                      long long incy, long long first, long long last,
                                      float* row_scales) {
  dot_rows<QuantFormat::Q8_0>(x, bs, q, s, blocks, y, incy, first, last, row_scales);
}
KILN_VECTOR_CLONES void dot_rows_q4_0(const float* x, const float* bs, const std::uint8_t* q,
                                      const std::uint16_t* s, long long blocks, float* y,
                                      long long incy, long long first, long long last,
                                      float* row_scales) {
  dot_rows<QuantFormat::Q4_0>(x, bs, q, s, blocks, y, incy, first, last, row_scales);
}
KILN_VECTOR_CLONES void dot_rows_q4_1(const float* x, const float* bs, const std::uint8_t* q,
                                      const std::uint16_t* s, long long blocks, float* y,
                                      long long incy, long long first, long long last,
                                      float* row_scales) {
  dot_rows<QuantFormat::Q4_1>(x, bs, q, s, blocks, y, incy, first, last, row_scales);
}
KILN_VECTOR_CLONES void dequantize_rows_q8_0(const std::uint8_t* q, const std::uint16_t* s,
                                             long long blocks, long long first, long long last,
                                             float* out) {
  dequantize_rows<QuantFormat::Q8_0>(q, s, blocks, first, last, out);
}
KILN_VECTOR_CLONES void dequantize_rows_q4_0(const std::uint8_t* q, const std::uint16_t* s,
                                             long long blocks, long long first, long long last,
                                             float* out) {
  dequantize_rows<QuantFormat::Q4_0>(q, s, blocks, first, last, out);
}
KILN_VECTOR_CLONES void dequantize_rows_q4_1(const std::uint8_t* q, const std::uint16_t* s,
                                             long long blocks, long long first, long long last,
                                             float* out) {
  dequantize_rows<QuantFormat::Q4_1>(q, s, blocks, first, last, out);
}

// One product's operands and how its output columns (W's rows) are split.
struct Product {
  QuantFormat format;
  GemmShape s;
  const float* a;
  const std::uint8_t* quants;
  const std::uint16_t* scales;
  float* c;
  long long blocks;
  long long chunk;  // output columns a part
  long long parts;

  // Output columns [first, last) of batch entry p.
  void run(long long p, long long first, long long last) const {
    if (first >= last) return;
    const float* ap = a + s.offset_a + p * s.stride_a;
    float* cp = c + p * s.stride_c;
    if (s.m <= 2) {
      thread_local std::vector<float> x, sums, row_scales;
      x.resize(static_cast<std::size_t>(s.k));
      sums.resize(static_cast<std::size_t>(blocks * 16));
      row_scales.resize(static_cast<std::size_t>(2 * blocks));
      for (long long i = 0; i < s.m; ++i) {
        for (long long j = 0; j < s.k; ++j) {
          x[static_cast<std::size_t>(j)] = s.trans_a ? ap[j * s.lda + i] : ap[i * s.lda + j];
        }
        for (long long b = 0; b < blocks; ++b) {
          for (int j = 0; j < 16; ++j) {
            sums[static_cast<std::size_t>(b * 16 + j)] =
                x[static_cast<std::size_t>(b * 32 + j)] + x[static_cast<std::size_t>(b * 32 + 16 + j)];
          }
        }
        float* y = cp + i * s.ldc;
        switch (format) {
          case QuantFormat::Q8_0:
            dot_rows_q8_0(x.data(), sums.data(), quants, scales, blocks, y, 1, first, last,
                          row_scales.data());
            break;
          case QuantFormat::Q4_0:
            dot_rows_q4_0(x.data(), sums.data(), quants, scales, blocks, y, 1, first, last,
                          row_scales.data());
            break;
          case QuantFormat::Q4_1:
            dot_rows_q4_1(x.data(), sums.data(), quants, scales, blocks, y, 1, first, last,
                          row_scales.data());
            break;
        }
      }
      return;
    }
    // A slice of rows at a time, small enough to stay in the second-level cache.
    const long long slice = std::max<long long>(16, (1LL << 16) / s.k / 16 * 16);
    thread_local std::vector<float> w;
    for (long long r0 = first; r0 < last; r0 += slice) {
      const long long r1 = std::min(last, r0 + slice);
      w.resize(static_cast<std::size_t>((r1 - r0) * s.k));
      switch (format) {
        case QuantFormat::Q8_0: dequantize_rows_q8_0(quants, scales, blocks, r0, r1, w.data()); break;
        case QuantFormat::Q4_0: dequantize_rows_q4_0(quants, scales, blocks, r0, r1, w.data()); break;
        case QuantFormat::Q4_1: dequantize_rows_q4_1(quants, scales, blocks, r0, r1, w.data()); break;
      }
      cblas_sgemm(CblasRowMajor, s.trans_a ? CblasTrans : CblasNoTrans, CblasTrans,
                  static_cast<blasint>(s.m), static_cast<blasint>(r1 - r0),
                  static_cast<blasint>(s.k), 1.0f, ap, static_cast<blasint>(s.lda), w.data(),
                  static_cast<blasint>(s.k), 0.0f, cp + r0, static_cast<blasint>(s.ldc));
    }
  }

  void run_block(long long block) const {
    const long long p = block / parts, q = block % parts;
    const long long first = std::min(s.n, q * chunk);
    run(p, first, std::min(s.n, first + chunk));
  }
};

}  // namespace

bool quantized_gemm_supported(const runtime::LibraryCall& call) {
  return call.dtype == graph::DType::F32 && quantized_gemm_format(call.op).has_value();
}

void quantized_gemm_cpu(const runtime::LibraryCall& call, const std::vector<void*>& buffers,
                        const graph::DimValues& dims) {
  KILN_ASSERT(quantized_gemm_supported(call) && buffers.size() == 4,
              "quantized_gemm_cpu: unsupported call");
  const GemmShape s = gemm_shape(call, dims);
  if (s.batch <= 0 || s.m <= 0 || s.n <= 0) return;
  Product product{*quantized_gemm_format(call.op),
                  s,
                  static_cast<const float*>(buffers[0]),
                  static_cast<const std::uint8_t*>(buffers[1]),
                  static_cast<const std::uint16_t*>(buffers[2]),
                  static_cast<float*>(buffers[3]),
                  s.k / graph::kQuantBlock,
                  0,
                  1};
  if (s.k == 0) {
    for (long long p = 0; p < s.batch; ++p) {
      for (long long i = 0; i < s.m; ++i) {
        std::fill_n(product.c + p * s.stride_c + i * s.ldc, s.n, 0.0f);
      }
    }
    return;
  }
  const double work = static_cast<double>(s.batch) * static_cast<double>(s.m) *
                      static_cast<double>(s.n) * static_cast<double>(s.k);
  const int threads = work >= (s.m <= 2 ? kGemvParallelElements : kGemmParallelWork)
                          ? threads_in_use() : 1;
  product.parts = s.batch >= threads ? 1 : (threads + s.batch - 1) / s.batch;
  // Slices in multiples of 16 rows of W.
  product.chunk = std::max<long long>(16, (s.n + product.parts - 1) / product.parts + 15) / 16 * 16;
  const long long count = s.batch * product.parts;
  if (threads <= 1) {
    for (long long block = 0; block < count; ++block) product.run_block(block);
    return;
  }
  parallel_for(
      count,
      [](void* context, long long block) { static_cast<const Product*>(context)->run_block(block); },
      &product);
}

}  // namespace kiln::targets::cpu
