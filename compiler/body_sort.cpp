// The primitives of the Body sort: what rules may ask of a kernel. Transformations
// (body-inline, body-tile, body-split-reduce) arrive with fusion.
#include <cstdint>
#include <cstdio>
#include <string>

#include "compiler/sorts.hpp"

namespace kiln::compiler {

void add_body_primitives(engine::EGraph& egraph, const GraphSorts& s) {
  engine::PrimitiveTable& table = egraph.primitives();
  const BodySort* bs = s.body_sort.get();
  const engine::StringSort* str = s.string_sort.get();
  auto count = [&](const char* name, auto measure) {
    table.add(engine::Primitive{name, {s.body}, s.i64, false,
                                [bs, measure](const engine::Value* a, std::size_t,
                                              engine::Value& r) {
                                  r = engine::I64Sort::make(
                                      static_cast<std::int64_t>(measure(bs->get(a[0]))));
                                  return true;
                                }});
  };
  count("body-inputs", [](const graph::Body& b) { return b.inputs().size(); });
  count("body-loops", [](const graph::Body& b) { return b.loops().size(); });
  count("body-reduces", [](const graph::Body& b) {
    std::size_t n = 0;
    for (const graph::Scalar& x : b.scalars()) n += x.op == graph::ScalarOp::Reduce ? 1 : 0;
    return n;
  });
  table.add(engine::Primitive{"body-key", {s.body}, s.string, false,
                              [bs, str](const engine::Value* a, std::size_t, engine::Value& r) {
                                const support::Hash128 key = bs->get(a[0]).key();
                                char hex[40];
                                std::snprintf(hex, sizeof hex, "kiln_%016llx%016llx",
                                              static_cast<unsigned long long>(key.high),
                                              static_cast<unsigned long long>(key.low));
                                r = str->make(hex);
                                return true;
                              }});
  table.add(engine::Primitive{"body-text", {s.body}, s.string, false,
                              [bs, str](const engine::Value* a, std::size_t, engine::Value& r) {
                                r = str->make(graph::to_text(bs->get(a[0])));
                                return true;
                              }});
}

}  // namespace kiln::compiler
