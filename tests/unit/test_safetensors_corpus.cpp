// The safetensors fuzz corpus replayed in the ordinary build (no clang needed): every input of
// tests/fuzz/corpus/safetensors keeps the reader's contract (tests/fuzz/safetensors_contract.hpp),
// the files the safetensors package wrote (valid-*) read, and the broken copies do not.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "model/safetensors.hpp"
#include "support/diagnostic.hpp"
#include "tests/fuzz/safetensors_contract.hpp"

namespace fs = std::filesystem;

TEST_CASE(
    "safetensors fuzz corpus: every input reads or is a user error, and keeps the contract "
    "[model]") {
  const fs::path corpus = fs::path(KILN_SOURCE_DIR) / "tests" / "fuzz" / "corpus" / "safetensors";
  std::vector<fs::path> inputs;
  for (const auto& entry : fs::directory_iterator(corpus)) inputs.push_back(entry.path());
  std::sort(inputs.begin(), inputs.end());
  REQUIRE(inputs.size() >= 11);
  for (const fs::path& input : inputs) {
    std::ifstream in(input, std::ios::binary);
    const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                          std::istreambuf_iterator<char>());
    const std::string name = input.filename().string();
    INFO(name);
    CHECK(kiln::testing::safetensors_contract_holds(bytes));
    const bool seed_valid = name.rfind("valid-", 0) == 0;
    const bool seed_broken =
        name.rfind("cut-", 0) == 0 || name.rfind("bad-", 0) == 0 || name.rfind("overlap", 0) == 0;
    if (seed_valid) CHECK_NOTHROW(kiln::model::parse_safetensors(bytes, "v.safetensors"));
    if (seed_broken) {
      CHECK_THROWS_AS(kiln::model::parse_safetensors(bytes, "b.safetensors"),
                      kiln::support::UserError);
    }
  }
}
