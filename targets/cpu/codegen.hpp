// Renders a Body (graph/body.hpp) as a C++ function for the CPU (DESIGN §5-6).
//
// The kernel ABI, shared by every CPU kernel:
//   extern "C" void SYMBOL(void* const* buffers, const long long* dims);
// `buffers` holds input 0 .. n-1, then the output; `dims` the values of body_dims(body), in that
// order. Buffers hold elements in their dtype's native layout (f32 as float, f16 as _Float16,
// bf16 as the upper 16 bits of a float, bool as one byte 0/1).
//
// Code shape:
// - Each scalar node is computed once, in the innermost loop its variables need (loop-invariant
//   code motion): a softmax's row max and row sum are computed once per row, not per element.
// - The leading perfectly nested parallel output loops become one `omp parallel for
//   collapse(n)`, taken only when the work under it (iterations times the inner loops and
//   reductions) pays for the threads; the innermost loop joins the collapse only when the
//   outer loops are too few to share (then two versions of the nest, chosen at run time).
// - A sum reduction's loop is an `omp simd reduction(+: ...)` when it holds no inner loop, so
//   it vectorizes (summation order then differs from the reference; results agree within
//   tolerance).
// - A reduction inside an innermost output loop of small constant extent whose elements do
//   work that does not depend on that loop (attention's scores, reduced over keys for every
//   column of the head dim) is folded for all columns at once, its state in arrays
//   (row_state.hpp): the shared work runs once per element, not once per column. The online
//   softmax is then folded in blocks of keys: a block's scores, max and exps in vectorized
//   loops, one rescale of the state per block; where its inner reductions are key products
//   (q.k), for tiles of 16 rows at once, q.k a small matrix product in vector registers.
// - Arithmetic is in the node's dtype; f16 and bf16 compute in float and round at each node
//   as the reference does. Float-to-integer casts saturate (NaN gives 0), an integer modulus by
//   0 gives 0, and a dynamic row out of range reads NaN (0 for integers): a kernel never traps.
// - No standard headers: math comes from compiler builtins, so sources compile fast.
#pragma once

#include <string>
#include <vector>

#include "graph/body.hpp"

namespace kiln::targets::cpu {

struct KernelSource {
  std::string symbol;              // `kiln_` + the Body's key in hex
  std::string code;                // the function, without the prelude
  std::vector<std::string> dims;   // body_dims(body): the order of the `dims` argument
};

// The helpers every kernel source uses; emitted once per translation unit, before kernels.
const std::string& cpu_prelude();

struct RenderOptions {
  // Render a matrix product's Body as a register-blocked product (tiled_product.hpp). Off: the
  // forms below, for the tests and benchmarks that compare them; its symbol gets the suffix
  // `_untiled`.
  bool tiled_products = true;
  // Fold eligible reductions for every column at once (row_state.hpp). Off: the plain form,
  // for benchmarks that compare the two; its symbol gets the suffix `_plain`.
  bool row_state = true;
  // Fold a row-state online softmax in blocks of keys (row_state.hpp). Off: key by key, for
  // the tests and benchmarks that compare the two; its symbol gets the suffix `_keywise`.
  bool key_blocks = true;
  // Compute a blocked fold's inner reductions as key products for a tile of rows
  // (row_state.hpp). Off: each row's reductions key by key, for the tests and benchmarks that
  // compare the two; its symbol gets the suffix `_rowwise`.
  bool key_products = true;
};

// The C++ source of `body`.
KernelSource render_kernel(const graph::Body& body, const RenderOptions& options = {});

}  // namespace kiln::targets::cpu
