// LLIR: the one-op lowering of HLIR graphs, step metadata (sizes, bytes, flops, aliases) and
// the deterministic text form.
#include <catch2/catch.hpp>

#include <string>

#include "graph/tensor.hpp"
#include "runtime/llir.hpp"
#include "runtime/lower_one_op.hpp"
#include "tests/unit/test_util.hpp"

using namespace kiln;
using graph::DType;
using graph::Expr;
using graph::GraphBuilder;
using graph::GraphTensor;
using kiln::testing::contains;
using kiln::testing::user_error_of;

TEST_CASE("llir: one-op lowering prints a golden text", "[runtime][llir]") {
  GraphBuilder gb;
  Expr seq = Expr::dim("seq");
  GraphTensor x = gb.input("x", {seq, 4}, DType::F32);
  GraphTensor w = gb.input("w", {4}, DType::F32);
  (x * w).output("y");                    // the Mul's contiguous view: no copy
  graph::transpose(x, 0, 1).output("t");  // a strided view: a copy kernel
  graph::sum(x, 1).output("s");
  const runtime::Llir llir = runtime::lower_one_op(gb.graph());
  const std::string expected =
      "%0 = input x f32 [seq, 4]\n"
      "%1 = input w f32 [4]\n"
      "%2 = kernel f32 [seq, 4] (%0, %1) \"%2 Mul\" size=4*seq read=16*seq + 16 "
      "written=16*seq flops=4*seq\n"
      "%3 = kernel f32 [4, seq] (%0) \"%4 Output t\" size=4*seq read=16*seq written=16*seq "
      "flops=0\n"
      "%4 = kernel f32 [seq] (%0) \"%5 SumReduce\" size=seq read=16*seq written=4*seq "
      "flops=4*seq\n"
      "output y = %2\n"
      "output t = %3\n"
      "output s = %4\n";
  CHECK(runtime::to_text(llir) == expected);
  CHECK(runtime::to_text(runtime::lower_one_op(gb.graph())) == runtime::to_text(llir));
  CHECK(contains(runtime::to_text(llir, true), "    "));  // bodies, indented
}

TEST_CASE("llir: value kinds, users and step order", "[runtime][llir]") {
  GraphBuilder gb;
  GraphTensor cache = gb.input("cache", {8, 4}, DType::F32);
  gb.graph().node(cache.node()).persistent = true;
  GraphTensor ids = gb.input("ids", {2}, DType::I32);
  GraphTensor values = gb.input("values", {2, 4}, DType::F32);
  GraphTensor updated = graph::scatter(cache, ids, values);
  updated.output("cache");
  (graph::exp(updated) + 1.0).output("e");
  const runtime::Llir llir = runtime::lower_one_op(gb.graph());

  REQUIRE(llir.find_input("cache"));
  CHECK(llir.value(*llir.find_input("cache")).kind == runtime::ValueKind::State);
  CHECK(llir.value(*llir.find_input("ids")).kind == runtime::ValueKind::Input);
  CHECK(!llir.find_input("e"));
  // The scatter step: alias 0 (its output starts as the destination), read by later steps.
  const runtime::Value& scattered = llir.value(llir.outputs().at(0).value);
  REQUIRE(scattered.producer);
  const runtime::Step& step = llir.step(*scattered.producer);
  CHECK(step.alias == std::optional<std::size_t>(0));
  CHECK(llir.step(*scattered.producer).label == "%3 Scatter");
  CHECK(!llir.users(*scattered.producer).empty());
  for (runtime::StepId s = 0; s < llir.num_steps(); ++s) {
    for (runtime::StepId user : llir.users(s)) CHECK(user > s);
  }
  CHECK(contains(runtime::to_text(llir), "alias=0"));
  CHECK(contains(runtime::to_text(llir), "%0 = state cache f32 [8, 4]"));
}

TEST_CASE("llir: flops of matmul and library calls", "[runtime][llir]") {
  GraphBuilder gb;
  Expr m = Expr::dim("m");
  GraphTensor a = gb.input("a", {m, 3}, DType::F32);
  GraphTensor b = gb.input("b", {3, 5}, DType::F32);
  graph::matmul(a, b).output("c");
  const runtime::Llir llir = runtime::lower_one_op(gb.graph());
  // Mul over [m, 5, 3] (15m), then SumReduce: one add per element (15m).
  Expr total(0);
  for (runtime::StepId s = 0; s < llir.num_steps(); ++s) total = total + llir.step(s).flops;
  CHECK(graph::to_string(total) == "30*m");

  runtime::Llir calls;
  runtime::ValueId x = calls.add_input("x", DType::F32, {m, 3});
  runtime::ValueId y = calls.add_input("y", DType::F32, {3, 5});
  runtime::LibraryCall gemm{"gemm", DType::F32,
                            {{"batch", Expr(1)}, {"m", m}, {"n", Expr(5)}, {"k", Expr(3)}}};
  runtime::ValueId z = calls.add_call(gemm, {x, y}, DType::F32, {m, 5}, "gemm");
  calls.add_output("z", z);
  CHECK(graph::to_string(calls.step(0).flops) == "30*m");
  CHECK(graph::to_string(calls.step(0).bytes_written) == "20*m");
  CHECK(kiln::testing::contains(user_error_of([&] { calls.add_output("z", x); }),
                               "two outputs called 'z'"));
  CHECK(kiln::testing::contains(user_error_of([&] { calls.add_input("x", DType::F32, {}); }),
                                "two inputs called 'x'"));
}

TEST_CASE("llir: unsupported nodes are user errors", "[runtime][llir]") {
  GraphBuilder gb;
  GraphTensor x = gb.input("x", {4}, DType::F32);
  graph::Node custom;
  custom.op = graph::Op::CustomOp;
  custom.name = "mystery";
  custom.shape = {Expr(4)};
  gb.add(custom, {x}).output("y");
  CHECK(contains(user_error_of([&] { runtime::lower_one_op(gb.graph()); }), "CustomOp"));
}
