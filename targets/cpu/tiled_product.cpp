// Tiled products: the plan and the kernel's statements; see tiled_product.hpp.
#include "targets/cpu/tiled_product.hpp"

#include <algorithm>
#include <set>

namespace kiln::targets::cpu {

using graph::Body;
using graph::Expr;
using graph::Monoid;
using graph::Scalar;
using graph::ScalarId;
using graph::ScalarOp;

namespace {

bool trivial(const Scalar& s) { return s.op == ScalarOp::Const || s.op == ScalarOp::Param; }

// Whether every load under `factor` steps by one element when loop variable `var` does (and at
// least one load does): the factor is then read along `var` when packed.
bool steps_by_one(const std::vector<Scalar>& nodes, ScalarId factor, const std::string& var) {
  bool any = false;
  for (ScalarId id : nodes_under(nodes, factor)) {
    if (nodes[id].op != ScalarOp::Load) continue;
    if (!(load_step(nodes[id], var) == Expr(1))) return false;
    any = true;
  }
  return any;
}

// The non-trivial nodes under `factor` computed inside the rows' loop (home past the batch
// loops' scopes), by id.
std::vector<ScalarId> factor_nodes(const Body& body, const NodeHomes& homes, ScalarId factor) {
  const std::size_t batch_scopes = body.loops().size() - 1;  // scopes 0 .. loops - 2
  std::vector<ScalarId> out;
  for (ScalarId id : nodes_under(body.scalars(), factor)) {
    if (!trivial(body.scalar(id)) && homes.home(id) >= batch_scopes) out.push_back(id);
  }
  return out;
}

// Where `factor` is one f32 load without a mask or a dynamic row, read along k: the distance
// between its elements of consecutive `var` (free of the loops).
std::optional<Expr> plain_load_stride(const Body& body, const NodeHomes& homes, ScalarId factor,
                                      bool along_k, const std::string& var) {
  const Scalar& load = body.scalar(factor);
  if (!along_k || load.op != ScalarOp::Load || !load.args.empty() || !(load.valid == Expr(1)) ||
      load.dtype != graph::DType::F32 || body.inputs()[load.slot] != graph::DType::F32) {
    return std::nullopt;
  }
  const Expr stride = load_step(load, var);
  if (homes.mentions_loop_var(stride)) return std::nullopt;
  return stride;
}

bool mentions(const std::set<std::string>& deps, const std::string& var) {
  return deps.count(var) != 0;
}

}  // namespace

Expr index_step(const Expr& index, const std::string& var) {
  return graph::simplify(graph::substitute(index, {{var, Expr::dim(var) + 1}}) - index);
}

Expr load_step(const Scalar& load, const std::string& var) { return index_step(load.index, var); }

std::optional<TiledProduct> plan_tiled_product(const Body& body, const NodeHomes& homes) {
  const std::vector<graph::Loop>& loops = body.loops();
  const std::vector<Scalar>& nodes = body.scalars();
  if (loops.size() < 2 || body.store_row() || body.output_aliases() ||
      !(body.guard() == Expr(1))) {
    return std::nullopt;
  }
  for (const graph::Loop& loop : loops) {
    if (!loop.parallel || homes.mentions_loop_var(loop.extent)) return std::nullopt;
  }
  std::optional<ScalarId> reduce;
  for (std::size_t id = 0; id < nodes.size(); ++id) {
    if (!homes.live(static_cast<ScalarId>(id)) || nodes[id].op != ScalarOp::Reduce) continue;
    if (reduce) return std::nullopt;  // one reduction only
    reduce = static_cast<ScalarId>(id);
  }
  if (!reduce) return std::nullopt;
  const Scalar& s = nodes[*reduce];
  const Monoid& m = body.monoids().at(s.slot);
  if (s.dtype != graph::DType::F32 || m.name != "sum" || m.identity != std::vector<double>{0.0} ||
      m.lift.size() != 1 || nodes[m.lift[0]].op != ScalarOp::Param ||
      nodes[m.finalize].op != ScalarOp::Param || nodes[m.combine[0]].op != ScalarOp::Add) {
    return std::nullopt;
  }
  const std::size_t scope = homes.reduce_scope(*reduce);
  if (homes.home(*reduce) != loops.size() || homes.mentions_loop_var(s.extent) || scope == 0 ||
      homes.has_child_scope(scope)) {
    return std::nullopt;
  }
  // Fewer columns than a vector's lanes (a matrix-vector product, [m, k] x [k, 1]) would leave
  // most of every FMA's lanes padding: the plain form's sum vectorizes along k instead.
  const std::optional<std::int64_t> columns = loops.back().extent.as_constant();
  if (columns && *columns < kMinTiledColumns) return std::nullopt;
  const Scalar& product = nodes[s.args[0]];
  if (product.op != ScalarOp::Mul || product.dtype != graph::DType::F32) return std::nullopt;
  const std::string& row = loops[loops.size() - 2].var;
  const std::string& column = loops.back().var;
  TiledProduct plan;
  plan.reduce = *reduce;
  plan.row_factor = product.args[0];
  plan.column_factor = product.args[1];
  if (mentions(homes.deps(plan.row_factor), column)) {
    std::swap(plan.row_factor, plan.column_factor);
  }
  if (mentions(homes.deps(plan.row_factor), column) ||
      mentions(homes.deps(plan.column_factor), row)) {
    return std::nullopt;
  }
  plan.row_factor_along_k = steps_by_one(nodes, plan.row_factor, s.var);
  plan.column_factor_along_k = !steps_by_one(nodes, plan.column_factor, column) &&
                               steps_by_one(nodes, plan.column_factor, s.var);
  plan.row_stride = plain_load_stride(body, homes, plan.row_factor, plan.row_factor_along_k, row);
  plan.column_stride = plain_load_stride(body, homes, plan.column_factor,
                                         plan.column_factor_along_k, column);
  if (body.value() == *reduce && body.dtype() == graph::DType::F32 &&
      index_step(body.store_index(), column) == Expr(1)) {
    const Expr rows = index_step(body.store_index(), row);
    if (!homes.mentions_loop_var(rows)) plan.output_row_stride = rows;
  }
  plan.row_nodes = factor_nodes(body, homes, plan.row_factor);
  plan.column_nodes = factor_nodes(body, homes, plan.column_factor);
  // The epilogue: what the value reads in the rows' and columns' scopes, outside the sum.
  std::set<ScalarId> seen;
  std::vector<ScalarId> stack{body.value()};
  while (!stack.empty()) {
    const ScalarId id = stack.back();
    stack.pop_back();
    if (!seen.insert(id).second || id == *reduce) continue;
    if (!trivial(nodes[id]) && homes.home(id) + 2 > loops.size()) plan.epilogue.push_back(id);
    for (ScalarId a : nodes[id].args) stack.push_back(a);
  }
  std::sort(plan.epilogue.begin(), plan.epilogue.end());
  return plan;
}

namespace {

std::string num(std::int64_t v) { return std::to_string(v); }

// Emits the kernel; the names it declares start with `kp_`.
class Emitter {
 public:
  Emitter(const Body& body, const NodeHomes& homes, const TiledProduct& plan, KernelWriter& out)
      : body_(body), homes_(homes), plan_(plan), out_(out), loops_(body.loops()) {}

