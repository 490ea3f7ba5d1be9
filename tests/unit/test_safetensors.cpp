// The safetensors reader (model/safetensors): a file written by the `safetensors` package
// (tests/model/make_safetensors_fixture.py) reads with the values NumPy gave it, files written
// here round-trip, and each kind of malformed input fails with the byte where it is wrong.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "model/safetensors.hpp"
#include "support/diagnostic.hpp"

using namespace kiln::model;
using Catch::Matchers::Contains;

namespace {

// A file: the header length, the header text as given (so tests can break it) and the data.
std::vector<std::uint8_t> file_of(const std::string& header,
                                  const std::vector<std::uint8_t>& data) {
  std::vector<std::uint8_t> bytes;
  bytes.reserve(8 + header.size() + data.size());
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<std::uint8_t>(header.size() >> (8 * i)));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

template <typename T>
void append(std::vector<std::uint8_t>& data, const std::vector<T>& values) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(values.data());
  data.insert(data.end(), p, p + values.size() * sizeof(T));
}

std::string error_of(const std::vector<std::uint8_t>& bytes) {
  try {
    parse_safetensors(bytes, "t.safetensors");
  } catch (const kiln::support::UserError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("safetensors: a file the safetensors package wrote reads with NumPy's values [model]") {
  const SafetensorsFile f(std::string(KILN_SOURCE_DIR) + "/tests/model/tiny.safetensors");
  const Safetensors& h = f.header();
  REQUIRE(h.metadata == std::vector<std::pair<std::string, std::string>>{{"format", "np"},
                                                                         {"source", "kiln tests"}});
  REQUIRE(h.tensors.size() == 5);

  const SafetensorsTensorInfo* w32 = h.find_tensor("w32");
  REQUIRE(w32);
  CHECK(w32->dtype == SafetensorsDtype::F32);
  CHECK(w32->shape == std::vector<std::int64_t>{3, 4});
  const std::vector<float> v32 = f.to_f32(*w32);
  REQUIRE(v32.size() == 12);
  CHECK(v32[0] == 0.695519745349884f);
  CHECK(v32[3] == -2.9249706268310547f);
  CHECK(v32[11] == -0.8769082427024841f);

  const SafetensorsTensorInfo* w16 = h.find_tensor("w16");
  REQUIRE(w16);
  CHECK(w16->dtype == SafetensorsDtype::F16);
  CHECK(w16->shape == std::vector<std::int64_t>{2, 5});
  const std::vector<float> v16 = f.to_f32(*w16);
  REQUIRE(v16.size() == 10);
  CHECK(v16[0] == 0.37353515625f);
  CHECK(v16[1] == 2.740234375f);
  CHECK(v16[9] == 0.2113037109375f);

  const SafetensorsTensorInfo* ids = h.find_tensor("ids");
  REQUIRE(ids);
  CHECK(ids->dtype == SafetensorsDtype::I64);
  const std::span<const std::uint8_t> id_bytes = f.data(*ids);
  REQUIRE(id_bytes.size() == 48);
  std::int64_t first = 0, last = 0;
  std::memcpy(&first, id_bytes.data(), 8);
  std::memcpy(&last, id_bytes.data() + 40, 8);
  CHECK(first == -3);
  CHECK(last == 2);
  CHECK_THROWS_WITH(f.to_f32(*ids), Contains("tensor 'ids': I64 does not convert to f32"));

  const SafetensorsTensorInfo* scalar = h.find_tensor("scalar");
  REQUIRE(scalar);
  CHECK(scalar->shape.empty());
  CHECK(f.to_f32(*scalar) == std::vector<float>{2.5f});

  const SafetensorsTensorInfo* empty = h.find_tensor("empty");
  REQUIRE(empty);
  CHECK(empty->elements == 0);
  CHECK(f.to_f32(*empty).empty());
  CHECK(h.find_tensor("absent") == nullptr);
}

TEST_CASE("safetensors: a file written here round-trips, BF16 and escapes included [model]") {
  std::vector<std::uint8_t> data;
  append<float>(data, {1.0f, -2.5f, 3.25f});
  append<std::uint16_t>(data, {0x3F80, 0xC000});  // BF16 1.0, -2.0
  append<std::int32_t>(data, {7, -8});
  const std::string header =
      R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]},)"
      R"("b\u00e9\n":{"dtype":"BF16","shape":[1,2],"data_offsets":[12,16]},)"
      R"( "c" : { "shape" : [2], "dtype" : "I32", "data_offsets" : [16, 24] },)"
      R"("__metadata__":{"k":"v\"\ud83d\ude00"}})"
      "   ";  // padding, as writers add
  const std::vector<std::uint8_t> bytes = file_of(header, data);
  const Safetensors h = parse_safetensors(bytes, "rt.safetensors");
  REQUIRE(h.tensors.size() == 3);
  CHECK(h.data_offset == 8 + header.size());
  CHECK(h.tensors[0].name == "a");
  CHECK(h.tensors[1].name == "b\xC3\xA9\n");
  CHECK(h.tensors[2].dtype == SafetensorsDtype::I32);
  CHECK(h.metadata ==
        std::vector<std::pair<std::string, std::string>>{{"k", "v\"\xF0\x9F\x98\x80"}});
  const auto span_of = [&](const SafetensorsTensorInfo& t) {
    return std::span<const std::uint8_t>(bytes).subspan(h.data_offset + t.begin, t.bytes());
  };
  CHECK(safetensors_to_f32(h.tensors[0], span_of(h.tensors[0])) ==
        std::vector<float>{1.0f, -2.5f, 3.25f});
  CHECK(safetensors_to_f32(h.tensors[1], span_of(h.tensors[1])) == std::vector<float>{1.0f, -2.0f});
}

