// Streaming matrix-vector products (f32): a batch-1 product reads each weight once, so its
// speed is the memory's read bandwidth; these loops keep several rows in flight with vector
// registers, where sgemm's packing and OpenBLAS's sgemv reach a third to a half of it.
#pragma once

namespace kiln::targets::cpu {

// One matrix-vector product y = W x over a range of outputs [first, last):
//   rows_are_outputs: W stored [outputs, inputs] row-major (leading dim ldw), y[o] = W[o,:] . x
//   otherwise:        W stored [inputs, outputs] row-major, y[o] = sum_i x[i] * W[i, o]
// x has `inputs` elements at stride incx, y its elements at stride incy.
struct GemvOperands {
  const float* x = nullptr;
  long long incx = 1;
  const float* w = nullptr;
  long long ldw = 0;
  bool rows_are_outputs = true;
  long long inputs = 0;
  float* y = nullptr;
  long long incy = 1;
};

void gemv_range(const GemvOperands& op, long long first, long long last);

}  // namespace kiln::targets::cpu