  void emit(long long parallel_work, std::size_t indent) {
    const Scalar& s = body_.scalar(plan_.reduce);
    const std::size_t batch = loops_.size() - 2;
    out_.line(indent, "// tiled product of %" + num(plan_.reduce) + ": rows " + row_var() +
                          ", columns " + column_var() + ", sums over " + depth_var());
    out_.line(indent, "const kiln_i64 kp_m = " + out_.index(loops_[batch].extent) +
                          ", kp_n = " + out_.index(loops_.back().extent) +
                          ", kp_k = " + out_.index(s.extent) + ";");
    Expr trips = 1;
    for (std::size_t k = 0; k < batch; ++k) trips = trips * loops_[k].extent;
    const Expr work = graph::simplify(trips * loops_[batch].extent * loops_.back().extent *
                                      s.extent);
    out_.line(indent, "const kiln_tile_tasks kp_t = kiln_split_tiles(" +
                          out_.index(graph::simplify(trips)) + ", kp_m, kp_n, " +
                          num(kTaskRows) + ", " + num(kTileColumns) + ", " + num(kPanelRows) +
                          ", " + num(kPanelColumns) + ");");
    out_.line(indent, "const kiln_i64 kp_mb = kp_t.row_tasks, kp_nb = kp_t.column_tasks;");
    // Each thread's packs and sums (1.2 MB) on the heap: more than a small thread stack holds.
    out_.line(indent, "float* const kp_pool = kiln_tile_scratch(" + num(kTaskScratch) + ");");
    out_.line(indent, "#pragma omp parallel for collapse(" + num(static_cast<std::int64_t>(batch) + 2) +
                          ") schedule(static) if(" + out_.index(graph::simplify(trips)) +
                          " * kp_mb * kp_nb > 1 && " + out_.index(work) +
                          " >= " + std::to_string(parallel_work) + ")");
    std::size_t in = indent;
    for (std::size_t k = 0; k < batch; ++k, ++in) {
      const std::string var = "L_" + loops_[k].var;
      out_.line(in, "for (kiln_i64 " + var + " = 0; " + var + " < " + out_.index(loops_[k].extent) +
                        "; ++" + var + ")");
    }
    // A thread's tasks (static, consecutive) take one block of columns for many blocks of
    // rows: b's block is read from L2 again, not from memory.
    out_.line(in, "for (kiln_i64 kp_jb = 0; kp_jb < kp_nb; ++kp_jb)");
    out_.line(in + 1, "for (kiln_i64 kp_ib = 0; kp_ib < kp_mb; ++kp_ib) {");
    in += 2;
    for (std::size_t scope = 1; scope <= batch; ++scope) {
      for (ScalarId id : homes_.homed(scope)) out_.node(id, in);
    }
    out_.line(in, "const kiln_i64 kp_i0 = kp_ib * kp_t.rows, kp_j0 = kp_jb * kp_t.columns;");
    out_.line(in, "const kiln_i64 kp_mt = kiln_imin(kp_t.rows, kp_m - kp_i0), kp_nc = "
                  "kiln_imin(kp_t.columns, kp_n - kp_j0);");
    out_.line(in, "float* const kp_a = kp_pool + kiln_omp_thread_num() * " + num(kTaskScratch) +
                      ";");
    out_.line(in, "float* const kp_b = kp_a + " + num(kTileRows * kTileDepth) + ";");
    out_.line(in, "float* const kp_s = kp_b + " + num(kTileDepth * kTileColumns) + ";");
    std::string direct = "nullptr, 0";
    if (plan_.output_row_stride) {
      // The task's first output element: the micro-kernel stores the last block's sums there.
      out_.line(in, "float* kp_o;");
      out_.line(in, "{");
      out_.line(in + 1, "const kiln_i64 " + row_var() + " = kp_i0, " + column_var() + " = kp_j0;");
      out_.line(in + 1, "kp_o = out + " + out_.index(body_.store_index()) + ";");
      out_.line(in, "}");
      const std::string ldo = out_.index(*plan_.output_row_stride);
      direct = "kp_p + kp_kc >= kp_k ? kp_o + kp_h * " + ldo + " : nullptr, " + ldo;
    }
    // One pass when k is empty: the sums are then the identity, 0.
    out_.line(in, "for (kiln_i64 kp_p = 0; kp_p == 0 || kp_p < kp_k; kp_p += " + num(kTileDepth) +
                      ") {");
    out_.line(in + 1, "const kiln_i64 kp_kc = kiln_imax(0, kiln_imin(" + num(kTileDepth) +
                          ", kp_k - kp_p));");
    pack_columns(in + 1);
    // b's block serves every block of rows of the task.
    out_.line(in + 1, "for (kiln_i64 kp_h = 0; kp_h < kp_mt; kp_h += " + num(kTileRows) + ") {");
    out_.line(in + 2, "const kiln_i64 kp_mc = kiln_imin(" + num(kTileRows) + ", kp_mt - kp_h);");
    std::string a = "kp_a", lda = "kp_kc";
    if (plan_.row_stride) {
      // a read where it is: its element at the block's first row and step of k.
      const Scalar& load = body_.scalar(plan_.row_factor);
      out_.line(in + 2, "const kiln_i64 " + row_var() + " = kp_i0 + kp_h, " + depth_var() +
                            " = kp_p;");
      out_.line(in + 2, "const float* const kp_ad = in" + num(static_cast<std::int64_t>(load.slot)) +
                            " + " + out_.index(load.index) + ";");
      a = "kp_ad";
      lda = out_.index(*plan_.row_stride);
    } else {
      pack_rows(in + 2);
    }
    out_.line(in + 2, "kiln_tiles<" + num(kPanelRows) + ", " + num(kPanelColumns / 16) + ", " +
                          (plan_.row_factor_along_k ? "1" : "0") + ">(" + a + ", " + lda +
                          ", kp_b, kp_kc, kp_mc, kp_nc, kp_s + kp_h * " + num(kTileColumns) +
                          ", " + num(kTileColumns) + ", kp_p == 0, " + direct + ");");
    out_.line(in + 1, "}");
    out_.line(in, "}");
    if (!plan_.output_row_stride) epilogue(in);
    out_.line(in - 1, "}");
    out_.line(indent, "kiln_free(kp_pool);");
  }

