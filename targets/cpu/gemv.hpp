// Streaming matrix-vector products (f32): a batch-1 product reads each weight once, so its
// speed is the memory's read bandwidth; these loops keep several rows in flight with vector
// registers, where sgemm's packing and OpenBLAS's sgemv reach a third to a half of it.
// A small batch of vectors (a prefill of a few tokens) shares each pass over the weights: a
// tile of weight rows stays in the first-level cache while every vector is multiplied by it,
// so the product still reads the weights once, where sgemm packs them for a handful of rows.
#pragma once

namespace kiln::targets::cpu {

// One matrix-vector product y = W x over a range of outputs [first, last):
//   rows_are_outputs: W stored [outputs, inputs] row-major (leading dim ldw), y[o] = W[o,:] . x
//   otherwise:        W stored [inputs, outputs] row-major, y[o] = sum_i x[i] * W[i, o]
// x has `inputs` elements at stride incx, y its elements at stride incy. With `vectors` > 1
// (rows_are_outputs only) there are that many x's, ldx apart, and y's, ldy apart.
struct GemvOperands {
  const float* x = nullptr;
  long long incx = 1;
  long long vectors = 1;
  long long ldx = 0;
  long long ldy = 0;
  const float* w = nullptr;
  long long ldw = 0;
  bool rows_are_outputs = true;
  long long inputs = 0;
  float* y = nullptr;
  long long incy = 1;
};

void gemv_range(const GemvOperands& op, long long first, long long last);

}  // namespace kiln::targets::cpu