TEST_CASE("safetensors: malformed files fail with the byte where they are wrong [model]") {
  const std::vector<std::uint8_t> four(4);
  const auto tensor = [](const std::string& dtype, const std::string& shape,
                         const std::string& offsets) {
    return R"({"x":{"dtype":")" + dtype + R"(","shape":)" + shape + R"(,"data_offsets":)" +
           offsets + "}}";
  };
  SECTION("truncated header length") {
    CHECK(error_of({1, 2, 3}) ==
          "error: t.safetensors: byte 0: truncated: the header length needs 8 bytes, 3 left");
  }
  SECTION("header length past the end") {
    std::vector<std::uint8_t> bytes = file_of("{}", {});
    bytes[0] = 200;
    CHECK(error_of(bytes) ==
          "error: t.safetensors: byte 0: truncated: header length 200 runs past the end (2 bytes "
          "left)");
  }
  SECTION("header cut inside the JSON") {
    CHECK(error_of(file_of(R"({"x":{"dtype")", {})) ==
          "error: t.safetensors: byte 21: header: JSON ends where ':' was expected");
  }
  SECTION("bad JSON") {
    CHECK(error_of(file_of(R"({"x":[1,,2]})", {})) ==
          "error: t.safetensors: byte 16: header: not JSON at ','");
    CHECK(error_of(file_of(R"({"x" 1})", {})) ==
          "error: t.safetensors: byte 13: header: expected ':', got '1'");
    CHECK(error_of(file_of(R"({} x)", {})) ==
          "error: t.safetensors: byte 11: header: unexpected text after the JSON object");
    CHECK(error_of(file_of(R"({"a":1,"a":2})", {})) ==
          "error: t.safetensors: byte 15: header: duplicate key 'a'");
    CHECK(error_of(file_of(R"({"x":1.5})", {})) ==
          "error: t.safetensors: byte 13: header: a number with a fraction or exponent (only "
          "integers belong here)");
    CHECK(error_of(file_of("[]", {})) ==
          "error: t.safetensors: byte 8: header: expected an object, got an array");
  }
  SECTION("bad dtype") {
    CHECK(error_of(file_of(tensor("F33", "[1]", "[0,4]"), four)) ==
          "error: t.safetensors: byte 22: tensor 'x': unknown dtype 'F33'");
  }
  SECTION("negative shape") {
    CHECK_THAT(error_of(file_of(tensor("F32", "[-1]", "[0,4]"), four)),
               Contains("byte 37: tensor 'x': shape: negative dimension"));
  }
  SECTION("size mismatch") {
    CHECK(error_of(file_of(tensor("F32", "[2]", "[0,4]"), four)) ==
          "error: t.safetensors: byte 55: tensor 'x': data_offsets span 4 bytes, but 2 F32 "
          "elements take 8");
  }
  SECTION("offsets out of range") {
    CHECK(error_of(file_of(tensor("F32", "[1]", "[4,8]"), four)) ==
          "error: t.safetensors: byte 55: tensor 'x': data_offsets: end 8 runs past the data "
          "section (4 bytes)");
    CHECK_THAT(error_of(file_of(tensor("F32", "[1]", "[4,0]"), four)),
               Contains("byte 55: tensor 'x': data_offsets: end 0 before begin 4"));
  }
  SECTION("overlapping tensors") {
    const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                               R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
    CHECK(error_of(file_of(header, std::vector<std::uint8_t>(8))) ==
          "error: t.safetensors: byte " + std::to_string(8 + header.size() + 4) +
              ": tensor 'b' [4, 8) overlaps tensor 'a' [0, 8)");
  }
  SECTION("a metadata value that is not a string") {
    CHECK(error_of(file_of(R"({"__metadata__":{"k":3}})", {})) ==
          "error: t.safetensors: byte 29: __metadata__ 'k': expected a string, got an integer");
  }
  SECTION("a missing or unknown field") {
    CHECK_THAT(error_of(file_of(R"({"x":{"dtype":"F32","shape":[]}})", {})),
               Contains("byte 13: tensor 'x': missing 'data_offsets'"));
    CHECK_THAT(
        error_of(file_of(R"({"x":{"dtype":"F32","shape":[],"data_offsets":[0,4],"y":0}})", four)),
        Contains("tensor 'x': unknown field 'y'"));
  }
}