 private:
  std::string row_var() const { return "L_" + loops_[loops_.size() - 2].var; }
  std::string column_var() const { return "L_" + loops_.back().var; }
  std::string depth_var() const { return "L_" + body_.scalar(plan_.reduce).var; }
  bool in_row_scope(ScalarId id) const { return homes_.home(id) + 1 == loops_.size(); }
  bool in_column_scope(ScalarId id) const { return homes_.home(id) == loops_.size(); }

  // a's block into kp_a, each row panel (kPanelRows rows, the last one ragged) at kp_a + its
  // first row * kp_kc: rows by k where the factor is read along k (copies of contiguous
  // elements), else [k][kPanelRows] (the micro-kernel reads either, kiln_tiles' last argument).
  void pack_rows(std::size_t in) {
    const std::string panel = num(kPanelRows);
    if (plan_.row_factor_along_k) {
      out_.line(in, "// a's block, [row][k]");
      out_.line(in, "for (kiln_i64 kp_r = 0; kp_r < kp_mc; ++kp_r) {");
      out_.line(in + 1, "const kiln_i64 " + row_var() + " = kp_i0 + kp_h + kp_r;");
      out_.line(in + 1, "float* const kp_to = kp_a + kp_r * kp_kc;");
      for (ScalarId id : plan_.row_nodes) {
        if (in_row_scope(id)) out_.node(id, in + 1);
      }
      out_.line(in + 1, "#pragma omp simd");
      out_.line(in + 1, "for (kiln_i64 kp_q = 0; kp_q < kp_kc; ++kp_q) {");
      out_.line(in + 2, "const kiln_i64 " + depth_var() + " = kp_p + kp_q;");
      for (ScalarId id : plan_.row_nodes) {
        if (!in_row_scope(id)) out_.node(id, in + 2);
      }
      out_.line(in + 2, "kp_to[kp_q] = " + packed(plan_.row_factor) + ";");
      out_.line(in + 1, "}");
      out_.line(in, "}");
      return;
    }
    out_.line(in, "// a's block, [row panel][k][" + panel + "]");
    out_.line(in, "for (kiln_i64 kp_q = 0; kp_q < kp_kc; ++kp_q) {");
    out_.line(in + 1, "const kiln_i64 " + depth_var() + " = kp_p + kp_q;");
    out_.line(in + 1, "for (kiln_i64 kp_r0 = 0; kp_r0 < kp_mc; kp_r0 += " + panel + ") {");
    out_.line(in + 2, "float* const kp_to = kp_a + kp_r0 * kp_kc + kp_q * " + panel + ";");
    out_.line(in + 2, "#pragma omp simd");
    out_.line(in + 2, "for (kiln_i64 kp_r = 0; kp_r < kiln_imin(" + panel +
                          ", kp_mc - kp_r0); ++kp_r) {");
    out_.line(in + 3, "const kiln_i64 " + row_var() + " = kp_i0 + kp_h + kp_r0 + kp_r;");
    for (ScalarId id : plan_.row_nodes) out_.node(id, in + 3);
    out_.line(in + 3, "kp_to[kp_r] = " + packed(plan_.row_factor) + ";");
    out_.line(in + 2, "}");
    out_.line(in + 1, "}");
    out_.line(in, "}");
  }

