// Streaming matrix-vector products; see gemv.hpp.
#include "targets/cpu/gemv.hpp"

#include <cstring>
#include <vector>

#include "support/diagnostic.hpp"
#include "targets/cpu/vector_clones.hpp"

namespace kiln::targets::cpu {

namespace {

// Eight floats: one AVX register, two SSE ones; GCC lowers it to what the clone targets.
typedef float F8 __attribute__((vector_size(32)));

inline F8 load8(const float* p) {
  F8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store8(float* p, F8 v) {
  std::memcpy(p, &v, sizeof v);
}
inline float sum8(F8 v) {
  return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}

// y[o] = W[o,:] . x for o in [first, last), x contiguous: four rows at a time, so that four
// streams are read at once and each load of x serves four products.
KILN_VECTOR_CLONES
void dot_rows(const float* x, const float* w, long long ldw, long long inputs, float* y,
              long long incy, long long first, long long last) {
  const long long vec_end = inputs - inputs % 16;
  long long o = first;
  for (; o + 4 <= last; o += 4) {
    const float* r0 = w + o * ldw;
    const float* r1 = r0 + ldw;
    const float* r2 = r1 + ldw;
    const float* r3 = r2 + ldw;
    F8 a0 = {}, a1 = {}, a2 = {}, a3 = {}, b0 = {}, b1 = {}, b2 = {}, b3 = {};
    for (long long i = 0; i < vec_end; i += 16) {
      const F8 x0 = load8(x + i), x1 = load8(x + i + 8);
      a0 += x0 * load8(r0 + i);
      b0 += x1 * load8(r0 + i + 8);
      a1 += x0 * load8(r1 + i);
      b1 += x1 * load8(r1 + i + 8);
      a2 += x0 * load8(r2 + i);
      b2 += x1 * load8(r2 + i + 8);
      a3 += x0 * load8(r3 + i);
      b3 += x1 * load8(r3 + i + 8);
    }
    float s0 = sum8(a0 + b0), s1 = sum8(a1 + b1), s2 = sum8(a2 + b2), s3 = sum8(a3 + b3);
    for (long long i = vec_end; i < inputs; ++i) {
      s0 += x[i] * r0[i];
      s1 += x[i] * r1[i];
      s2 += x[i] * r2[i];
      s3 += x[i] * r3[i];
    }
    y[o * incy] = s0;
    y[(o + 1) * incy] = s1;
    y[(o + 2) * incy] = s2;
    y[(o + 3) * incy] = s3;
  }
  for (; o < last; ++o) {
    const float* r = w + o * ldw;
    F8 a = {}, b = {};
    for (long long i = 0; i < vec_end; i += 16) {
      a += load8(x + i) * load8(r + i);
      b += load8(x + i + 8) * load8(r + i + 8);
    }
    float s = sum8(a + b);
    for (long long i = vec_end; i < inputs; ++i) s += x[i] * r[i];
    y[o * incy] = s;
  }
}

// y_r[c] = W[c,:] . x_r for R vectors x_r (ldx apart) and C weight rows (ldw apart): R * C
// accumulators in registers, each load of a weight serving R products and each load of an x
// serving C. y_r[c] is at y[r * ldy + c * incy].
template <int R, int C>
KILN_INLINE void dot_tile(const float* x, long long ldx, const float* w, long long ldw,
                          long long inputs, float* y, long long ldy, long long incy) {
  const long long vec_end = inputs - inputs % 8;
  F8 acc[R][C] = {};
  for (long long i = 0; i < vec_end; i += 8) {
    F8 wv[C];
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) wv[c] = load8(w + c * ldw + i);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const F8 xv = load8(x + r * ldx + i);
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) acc[r][c] += xv * wv[c];
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) {
      float s = sum8(acc[r][c]);
      for (long long i = vec_end; i < inputs; ++i) s += x[r * ldx + i] * w[c * ldw + i];
      y[r * ldy + c * incy] = s;
    }
  }
}

// Every vector times the weight rows [o, o + C): vectors four at a time, then the rest.
template <int C>
KILN_INLINE void dot_vectors(const float* x, long long ldx, long long vectors, const float* w,
                             long long ldw, long long inputs, float* y, long long ldy,
                             long long incy) {
  long long r = 0;
  for (; r + 4 <= vectors; r += 4) {
    dot_tile<4, C>(x + r * ldx, ldx, w, ldw, inputs, y + r * ldy, ldy, incy);
  }
  switch (vectors - r) {
    case 3: dot_tile<3, C>(x + r * ldx, ldx, w, ldw, inputs, y + r * ldy, ldy, incy); break;
    case 2: dot_tile<2, C>(x + r * ldx, ldx, w, ldw, inputs, y + r * ldy, ldy, incy); break;
    case 1: dot_tile<1, C>(x + r * ldx, ldx, w, ldw, inputs, y + r * ldy, ldy, incy); break;
    default: break;
  }
}

