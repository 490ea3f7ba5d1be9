// Dequantization and quantization against the PyPI `gguf` package (llama.cpp's Python half):
// tests/model/quant_vectors.txt holds its encodings and decodings of fixed inputs
// (tests/model/make_quant_vectors.py), and hand-built blocks check the layouts as facts.
#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "graph/dtype.hpp"
#include "model/dequantize.hpp"
#include "model/quantize.hpp"
#include "support/diagnostic.hpp"

using namespace kiln::model;

namespace {

std::vector<std::uint8_t> from_hex(const std::string& hex) {
  std::vector<std::uint8_t> out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<std::uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::vector<float> floats(const std::vector<std::uint8_t>& bytes) {
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

GgmlType type_named(const std::string& name) {
  if (name == "f16") return GgmlType::F16;
  if (name == "bf16") return GgmlType::BF16;
  if (name == "q8_0") return GgmlType::Q8_0;
  if (name == "q4_0") return GgmlType::Q4_0;
  if (name == "q4_1") return GgmlType::Q4_1;
  FAIL("unknown type " << name);
  return GgmlType::F32;
}

std::uint8_t f16_byte(float v, int which) {
  return static_cast<std::uint8_t>(kiln::graph::half_bits(v) >> (8 * which));
}

}  // namespace

TEST_CASE("dequantize: every block of the gguf package's vectors decodes bit for bit [model]") {
  std::ifstream in(std::string(KILN_SOURCE_DIR) + "/tests/model/quant_vectors.txt");
  REQUIRE(in);
  std::string line;
  int cases = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string type_name, label, input_hex, quantized_hex, dequantized_hex;
    std::int64_t count = 0;
    fields >> type_name >> label >> count >> input_hex >> quantized_hex >> dequantized_hex;
    INFO(type_name << " " << label);
    const GgmlType type = type_named(type_name);
    const std::vector<std::uint8_t> quantized = from_hex(quantized_hex);
    const std::vector<float> expected = floats(from_hex(dequantized_hex));
    REQUIRE(expected.size() == static_cast<std::size_t>(count));
    const std::vector<float> got = dequantize(type, quantized, count);
    CHECK(std::memcmp(got.data(), expected.data(), expected.size() * 4) == 0);
    // ggml's reference quantizers, which kiln follows, encode the same bytes.
    CHECK(quantize(type, floats(from_hex(input_hex))) == quantized);
    ++cases;
  }
  CHECK(cases == 35);
}

TEST_CASE("dequantize: hand-built blocks follow GGUF's layouts [model]") {
  SECTION("Q8_0: f16 scale, then 32 signed bytes") {
    std::vector<std::uint8_t> block = {f16_byte(0.5f, 0), f16_byte(0.5f, 1)};
    for (int j = 0; j < 32; ++j) block.push_back(static_cast<std::uint8_t>(static_cast<std::int8_t>(j - 16)));
    const std::vector<float> y = dequantize(GgmlType::Q8_0, block, 32);
    for (int j = 0; j < 32; ++j) CHECK(y[j] == 0.5f * static_cast<float>(j - 16));
  }
  SECTION("Q4_0: low nibbles are elements 0..15, high nibbles 16..31, value (q - 8) * d") {
    std::vector<std::uint8_t> block = {f16_byte(2.0f, 0), f16_byte(2.0f, 1)};
    for (int j = 0; j < 16; ++j) block.push_back(static_cast<std::uint8_t>(j | ((15 - j) << 4)));
    const std::vector<float> y = dequantize(GgmlType::Q4_0, block, 32);
    for (int j = 0; j < 16; ++j) {
      CHECK(y[j] == 2.0f * static_cast<float>(j - 8));
      CHECK(y[j + 16] == 2.0f * static_cast<float>(15 - j - 8));
    }
  }
  SECTION("Q4_1: f16 d, f16 m, nibbles, value q * d + m") {
    std::vector<std::uint8_t> block = {f16_byte(0.25f, 0), f16_byte(0.25f, 1), f16_byte(-1.0f, 0),
                                       f16_byte(-1.0f, 1)};
    for (int j = 0; j < 16; ++j) block.push_back(static_cast<std::uint8_t>(j | (3 << 4)));
    const std::vector<float> y = dequantize(GgmlType::Q4_1, block, 32);
    for (int j = 0; j < 16; ++j) {
      CHECK(y[j] == 0.25f * static_cast<float>(j) - 1.0f);
      CHECK(y[j + 16] == 0.25f * 3.0f - 1.0f);
    }
  }
  SECTION("BF16 is the high half of an f32") {
    const std::vector<std::uint8_t> data = {0x80, 0x3f, 0x00, 0xc0};  // 1.0, -2.0
    CHECK(dequantize(GgmlType::BF16, data, 2) == std::vector<float>{1.0f, -2.0f});
  }
}

TEST_CASE("dequantize: a tensor with a zero dim has no values [model]") {
  // Found by kiln_fuzz_gguf (corpus/gguf/empty-tensor.gguf): memcpy from an empty span.
  for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::Q4_1}) {
    CHECK(dequantize(type, {}, 0).empty());
    CHECK(quantize(type, {}).empty());
  }
}

TEST_CASE("dequantize: wrong sizes and unsupported types are user errors [model]") {
  const std::vector<std::uint8_t> block(34, 0);
  CHECK_THROWS_AS(dequantize(GgmlType::Q8_0, block, 31), kiln::support::UserError);
  CHECK_THROWS_AS(dequantize(GgmlType::Q8_0, block, 64), kiln::support::UserError);
  CHECK_THROWS_AS(dequantize(GgmlType::Q6_K, std::vector<std::uint8_t>(210), 256),
                  kiln::support::UserError);
  CHECK_THROWS_AS(quantize(GgmlType::Q4_0, std::vector<float>(33)), kiln::support::UserError);
}