  // b's block into kp_b: [column panel][k][kPanelColumns], the columns past the block's end 0
  // (their sums are not stored). Read along b's rows (k by k, across every panel: long runs
  // for the prefetchers), else, where b is read along k (transposed), panel by panel.
  void pack_columns(std::size_t in) {
    const std::string panel = num(kPanelColumns);
    out_.line(in, "// b's block, [column panel][k][" + panel + "]");
    if (plan_.column_factor_along_k) {
      out_.line(in, "for (kiln_i64 kp_c0 = 0; kp_c0 < kp_nc; kp_c0 += " + panel + ") {");
      out_.line(in + 1, "const kiln_i64 kp_cn = kiln_imin(" + panel + ", kp_nc - kp_c0);");
      out_.line(in + 1, "float* const kp_panel = kp_b + kp_c0 * kp_kc;");
      if (plan_.column_stride) {
        // A whole panel of a plain load: its columns transposed in registers.
        const Scalar& load = body_.scalar(plan_.column_factor);
        out_.line(in + 1, "if (kp_cn == " + panel + ") {");
        out_.line(in + 2, "const kiln_i64 " + column_var() + " = kp_j0 + kp_c0, " + depth_var() +
                              " = kp_p;");
        out_.line(in + 2, "kiln_transpose_panel<" + panel + ">(in" +
                              num(static_cast<std::int64_t>(load.slot)) + " + " +
                              out_.index(load.index) + ", " + out_.index(*plan_.column_stride) +
                              ", kp_kc, kp_panel);");
        out_.line(in + 2, "continue;");
        out_.line(in + 1, "}");
      }
      out_.line(in + 1, "for (kiln_i64 kp_c = 0; kp_c < kp_cn; ++kp_c) {");
      out_.line(in + 2, "const kiln_i64 " + column_var() + " = kp_j0 + kp_c0 + kp_c;");
      for (ScalarId id : plan_.column_nodes) {
        if (in_column_scope(id)) out_.node(id, in + 2);
      }
      out_.line(in + 2, "#pragma omp simd");
      out_.line(in + 2, "for (kiln_i64 kp_q = 0; kp_q < kp_kc; ++kp_q) {");
      out_.line(in + 3, "const kiln_i64 " + depth_var() + " = kp_p + kp_q;");
      for (ScalarId id : plan_.column_nodes) {
        if (!in_column_scope(id)) out_.node(id, in + 3);
      }
      out_.line(in + 3, "kp_panel[kp_q * " + panel + " + kp_c] = " +
                            packed(plan_.column_factor) + ";");
      out_.line(in + 2, "}");
      out_.line(in + 1, "}");
      out_.line(in + 1, "for (kiln_i64 kp_q = 0; kp_q < kp_kc; ++kp_q)");
      out_.line(in + 2, "for (kiln_i64 kp_c = kp_cn; kp_c < " + panel +
                            "; ++kp_c) kp_panel[kp_q * " + panel + " + kp_c] = 0.0f;");
      out_.line(in, "}");
      return;
    }
    // A whole panel in a loop of a constant trip count (it vectorizes), a ragged one padded.
    auto copy = [&](std::size_t at, const std::string& count) {
      out_.line(at, "#pragma omp simd");
      out_.line(at, "for (kiln_i64 kp_c = 0; kp_c < " + count + "; ++kp_c) {");
      out_.line(at + 1, "const kiln_i64 " + column_var() + " = kp_j0 + kp_c0 + kp_c;");
      for (ScalarId id : plan_.column_nodes) out_.node(id, at + 1);
      out_.line(at + 1, "kp_to[kp_c] = " + packed(plan_.column_factor) + ";");
      out_.line(at, "}");
    };
    out_.line(in, "for (kiln_i64 kp_q = 0; kp_q < kp_kc; ++kp_q) {");
    out_.line(in + 1, "const kiln_i64 " + depth_var() + " = kp_p + kp_q;");
    out_.line(in + 1, "for (kiln_i64 kp_c0 = 0; kp_c0 < kp_nc; kp_c0 += " + panel + ") {");
    out_.line(in + 2, "const kiln_i64 kp_cn = kiln_imin(" + panel + ", kp_nc - kp_c0);");
    out_.line(in + 2, "float* const kp_to = kp_b + kp_c0 * kp_kc + kp_q * " + panel + ";");
    out_.line(in + 2, "if (kp_cn == " + panel + ") {");
    copy(in + 3, panel);
    out_.line(in + 2, "} else {");
    copy(in + 3, "kp_cn");
    out_.line(in + 3, "for (kiln_i64 kp_c = kp_cn; kp_c < " + panel + "; ++kp_c) kp_to[kp_c] = 0.0f;");
    out_.line(in + 2, "}");
    out_.line(in + 1, "}");
    out_.line(in, "}");
  }

