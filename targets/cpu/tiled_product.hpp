// Tiled products: a Body whose reduction is a float sum over k of a factor free of the
// innermost output loop times a factor free of the loop around it (a[i, k] * b[k, j], the way
// the graph writes a matmul: a broadcast multiply, then a sum) is rendered as a register-blocked
// matrix product, the way BLAS libraries compute one (codegen.cpp emits the rest of the kernel).
//
// The threads share tasks: a batch entry (the output loops outside i and j), a block of at
// most kTaskRows rows and one of at most kTileColumns columns (near-equal blocks, at least as
// many tasks as threads where the rows allow: kiln_split_tiles in the prelude). A task:
//
//   for each block of kTileDepth steps of k {
//     pack b's block [column panel][k][kPanelColumns]  (the factor computed: casts, masks,
//         views; a transposed f32 b's whole panels by 16 x 16 register transposes; the last
//         panel padded with 0)
//     for each kTileRows rows of the task {
//       pack a's block, [row][k] or [row panel][k][kPanelRows] (a row-major f32 a: not packed,
//           read where it is)
//       for each column panel { for each row panel { micro-kernel } }
//     }
//   }
//   the epilogue (what the value computes from the sum) and the store, per element of the task;
//   where the value is the sum stored in f32 along the columns, none: the micro-kernel stores
//   the last block of k's sums in the output itself
//
// The micro-kernel (tiled_product_prelude) holds kPanelRows x kPanelColumns sums in vector
// registers (16 floats each: zmm on AVX-512) and, per step of k, loads the column panel's
// vectors once and adds each row's element, broadcast, times them (FMAs); a ragged row panel
// runs a tile of its own rows. A column panel of b (kTileDepth x kPanelColumns floats) stays
// in L1 while the row panels pass over it; a's block stays in L2. The sums carry across blocks
// of k in an array of the task, in the thread's heap scratch with the packs (1.2 MB). A task of
// up to 528 rows takes a 512-row product's rows whole (b's block packed once per thread), and a
// block of 512 steps of k its whole sum (no sums carried).
// Products in f32 only (FMAs reorder nothing but round each step once: within the tolerance of
// a vectorized sum); f64 and f16 products keep the plain form. The vectors are GCC's vector
// extension: the JIT's -march=native makes them two AVX2 or four SSE registers elsewhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/body.hpp"
#include "targets/node_homes.hpp"

namespace kiln::targets::cpu {

// Rows and columns of the micro-kernel's tile of sums (columns a multiple of 16): 24 vectors of
// sums, per step of k 4 loads and 6 broadcasts for 24 FMAs (8 x 32 took 10 for 16; 6 x 64 was
// 1.0-1.05x faster at N = 512 and 1024 on 2 threads, bench/cpu/tiled_product.cpp).
constexpr std::int64_t kPanelRows = 6;
constexpr std::int64_t kPanelColumns = 64;
// The blocks: rows and columns of C per task of a thread (its sums in the thread's scratch), rows
// of a per packed block, steps of k per packed block.
constexpr std::int64_t kTaskRows = 528;
constexpr std::int64_t kTileColumns = 256;
constexpr std::int64_t kTileRows = 96;
constexpr std::int64_t kTileDepth = 512;
// A task's packs of a and b and its sums, in floats (multiples of 16: each part stays 64-byte
// aligned in the thread's scratch).
constexpr std::int64_t kTaskScratch = kTileRows * kTileDepth + kTileDepth * kTileColumns +
                                      kTaskRows * kTileColumns;
static_assert(kTileRows * kTileDepth % 16 == 0 && kTileDepth * kTileColumns % 16 == 0);
// Blocks of whole panels: kiln_split_tiles rounds a task's rows and columns up to panels, which
// must not take them past the scratch's.
static_assert(kTaskRows % kPanelRows == 0 && kTileRows % kPanelRows == 0 &&
              kTileColumns % kPanelColumns == 0 && kPanelColumns % 16 == 0);
// The fewest columns (where their count is a constant) that a tiled product takes: a vector.
constexpr std::int64_t kMinTiledColumns = 16;

struct TiledProduct {
  graph::ScalarId reduce = 0;
  // The factor free of the columns (a[i, k]) and the one free of the rows (b[k, j]).
  graph::ScalarId row_factor = 0;
  graph::ScalarId column_factor = 0;
  // Whether a factor's loads step by one element along k (a row-major a, a transposed b): it
  // is packed along k, else along its own output loop.
  bool row_factor_along_k = false;
  bool column_factor_along_k = false;
  // Where the row factor is one f32 load read along k (a row-major a): the distance between
  // its rows. The micro-kernel then reads a where it is, unpacked.
  std::optional<graph::Expr> row_stride;
  // Where the column factor is one f32 load read along k (a transposed b): the distance
  // between its columns. Its whole panels are then packed by 16 x 16 register transposes.
  std::optional<graph::Expr> column_stride;
  // Where the value is the sum itself, stored in f32 with consecutive columns adjacent: the
  // distance between its rows in the output. The micro-kernel then stores the last block of k's
  // sums there, with no pass of its own over the task.
  std::optional<graph::Expr> output_row_stride;
  // The nodes each factor computes inside the rows' loop (by id; the batch loops' nodes are
  // computed outside the tiles), and the nodes of the value after the sum (the epilogue).
  std::vector<graph::ScalarId> row_nodes;
  std::vector<graph::ScalarId> column_nodes;
  std::vector<graph::ScalarId> epilogue;
};

// How far a load's position moves when loop variable `var` steps by one.
graph::Expr load_step(const graph::Scalar& load, const std::string& var);
// How far `index` moves when loop variable `var` steps by one.
graph::Expr index_step(const graph::Expr& index, const std::string& var);

// The tiled product of `body`, or nothing where it does not apply: every output loop parallel
// with an extent free of the loop variables, at least two of them (rows, then columns,
// innermost; at least kMinTiledColumns columns where their count is a constant), a plain store; exactly one Reduce, a sum in f32 over an extent free of the loops,
// computed per element of the two innermost loops, whose element is factor * factor in f32
// with one factor free of the columns and the other free of the rows.
std::optional<TiledProduct> plan_tiled_product(const graph::Body& body, const NodeHomes& homes);

// What the code generator lends the tiled product's emitter.
class KernelWriter {
 public:
  virtual ~KernelWriter() = default;
  virtual void line(std::size_t indent, const std::string& text) = 0;
  // `const T v<id> = ...;` for node `id` (its arguments already computed).
  virtual void node(graph::ScalarId id, std::size_t indent) = 0;
  // The store of the value at the current loop variables.
  virtual void store(std::size_t indent) = 0;
  // Node `id` is read as `text` from now on (empty: as itself again).
  virtual void rename(graph::ScalarId id, const std::string& text) = 0;
  // An Expr as C (loop variables `L_<var>`, dims `D_<dim>`).
  virtual std::string index(const graph::Expr& e) const = 0;
  // Node `id`'s value as C: its variable, a constant's text or its new name.
  virtual std::string value(graph::ScalarId id) const = 0;
};

// The kernel's statements for `plan` (after the inputs and dims are declared): the product,
// split across threads where its multiply-adds reach `parallel_work`.
void emit_tiled_product(const graph::Body& body, const NodeHomes& homes,
                        const TiledProduct& plan, long long parallel_work, KernelWriter& out);

// The micro-kernel and the block driver every tiled product calls; part of the CPU prelude.
const std::string& tiled_product_prelude();

}  // namespace kiln::targets::cpu
