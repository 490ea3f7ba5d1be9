// Streaming matrix-vector products; see gemv.hpp.
#include "targets/cpu/gemv.hpp"

#include <cstring>
#include <vector>

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
  if (op.incx != 1) {
    gathered.resize(static_cast<std::size_t>(op.inputs));
    for (long long i = 0; i < op.inputs; ++i)
      gathered[static_cast<std::size_t>(i)] = op.x[i * op.incx];
    x = gathered.data();
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