  // The value after the sum and the store, for each element of the block.
  void epilogue(std::size_t in) {
    out_.rename(plan_.reduce, "kp_s[kp_r * " + num(kTileColumns) + " + kp_c]");
    out_.line(in, "for (kiln_i64 kp_r = 0; kp_r < kp_mt; ++kp_r) {");
    out_.line(in + 1, "const kiln_i64 " + row_var() + " = kp_i0 + kp_r;");
    for (ScalarId id : plan_.epilogue) {
      if (in_row_scope(id)) out_.node(id, in + 1);
    }
    out_.line(in + 1, "#pragma omp simd");
    out_.line(in + 1, "for (kiln_i64 kp_c = 0; kp_c < kp_nc; ++kp_c) {");
    out_.line(in + 2, "const kiln_i64 " + column_var() + " = kp_j0 + kp_c;");
    for (ScalarId id : plan_.epilogue) {
      if (!in_row_scope(id)) out_.node(id, in + 2);
    }
    out_.store(in + 2);
    out_.line(in + 1, "}");
    out_.line(in, "}");
    out_.rename(plan_.reduce, "");
  }

  // A factor's value as packed. Plus 0 (which changes no sum: -0 becomes +0, and the sums
  // start at +0) so that a pack is not a plain copy, which GCC turns into `rep movs` per row.
  std::string packed(ScalarId id) const { return "(" + out_.value(id) + " + 0.0f)"; }

