// The candidates phase; see candidates.hpp.
#include "compiler/candidates.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include "engine/builtins.hpp"
#include "graph/quantized.hpp"
#include "support/diagnostic.hpp"
#include "targets/gemm_reference.hpp"

namespace kiln::compiler {

using engine::ENode;
using engine::RowId;
using engine::Value;

namespace {

runtime::LibraryCall gemm_call(graph::DType dtype, const EGraphView::Operand& a,
                               const EGraphView::Operand& b, const graph::Expr& batch,
                               const graph::Expr& m, const graph::Expr& n, const graph::Expr& k) {
  runtime::LibraryCall call;
  call.op = "gemm";
  call.dtype = dtype;
  call.params = {{"batch", batch},          {"m", m},
                 {"n", n},                  {"k", k},
                 {"trans_a", graph::Expr(a.trans)}, {"trans_b", graph::Expr(b.trans)},
                 {"lda", a.ld},             {"ldb", b.ld},
                 {"offset_a", a.offset},    {"offset_b", b.offset},
                 {"stride_a", a.stride},    {"stride_b", b.stride},
                 {"ldc", n},                {"stride_c", m * n}};
  return call;
}

// The buffer a ConsumedBuffer e-class consumes, if it is one.
std::optional<Value> consumed(const EGraphView& view, Value eclass) {
  for (const ENode& node : view.nodes(eclass)) {
    if (view.is(node, "ConsumedBuffer")) return view.find(view.row(node)[0]);
  }
  return std::nullopt;
}

std::int64_t elements(const std::vector<graph::Expr>& shape, const graph::DimValues& dims) {
  std::int64_t n = 1;
  for (const graph::Expr& d : shape) n *= graph::evaluate(d, dims);
  return n;
}

}  // namespace

std::vector<CandidateInfo> collect_candidates(const EGraphView& view, bool subsumed_too) {
  std::vector<CandidateInfo> out;
  const GraphSorts& sorts = view.sorts();
  view.for_rows("Kernel", [&](RowId r, const Value* row) {
    CandidateInfo c;
    c.node = ENode{*view.function("Kernel"), r};
    graph::Body body = sorts.body_sort->get(row[0]);
    c.inputs = view.list(row[1]);
    c.output = view.find(row[2]);
    c.how = "kernel";
    if (auto alias = body.output_aliases(); alias && *alias < c.inputs.size()) {
      if (auto buffer = consumed(view, c.inputs[*alias])) {
        c.inputs[*alias] = *buffer;
        c.in_place = true;
        c.how = "kernel in place";
      }
    }
    std::ostringstream what;
    what << "c" << c.output << " as kernel " << sorts.body_sort->print(row[0]);
    c.what = what.str();
    if (c.inputs.size() != body.inputs().size()) {
      c.rejected = true;
      c.why = "its input list has " + std::to_string(c.inputs.size()) + " buffers, its Body reads " +
              std::to_string(body.inputs().size());
    }
    c.op = std::move(body);
    out.push_back(std::move(c));
  }, subsumed_too);
  // Gemm, and GemmBias: the same product with a bias row (its third input) and an activation
  // as the call's epilogue params.
  for (const bool with_bias : {false, true}) {
    const char* function = with_bias ? "GemmBias" : "Gemm";
    view.for_rows(function, [&](RowId r, const Value* row) {
      CandidateInfo c;
      c.node = ENode{*view.function(function), r};
      c.output = view.find(row[with_bias ? 9 : 7]);
      c.how = "gemm";
      c.what = "c" + std::to_string(c.output) + (with_bias ? " as gemm with bias" : " as gemm");
      auto a = view.operand(row[1]);
      auto b = view.operand(row[2]);
      const std::string& dtype_name = sorts.string_sort->get(row[0]);
      std::optional<graph::DType> dtype = graph::parse_dtype(dtype_name);
      const std::int64_t activation = with_bias ? engine::I64Sort::get(row[8]) : 0;
      if (!a || !b || !dtype || activation < 0 || activation > 1) {
        c.rejected = true;
        c.why = !dtype ? "the unknown dtype \"" + dtype_name + "\""
                : (!a || !b) ? "an operand is not an Operand term"
                             : "the unknown activation " + std::to_string(activation);
        c.op = runtime::LibraryCall{};
        out.push_back(std::move(c));
        return;
      }
      c.inputs = {a->buffer, b->buffer};
      runtime::LibraryCall call =
          gemm_call(*dtype, *a, *b, sorts.expr_sort->get(row[3]), sorts.expr_sort->get(row[4]),
                    sorts.expr_sort->get(row[5]), sorts.expr_sort->get(row[6]));
      if (with_bias) {
        c.inputs.push_back(view.find(row[7]));
        call.params["bias"] = graph::Expr(1);
        if (activation != 0) call.params["activation"] = graph::Expr(activation);
      }
      c.op = std::move(call);
      out.push_back(std::move(c));
    }, subsumed_too);
  }
  view.for_rows("QGemm", [&](RowId r, const Value* row) {
    CandidateInfo c;
    c.node = ENode{*view.function("QGemm"), r};
    c.output = view.find(row[8]);
    c.how = "quantized gemm";
    c.what = "c" + std::to_string(c.output) + " as quantized gemm";
    auto a = view.operand(row[1]);
    const std::string& format_name = sorts.string_sort->get(row[0]);
    std::optional<graph::QuantFormat> format = graph::parse_quant_format(format_name);
    if (!a || !format) {
      c.rejected = true;
      c.why = !format ? "the unknown format \"" + format_name + "\"" : "an operand is not an Operand term";
      c.op = runtime::LibraryCall{};
      out.push_back(std::move(c));
      return;
    }
    c.inputs = {a->buffer, view.find(row[2]), view.find(row[3])};
    const graph::Expr n = sorts.expr_sort->get(row[6]), k = sorts.expr_sort->get(row[7]);
    EGraphView::Operand b{};
    b.trans = 1;
    b.ld = k;
    b.offset = graph::Expr(0);
    b.stride = graph::Expr(0);
    runtime::LibraryCall call = gemm_call(graph::DType::F32, *a, b, sorts.expr_sort->get(row[4]),
                                          sorts.expr_sort->get(row[5]), n, k);
    call.op = targets::quantized_gemm_op(*format);
    c.op = std::move(call);
    out.push_back(std::move(c));
  }, subsumed_too);
  return out;
}

std::set<Value> classes_without_checked(const std::vector<CandidateInfo>& candidates) {
  std::set<Value> passed, failed;
  for (const CandidateInfo& c : candidates) {
    if (!c.rejected) passed.insert(c.output);
    else if (!c.pruned) failed.insert(c.output);  // ranked out is not failed
  }
  std::set<Value> out;
  for (Value eclass : failed) {
    if (!passed.count(eclass)) out.insert(eclass);
  }
  return out;
}

std::vector<CandidateInfo> subsumed_one_op_kernels(const EGraphView& view,
                                                   const std::set<Value>& classes) {
  std::set<std::pair<Value, Value>> one_op;  // (body, input list) of the classes' one-op Kernels
  view.for_rows("one-op-kernel", [&](RowId, const Value* row) {
    if (classes.count(view.find(row[0]))) one_op.emplace(row[1], view.find(row[2]));
  });
  const engine::FunctionId kernel = *view.function("Kernel");
  const engine::Table& kernels = view.egraph().table(kernel);
  std::vector<CandidateInfo> out;
  for (CandidateInfo& c : collect_candidates(view, /*subsumed_too=*/true)) {
    if (c.node.function != kernel || !kernels.subsumed(c.node.row)) continue;
    const Value* row = kernels.row(c.node.row);
    if (classes.count(c.output) &&
        one_op.count({row[0], view.find(row[1])})) {
      out.push_back(std::move(c));
    }
  }
  return out;
}

Sized size_candidate(const CandidateInfo& info, ClassValues& values, const graph::DimValues& dims) {
  Sized out;
  try {
    std::vector<std::int64_t> have;
    for (std::size_t i = 0; i < info.inputs.size(); ++i) {
      const ClassValue* v = values.get(info.inputs[i]);
      if (!v) {
        out.why = "input " + std::to_string(i) + " (e-class c" + std::to_string(info.inputs[i]) +
                  ") has no reference value to check against (" +
                  values.why_missing(info.inputs[i]) + ")";
        return out;
      }
      have.push_back(elements(v->shape, dims));
    }
    const ClassValue* result = values.get(info.output);
    if (!result) {
      out.why = "its e-class has no reference value to check against (" +
                values.why_missing(info.output) + ")";
      return out;
    }
    const std::int64_t want = elements(result->shape, dims);
    graph::Expr want_size(1);
    for (const graph::Expr& d : result->shape) want_size = want_size * d;
    Candidate c;
    if (const graph::Body* body = std::get_if<graph::Body>(&info.op)) {
      if (body->output_size() != want_size) {  // equal at every binding of the dims, not one
        out.why = "it writes " + graph::to_string(body->output_size()) +
                  " elements, its e-class holds " + graph::to_string(want_size);
        return out;
      }
      c = body_candidate(*body, have, dims);
    } else {
      c = gemm_candidate(std::get<runtime::LibraryCall>(info.op), dims);
      if (c.input_elements.size() != have.size()) {
        out.why = "its call reads " + std::to_string(c.input_elements.size()) + " buffers, it has " +
                  std::to_string(have.size());
        return out;
      }
      const bool quantized =
          targets::quantized_gemm_format(std::get<runtime::LibraryCall>(info.op).op).has_value();
      for (std::size_t i = 0; i < have.size(); ++i) {
        if (have[i] < c.input_elements[i]) {
          static const char* const kOperands[] = {"A", "B", "bias", "C0"};
          static const char* const kQuantized[] = {"A", "the quants", "the scales"};
          out.why = std::string("it reads ") + std::to_string(c.input_elements[i]) +
                    " elements of operand " +
                    (quantized ? kQuantized[std::min<std::size_t>(i, 2)]
                               : kOperands[std::min<std::size_t>(i, 3)]) +
                    ", whose buffer holds " + std::to_string(have[i]);
          return out;
        }
        c.input_elements[i] = have[i];
      }
    }
    if (c.output_elements != want) {
      out.why = "it writes " + std::to_string(c.output_elements) + " elements, its e-class holds " +
                std::to_string(want);
      return out;
    }
    if (c.output_dtype != result->dtype) {
      out.why = "it computes " + std::string(graph::dtype_name(c.output_dtype)) +
                ", its e-class holds " + std::string(graph::dtype_name(result->dtype));
      return out;
    }
    for (std::size_t i = 0; i < info.inputs.size(); ++i) {
      const graph::DType got = values.get(info.inputs[i])->dtype;
      if (c.input_dtypes[i] != got) {
        out.why = "it reads input " + std::to_string(i) + " as " +
                  std::string(graph::dtype_name(c.input_dtypes[i])) + ", the buffer holds " +
                  std::string(graph::dtype_name(got));
        return out;
      }
    }
    out.candidate = std::move(c);
  } catch (const support::UserError& e) {
    out.why = e.what();  // an unbound dim, an unsupported library call, ...
  }
  return out;
}

}  // namespace kiln::compiler
