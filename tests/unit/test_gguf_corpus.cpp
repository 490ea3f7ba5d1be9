// The GGUF fuzz corpus replayed in the ordinary build (no clang needed): every input of
// tests/fuzz/corpus/gguf keeps the reader's contract (tests/fuzz/gguf_contract.hpp), and the
// files the gguf package wrote (valid-*) read, with the values it was given.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "model/dequantize.hpp"
#include "model/gguf.hpp"
#include "tests/fuzz/gguf_contract.hpp"

namespace fs = std::filesystem;
using namespace kiln::model;

namespace {

fs::path corpus() { return fs::path(KILN_SOURCE_DIR) / "tests" / "fuzz" / "corpus" / "gguf"; }

}  // namespace

TEST_CASE("gguf fuzz corpus: every input reads or is a user error, and keeps the contract [model]") {
  std::vector<fs::path> inputs;
  for (const auto& entry : fs::directory_iterator(corpus())) inputs.push_back(entry.path());
  std::sort(inputs.begin(), inputs.end());
  REQUIRE(inputs.size() >= 7);
  for (const fs::path& input : inputs) {
    std::ifstream in(input, std::ios::binary);
    const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                          std::istreambuf_iterator<char>());
    INFO(input.filename().string());
    CHECK(kiln::testing::gguf_contract_holds(bytes));
    if (input.filename().string().rfind("valid-", 0) == 0) CHECK_NOTHROW(parse_gguf(bytes, "v.gguf"));
  }
}

TEST_CASE("gguf: a file written by the gguf package reads with its values [model]") {
  const GgufFile file((corpus() / "valid-every-type.gguf").string());
  const Gguf& g = file.gguf();
  CHECK(g.string("general.architecture") == "llama");
  CHECK(g.integer("u8") == 200);
  CHECK(g.integer("i8") == -100);
  CHECK(g.integer("u16") == 60000);
  CHECK(g.integer("i16") == -30000);
  CHECK(g.integer("u32") == 4000000000);
  CHECK(g.integer("i32") == -7);
  CHECK(g.real("f32") == 1.5);
  CHECK(g.optional_bool("bool") == true);
  CHECK(g.string("string") == "h\xC3\xA9llo");
  CHECK(g.find("u64")->unsigned_integer == ~std::uint64_t(0));
  CHECK(g.integer("i64") == -(std::int64_t(1) << 40));
  CHECK(g.real("f64") == 0.1);
  CHECK(g.strings("strings") == std::vector<std::string>{"a", "", "\xC4\xA0the"});
  CHECK(g.integers("ints") == std::vector<std::int64_t>{1, 2, 3});
  CHECK(g.find("nested")->elements.at(1).elements.at(1).text == "c");

  // Every tensor holds the same [2, 64] values, in its own type: each is within its rounding.
  const GgufTensorInfo* f32 = g.find_tensor("f32");
  REQUIRE(f32 != nullptr);
  CHECK(f32->shape == std::vector<std::int64_t>{2, 64});
  const std::vector<float> x = dequantize(GgmlType::F32, file.data(*f32), 128);
  for (const char* name : {"f16", "bf16", "q8_0", "q4_0", "q4_1"}) {
    INFO(name);
    const GgufTensorInfo* t = g.find_tensor(name);
    REQUIRE(t != nullptr);
    CHECK(t->shape == f32->shape);
    const std::vector<float> y = dequantize(t->type, file.data(*t), t->elements);
    double worst = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, double(std::fabs(x[i] - y[i])));
    const double bound = std::string(name) == "f16" ? 2e-3 : std::string(name) == "bf16" ? 2e-2
                       : std::string(name) == "q8_0" ? 0.02 : 0.5;
    CHECK(worst <= bound);
  }
  CHECK(g.find_tensor("vector")->shape == std::vector<std::int64_t>{8});
}