  const Body& body_;
  const NodeHomes& homes_;
  const TiledProduct& plan_;
  KernelWriter& out_;
  const std::vector<graph::Loop>& loops_;
};

}  // namespace

void emit_tiled_product(const Body& body, const NodeHomes& homes, const TiledProduct& plan,
                        long long parallel_work, KernelWriter& out) {
  Emitter(body, homes, plan, out).emit(parallel_work, 1);
}

const std::string& tiled_product_prelude() {
  // kiln_tile: R rows by 16 V columns of sums in R x V vectors over kc steps of packed
  // operands, a [kc][MR] (or rows lda apart where ROWS_BY_K) and b [kc][16 V]; c the block's
  // sums (leading dim ldc), from zero where `first`; stored in c, or where `out` is given in
  // out (leading dim ldo), its first `columns` columns only. kiln_tiles: the tiles of a packed
  // block, rows [0, m) by columns [0, n), the last row panel ragged (a tile of its rows), the
  // last column panel padded. k unrolled by 4: fewer loop steps between the FMAs.
  static const std::string text = [] {
    std::string t = R"(// Tiled products (tiled_product.hpp).
template <int R, int V, int MR, int ROWS_BY_K>
static inline __attribute__((always_inline)) void kiln_tile(const float* __restrict a,
    kiln_i64 lda, const float* __restrict b, kiln_i64 kc, float* __restrict c, kiln_i64 ldc,
    int first, float* __restrict out, kiln_i64 ldo, kiln_i64 columns) {
  kiln_f32x16 s[R][V];
  const kiln_f32x16 zero = {};
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      if (first) {
        s[r][v] = zero;
      } else {
        __builtin_memcpy(&s[r][v], c + r * ldc + 16 * v, sizeof s[r][v]);
      }
    }
  }
#pragma GCC unroll 4
  for (kiln_i64 k = 0; k < kc; ++k) {
    kiln_f32x16 x[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) __builtin_memcpy(&x[v], b + k * 16 * V + 16 * v, sizeof x[v]);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const float e = ROWS_BY_K ? a[r * lda + k] : a[k * MR + r];
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) s[r][v] += x[v] * e;
    }
  }
  if (out == nullptr || columns >= 16 * V) {
    float* const o = out ? out : c;
    const kiln_i64 ld = out ? ldo : ldc;
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) __builtin_memcpy(o + r * ld + 16 * v, &s[r][v], sizeof s[r][v]);
    }
    return;
  }
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < V; ++v) {
      for (int l = 0; l < 16 && 16 * v + l < columns; ++l) out[r * ldo + 16 * v + l] = s[r][v][l];
    }
  }
}
// A panel of a transposed b: dst[k * W + c] = src[c * lds + k] for c < W, k < kc; 16 x 16
// blocks transposed in registers (four rounds of swapping off-diagonal blocks of 8, 4, 2, 1).
typedef int kiln_i32x16 __attribute__((vector_size(64)));
static inline __attribute__((always_inline)) void kiln_transpose16(const float* src,
    kiln_i64 lds, float* dst, kiln_i64 ldd) {
  kiln_f32x16 r[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) __builtin_memcpy(&r[i], src + i * lds, sizeof r[i]);
@ROUNDS@
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) __builtin_memcpy(dst + i * ldd, &r[i], sizeof r[i]);
}
template <int W>
static inline void kiln_transpose_panel(const float* src, kiln_i64 lds, kiln_i64 kc,
                                        float* dst) {
  kiln_i64 k = 0;
  for (; k + 16 <= kc; k += 16) {
    // The next blocks' lines, early: W columns are W streams, too many for the prefetchers.
    for (int c = 0; c < W; ++c) __builtin_prefetch(src + c * lds + k + 64);
    for (int c = 0; c < W; c += 16) kiln_transpose16(src + c * lds + k, lds, dst + k * W + c, W);
  }
  for (; k < kc; ++k) {
    for (int c = 0; c < W; ++c) dst[k * W + c] = src[c * lds + k];
  }
}
// The tasks of a tiled product: blocks of near-equal rows and columns (multiples of row_step
// and column_step, at most max_rows and max_columns), at least as many as the threads where
// the rows allow, and a multiple of the threads where they are few (static shares even).
// (OpenMP's omp_get_max_threads, under a name of its own: omp.h may follow with its own
// declaration.)
extern "C" int kiln_omp_max_threads(void) __asm__("omp_get_max_threads");
extern "C" int kiln_omp_thread_num(void) __asm__("omp_get_thread_num");
extern "C" int kiln_posix_memalign(void**, unsigned long, unsigned long) __asm__("posix_memalign");
extern "C" void kiln_free(void*) __asm__("free");
// Scratch of `floats` per thread of a team, 64-byte aligned. (Kernels have no error path: a
// failed allocation of a few MB stops the process, as a stack overflow would.)
static inline float* kiln_tile_scratch(kiln_i64 floats) {
  void* p = nullptr;
  if (kiln_posix_memalign(&p, 64, (unsigned long)(floats * kiln_omp_max_threads()) * 4) != 0) {
    __builtin_trap();
  }
  return (float*)p;
}
struct kiln_tile_tasks { kiln_i64 rows, row_tasks, columns, column_tasks; };
static inline kiln_tile_tasks kiln_split_tiles(kiln_i64 batches, kiln_i64 m, kiln_i64 n,
    kiln_i64 max_rows, kiln_i64 max_columns, kiln_i64 row_step, kiln_i64 column_step) {
  if (m <= 0 || n <= 0 || batches <= 0) return kiln_tile_tasks{1, 0, 1, 0};
  const kiln_i64 threads = kiln_omp_max_threads();
  kiln_i64 column_tasks = (n + max_columns - 1) / max_columns;
  const kiln_i64 columns = ((n + column_tasks - 1) / column_tasks + column_step - 1) /
                           column_step * column_step;
  column_tasks = (n + columns - 1) / columns;
  const kiln_i64 most = (m + row_step - 1) / row_step;  // row tasks of one step each
  kiln_i64 row_tasks = (m + max_rows - 1) / max_rows;
  const kiln_i64 others = batches * column_tasks;
  if (others * row_tasks < threads) row_tasks = (threads + others - 1) / others;
  if (others * row_tasks < 8 * threads) {
    for (kiln_i64 k = row_tasks; k <= row_tasks + threads; ++k) {
      if ((others * k) % threads == 0) { row_tasks = k; break; }
    }
  }
  row_tasks = kiln_imin(row_tasks, most);
  const kiln_i64 rows = ((m + row_tasks - 1) / row_tasks + row_step - 1) / row_step * row_step;
  return kiln_tile_tasks{rows, (m + rows - 1) / rows, columns, column_tasks};
}
template <int MR, int V, int ROWS_BY_K>
static inline void kiln_tiles(const float* a, kiln_i64 lda, const float* b, kiln_i64 kc,
                              kiln_i64 m, kiln_i64 n, float* c, kiln_i64 ldc, int first,
                              float* out, kiln_i64 ldo) {
  for (kiln_i64 j = 0; j < n; j += 16 * V) {
    for (kiln_i64 i = 0; i < m; i += MR) {
      const float* const ap = a + i * (ROWS_BY_K ? lda : kc);
      const float* const bp = b + j * kc;
      float* const cp = c + i * ldc + j;
      float* const op = out ? out + i * ldo + j : nullptr;
      switch (m - i < MR ? m - i : MR) {
)";
    for (std::int64_t r = kPanelRows; r >= 1; --r) {
      t += "        case " + num(r) + ": kiln_tile<" + num(r) + ", V, MR, ROWS_BY_K>(ap, lda, bp, kc, cp, ldc, first, op, ldo, n - j); break;\n";
    }
    t += R"(      }
    }
  }
}
)";
    // The rounds of kiln_transpose16: rows j and j + h (j & h == 0) swap their off-diagonal
    // blocks of h elements.
    std::string rounds;
    for (int h = 8; h >= 1; h /= 2) {
      std::string low, high;
      for (int c = 0; c < 16; ++c) {
        low += (c ? ", " : "") + std::to_string((c & h) == 0 ? c : 16 + c - h);
        high += (c ? ", " : "") + std::to_string((c & h) == 0 ? c + h : 16 + c);
      }
      rounds += "  {\n    const kiln_i32x16 low = {" + low + "};\n    const kiln_i32x16 high = {" +
                high + "};\n#pragma GCC unroll 16\n    for (int j = 0; j < 16; ++j) {\n" +
                "      if (j & " + std::to_string(h) + ") continue;\n" +
                "      const kiln_f32x16 a = r[j], b = r[j + " + std::to_string(h) + "];\n" +
                "      r[j] = __builtin_shuffle(a, b, low);\n      r[j + " + std::to_string(h) +
                "] = __builtin_shuffle(a, b, high);\n    }\n  }\n";
    }
    t.replace(t.find("@ROUNDS@\n"), std::string("@ROUNDS@\n").size(), rounds);
    return t;
  }();
  return text;
}

}  // namespace kiln::targets::cpu