// y_r[o] = W[o,:] . x_r for every vector r and o in [first, last), x's contiguous: four
// weight rows at a time (16 accumulators of 8 floats: AVX-512's 32 registers hold them with
// the loads; AVX2 spills a few), read from memory once and from the first-level cache for
// the other vectors.
KILN_VECTOR_CLONES
void dot_rows_batch(const float* x, long long ldx, long long vectors, const float* w,
                    long long ldw, long long inputs, float* y, long long ldy, long long incy,
                    long long first, long long last) {
  long long o = first;
  for (; o + 4 <= last; o += 4) {
    dot_vectors<4>(x, ldx, vectors, w + o * ldw, ldw, inputs, y + o * incy, ldy, incy);
  }
  for (; o < last; ++o) {
    dot_vectors<1>(x, ldx, vectors, w + o * ldw, ldw, inputs, y + o * incy, ldy, incy);
  }
}

// acc[o - first] = sum_i x[i] * W[i, o] for o in [first, last): four input rows per pass over
// the accumulator, which stays in the first-level cache.
KILN_VECTOR_CLONES
void axpy_rows(const float* x, const float* w, long long ldw, long long inputs, float* acc,
               long long first, long long last) {
  const long long width = last - first;
  const long long vec_end = width - width % 8;
  std::memset(acc, 0, static_cast<std::size_t>(width) * sizeof(float));
  long long i = 0;
  for (; i + 4 <= inputs; i += 4) {
    const float* r0 = w + i * ldw + first;
    const float* r1 = r0 + ldw;
    const float* r2 = r1 + ldw;
    const float* r3 = r2 + ldw;
    const float x0 = x[i], x1 = x[i + 1], x2 = x[i + 2], x3 = x[i + 3];
    for (long long o = 0; o < vec_end; o += 8) {
      F8 a = load8(acc + o);
      a += x0 * load8(r0 + o) + x1 * load8(r1 + o);
      a += x2 * load8(r2 + o) + x3 * load8(r3 + o);
      store8(acc + o, a);
    }
    for (long long o = vec_end; o < width; ++o) {
      acc[o] += x0 * r0[o] + x1 * r1[o] + x2 * r2[o] + x3 * r3[o];
    }
  }
  for (; i < inputs; ++i) {
    const float* r = w + i * ldw + first;
    const float xi = x[i];
    for (long long o = 0; o < width; ++o) acc[o] += xi * r[o];
  }
}

}  // namespace

void gemv_range(const GemvOperands& op, long long first, long long last) {
  if (first >= last) return;
  // Scratch per thread: a gathered x when it is strided, the accumulator of the axpy form.
  thread_local std::vector<float> gathered, accumulator;
  const float* x = op.x;
  long long ldx = op.ldx;
  if (op.incx != 1) {
    gathered.resize(static_cast<std::size_t>(op.vectors * op.inputs));
    for (long long r = 0; r < op.vectors; ++r) {
      for (long long i = 0; i < op.inputs; ++i)
        gathered[static_cast<std::size_t>(r * op.inputs + i)] = op.x[r * op.ldx + i * op.incx];
    }
    x = gathered.data();
    ldx = op.inputs;
  }
  if (op.vectors > 1) {
    KILN_ASSERT(op.rows_are_outputs, "gemv_range: a batch of vectors needs rows as outputs");
    dot_rows_batch(x, ldx, op.vectors, op.w, op.ldw, op.inputs, op.y, op.ldy, op.incy, first,
                   last);
    return;
  }
  if (op.rows_are_outputs) {
    dot_rows(x, op.w, op.ldw, op.inputs, op.y, op.incy, first, last);
    return;
  }
  const bool direct = op.incy == 1;
  float* acc = op.y + first;
  if (!direct) {
    accumulator.resize(static_cast<std::size_t>(last - first));
    acc = accumulator.data();
  }
  axpy_rows(x, op.w, op.ldw, op.inputs, acc, first, last);
  if (!direct) {
    for (long long o = first; o < last; ++o) op.y[o * op.incy] = acc[o - first];
  }
}

}  // namespace kiln::targets::cpu
