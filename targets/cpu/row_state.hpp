// Row-state reductions: when to fold a reduction for every column of the innermost output loop
// at once, and which of its parts are then shared by all columns (the CPU code generator's
// choice; codegen.cpp emits it).
//
// Loop-invariant code motion puts a reduction that depends on the innermost output loop c
// inside that loop, so whatever its elements compute without c is recomputed for every c:
// attention's scores q.k_j, reduced over keys j for each column c of the head dim, cost 64
// times their work. With c's extent E a small constant the reduction can instead run once for
// all c, its state held in arrays of E:
//
//   state_k[E] = identity_k
//   for r { nodes without c, once ;  for c < E { nodes with c ; state[c] = combine(state[c], lift) } }
//   for c < E { finalize ; the rest of the value ; store }
//
// A state component whose combine reads only shared components and shared lifts is itself
// the same for every c (the online softmax's running max and sum): it stays one scalar,
// updated once per r, and so do the parts of the other components' combine that read only
// shared values (the rescaling exp2 terms). This is generic over the Monoid.
//
// The online-softmax monoid (graph/monoid_online_softmax.hpp) is folded in blocks of keys
// instead (a split reduction: the Body is unchanged, this is how the CPU renders its Reduce),
// so that its per-key work is no longer a chain of scalar exp2 through the running max:
//
//   for each block of B keys (the last one ragged) {
//     x[jj] = the block's scores                              (shared nodes, per key)
//     m' = max(m, max_jj x[jj]) ; p[jj] = x[jj] < m' ? e^(x[jj] - m') : 1     (vectorized)
//     s = e^(m - m') where m < m', else 1 ; l = l * s + sum p ; a[c] *= s      (once a block)
//     for jj { for c < E { a[c] += p[jj] * y_jj[c] } }                        (vectorized)
//     m = m'
//   }
//
// The selects are the monoid's own (a state or element equal to the max keeps scale 1), so a
// block, or a prefix, that is all -inf gives what the key-by-key fold gives, never inf - inf.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/body.hpp"
#include "targets/node_homes.hpp"

namespace kiln::targets::cpu {

// The largest constant extent of c held in state arrays (floats on the stack, per thread).
constexpr std::int64_t kMaxRowStateColumns = 256;
// Where the reduction's shared work is only loads (a matmul's row of A), the columns that pay
// for it: a vector's width. Fewer fill no vector, and the plain form's reduction loop
// vectorizes instead.
constexpr std::int64_t kMinColumnsForSharedLoads = 8;
// Keys per block of the blocked online-softmax fold: the scores, exps and weights of a block
// are stack arrays of this many floats, a few vectors wide.
constexpr std::int64_t kKeyBlock = 32;
// Keys whose inner reductions (q.k) run in one loop, an accumulator each, and keys whose
// weighted values are added in one pass over the columns (codegen.cpp).
constexpr std::int64_t kKeyGroup = 8;
constexpr std::int64_t kValueGroup = 4;
// Rows whose folds take each key block in turn, so that the block's keys and values are read
// from memory once for them all (codegen.cpp).
constexpr std::int64_t kRowTile = 8;
// Floats in a vector (an AVX-512 register): the lanes of the loops over a tile's rows.
constexpr std::int64_t kLanes = 16;
// Where the inner reductions are key products (below): rows per tile, two vectors of lanes
// (each key's factor, broadcast once, feeds two FMAs, and a block's keys and values are read
// from memory once for twice the rows: 1.09-1.12x faster than 16 rows on the bench Body, seq
// 512 and 2048, one thread), keys per pass of the product (an accumulator vector per key and
// vector of rows: 16), and rows per pass over the columns of the weighted values (codegen.cpp).
constexpr std::int64_t kKeyTileRows = 2 * kLanes;
constexpr std::int64_t kKeyTileKeys = 8;
constexpr std::int64_t kValueRows = 4;
// The most columns whose weighted values are held in vector registers (a multiple of
// kLanes): the block's values are copied into an array of this many floats per key.
constexpr std::int64_t kMaxRegisterValueColumns = 128;
// The largest constant extent of a key product's reduction (its row operands are kept for a
// tile of rows: extent x kKeyTileRows floats).
constexpr std::int64_t kMaxKeyProductExtent = 256;

// An inner reduction of a blocked fold that is a float sum over a constant extent t of
// row_operand * key_operand, the first free of the key and the second free of the row (q.k:
// q[i, t] * k[j, t]). For a tile of rows and a block of keys these are a small matrix product:
// the row operands are set out once per tile, [t][row], and the block's sums accumulate in
// outer-product form, a vector over the tile's rows per key (no horizontal sums).
struct KeyProduct {
  graph::ScalarId reduce = 0;
  graph::ScalarId row_operand = 0;
  graph::ScalarId key_operand = 0;
  std::int64_t extent = 0;
};

struct RowStatePlan {
  graph::ScalarId reduce = 0;        // the Reduce folded for every column at once
  std::string column_var;            // c: the innermost output loop's variable
  std::int64_t columns = 0;          // its constant extent E
  std::vector<bool> shared_element;  // per element of the Reduce: the same for every c
  std::vector<bool> shared_lift;     // per lift expression
  std::vector<bool> shared_state;    // per state component (a scalar, not an array)
  // Nodes of c's scope that the reduction reads: computed for every c before it, kept in arrays.
  std::vector<graph::ScalarId> row_inputs;
  // Nodes of the reduction's scope without c (once per r) and with c (per r and c), by id.
  std::vector<graph::ScalarId> shared_nodes;
  std::vector<graph::ScalarId> column_nodes;
  // Non-trivial nodes of the combine expressions that read only shared parameters: computed
  // once per r (the online softmax's new max and rescaling factors), by id.
  std::vector<graph::ScalarId> shared_combine;
  // Keys per block where the reduction is the online softmax folded in blocks (see above), 0
  // where it is folded key by key.
  std::int64_t key_block = 0;
  // In blocks, whether the rows of the loop around c go kRowTile at a time, each key block
  // taken by all of them (its keys and values read from memory once for them, then from L1):
  // where that loop's nodes hold no reduction (they are cheap to compute again), there are no
  // row inputs, and the keys are the same for every row.
  bool tiles_rows = false;
  // In blocks, the shared nodes in two loops over a block's keys: the inner reductions (q.k)
  // and what they read, then the rest (the mask, the scale), in a loop of its own so that it
  // vectorizes; of the first, the nodes the second or the score reads (kept in arrays). By id.
  std::vector<graph::ScalarId> key_reductions;
  std::vector<graph::ScalarId> key_elementwise;
  std::vector<graph::ScalarId> key_arrays;
  // Where the score is select(c, e, -inf) or e + g with c or g free of the inner reductions
  // (a mask): `key_guard` is c or g, computed first for the block (with `guard_nodes`, the
  // shared nodes it reads); a key it masks (c == 0, g == -inf) skips the inner reductions and
  // scores -inf, which is exact for the select, and for the sum wherever e is finite (the
  // reductions of finite inputs).
  std::optional<graph::ScalarId> key_guard;
  bool guard_selects = false;
  std::vector<graph::ScalarId> guard_nodes;
  // Every inner reduction of the block as a key product (above), or empty where one is not:
  // then they run key by key. The rows are the iterations of output loop `key_tile_loop`,
  // kKeyTileRows at a time: the innermost loop outside c whose iterations can share key blocks
  // as for tiles_rows, whose variable the key operands and the weighted values (the column
  // nodes) are free of. Loops between it and c run inside the tile (a query position's heads,
  // whose keys differ, one after the other for a tile of positions).
  std::vector<KeyProduct> key_products;
  std::size_t key_tile_loop = 0;
  // With key products, where the weighted value is one f32 load (no mask, no dynamic row)
  // whose elements are consecutive along c: the weighted values read it where it is instead of
  // copying the block's values first.
  std::optional<graph::ScalarId> value_load;
};

// The row-state plan for `body`, or nothing where it does not pay or does not apply: the
// innermost output loop, inside at least one other (which carries the threads), must be
// parallel with a constant extent of at most
// kMaxRowStateColumns, the store must have no dynamic row, and a Reduce homed in that loop
// (the first by id that qualifies) must have an extent without c and, in its own loop, work
// that does not depend on c: computation, or loads over at least kMinColumnsForSharedLoads
// columns.
std::optional<RowStatePlan> plan_row_state(const graph::Body& body, const NodeHomes& homes);

}  // namespace kiln::targets::cpu
