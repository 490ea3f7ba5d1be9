// The GGUF reader and writer: a tiny LLaMA in every supported dtype reads back exactly what was
// written; every metadata type round-trips; truncated and malformed files are user errors that
// say what is wrong and at which byte.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "model/gguf.hpp"
#include "model/gguf_writer.hpp"
#include "model/llama_gguf.hpp"
#include "support/diagnostic.hpp"
#include "tests/unit/tiny_llama.hpp"

using namespace kiln::model;
using kiln::support::UserError;

namespace {

std::string error_of(const std::vector<std::uint8_t>& bytes) {
  try {
    parse_gguf(bytes, "t.gguf");
  } catch (const UserError& e) {
    return e.message();
  }
  return "";
}

template <typename T>
void put(std::vector<std::uint8_t>& b, T v) {
  const std::size_t at = b.size();
  b.resize(at + sizeof(T));
  std::memcpy(b.data() + at, &v, sizeof(T));
}

void put_string(std::vector<std::uint8_t>& b, const std::string& s) {
  put<std::uint64_t>(b, s.size());
  b.insert(b.end(), s.begin(), s.end());
}

// A header by hand: magic, version, counts.
std::vector<std::uint8_t> header(std::uint32_t version, std::uint64_t tensors, std::uint64_t kvs) {
  std::vector<std::uint8_t> b = {'G', 'G', 'U', 'F'};
  put(b, version);
  put(b, tensors);
  put(b, kvs);
  return b;
}

GgufValue every_type_array() {
  std::vector<GgufValue> inner = {GgufValue::of_string("a"), GgufValue::of_string("")};
  return GgufValue::of_array(GgufType::Array,
                             {GgufValue::of_array(GgufType::String, inner),
                              GgufValue::of_array(GgufType::String, {})});
}

}  // namespace

TEST_CASE("gguf: a tiny LLaMA in every supported dtype reads back exactly [model]") {
  for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0,
                        GgmlType::Q4_0, GgmlType::Q4_1}) {
    INFO(ggml_type_info(type).name);
    const std::string path = kiln::testing::temp_path("tiny.gguf");
    const kiln::testing::TinyLlama written = kiln::testing::write_tiny_llama(path, type, 7, true);
    const GgufFile file(path);
    const Gguf& g = file.gguf();
    CHECK(g.version == 3);
    REQUIRE(g.metadata.size() == written.metadata.size());
    for (std::size_t i = 0; i < g.metadata.size(); ++i) {
      CHECK(g.metadata[i].first == written.metadata[i].first);
      CHECK(g.metadata[i].second == written.metadata[i].second);
    }
    CHECK(g.tensors.size() == 2 + 9 * 2 + 1);
    for (const GgufTensorInfo& t : g.tensors) {
      CHECK(t.offset % g.alignment == 0);
      CHECK(t.type == (t.shape.size() == 2 ? type : GgmlType::F32));
      // In place: a tensor's bytes are the file's bytes at its offset.
      CHECK(file.data(t).data() == file.data(g.tensors[0]).data() + (t.offset - g.tensors[0].offset));
    }
    const GgufTensorInfo* q = g.find_tensor("blk.1.attn_q.weight");
    REQUIRE(q != nullptr);
    CHECK(q->shape == std::vector<std::int64_t>{64, 64});

    const auto config = llama_config(g, 64);
    CHECK(config.layers == 2);
    CHECK(config.hidden == 64);
    CHECK(config.heads == 4);
    CHECK(config.kv_heads == 2);
    CHECK(config.head_dim == 16);
    CHECK(config.intermediate == 96);
    CHECK(config.vocab == written.config.vocab);
    CHECK(config.rope_base == 10000.0);
    CHECK(config.rms_eps == Approx(1e-5).epsilon(1e-6));
    CHECK_FALSE(config.tied_embeddings);
    int loaded = 0;
    std::map<std::string, const GgufTensorInfo*> by_graph_name;
    for (const GgufTensorInfo& t : g.tensors) by_graph_name[llama_graph_name(t.name)] = &t;
    load_llama_weights(file, config, [&](const std::string& name, const kiln::graph::NativeTensor& native) {
      const kiln::graph::Tensor t = kiln::graph::to_tensor(native);
      // An f32 tensor in the graph's row order (q and k rows are reordered) is the mapped
      // file's bytes, not a copy.
      const GgufTensorInfo& info = *by_graph_name.at(name);
      const bool rope_rows = name.find(".attn.q.") != std::string::npos ||
                             name.find(".attn.k.") != std::string::npos;
      CHECK(native.is_borrowed() == (info.type == GgmlType::F32 && !rope_rows));
      if (native.is_borrowed()) {
        CHECK(static_cast<const void*>(native.bytes().data()) == file.data(info).data());
      }
      INFO(name);
      REQUIRE(written.weights.count(name) == 1);
      const std::vector<float>& want = written.weights.at(name);
      REQUIRE(t.data.size() == want.size());
      bool same = true;
      for (std::size_t i = 0; i < want.size(); ++i) same = same && t.data[i] == static_cast<double>(want[i]);
      CHECK(same);
      ++loaded;
    });
    CHECK(loaded == static_cast<int>(written.weights.size()));
    std::filesystem::remove(path);
  }
}

TEST_CASE("gguf: every metadata value type round-trips through the writer [model]") {
  GgufWriter w;
  GgufValue u8, i8, u16, i16, i64, f64;
  u8.type = GgufType::U8, u8.integer = 200, u8.unsigned_integer = 200;
  i8.type = GgufType::I8, i8.integer = -100, i8.unsigned_integer = static_cast<std::uint64_t>(-100);
  u16.type = GgufType::U16, u16.integer = 60000, u16.unsigned_integer = 60000;
  i16.type = GgufType::I16, i16.integer = -30000, i16.unsigned_integer = static_cast<std::uint64_t>(-30000);
  i64.type = GgufType::I64, i64.integer = -(std::int64_t(1) << 40);
  i64.unsigned_integer = static_cast<std::uint64_t>(i64.integer);
  f64.type = GgufType::F64, f64.real = 0.1;
  const std::vector<std::pair<std::string, GgufValue>> values = {
      {"u8", u8}, {"i8", i8}, {"u16", u16}, {"i16", i16},
      {"u32", GgufValue::of_u32(4000000000u)}, {"i32", GgufValue::of_i32(-7)},
      {"f32", GgufValue::of_f32(1.5f)}, {"bool", GgufValue::of_bool(true)},
      {"string", GgufValue::of_string("h\xC3\xA9llo")},
      {"u64", GgufValue::of_u64(~std::uint64_t(0))}, {"i64", i64}, {"f64", f64},
      {"array", every_type_array()},
  };
  for (const auto& [k, v] : values) w.set(k, v);
  const Gguf g = parse_gguf(w.bytes(), "t.gguf");
  REQUIRE(g.metadata.size() == values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    INFO(values[i].first);
    CHECK(g.metadata[i].first == values[i].first);
    CHECK(g.metadata[i].second == values[i].second);
  }
  CHECK(g.integer("u32") == 4000000000);
  CHECK(g.real("f64") == 0.1);
  CHECK(g.optional_bool("bool") == true);
  CHECK_THROWS_WITH(g.integer("u64"), Catch::Contains("'u64' is too large"));
  CHECK_THROWS_WITH(g.string("u8"), Catch::Contains("'u8' must be a string, got u8"));
  CHECK_THROWS_WITH(g.integer("missing"), Catch::Contains("metadata 'missing' is missing"));
}

TEST_CASE("gguf: a file cut at any byte is a user error naming a byte offset [model]") {
  const std::string path = kiln::testing::temp_path("cut.gguf");
  kiln::testing::write_tiny_llama(path, GgmlType::Q4_0);
  std::vector<std::uint8_t> bytes;
  {
    const MappedFile f(path);
    bytes.assign(f.bytes().begin(), f.bytes().end());
  }
  std::filesystem::remove(path);
  const Gguf whole = parse_gguf(bytes, "t.gguf");
  // Every cut inside the header and metadata, and cuts through the data.
  std::vector<std::size_t> cuts;
  for (std::size_t n = 0; n < whole.data_offset; n += (n < 4096 ? 1 : 97)) cuts.push_back(n);
  for (std::size_t n = whole.data_offset; n < bytes.size(); n += 4099) cuts.push_back(n);
  cuts.push_back(bytes.size() - 1);
  for (std::size_t n : cuts) {
    INFO("cut at " << n);
    const std::string e = error_of({bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n)});
    CHECK_THAT(e, Catch::StartsWith("t.gguf: byte "));
  }
}

TEST_CASE("gguf: malformed files say what is wrong and where [model]") {
  CHECK(error_of({'G', 'G', 'M', 'L', 0, 0, 0, 0}) ==
        "t.gguf: byte 0: not a GGUF file (it does not start with \"GGUF\")");
  CHECK(error_of(header(1, 0, 0)) == "t.gguf: byte 4: GGUF version 1 is not supported (2 or 3)");
  CHECK(error_of(header(3, 0, 0)).empty());
  CHECK(error_of(header(3, 1000, 0)) == "t.gguf: byte 8: tensor count 1000 runs past the end");

  std::vector<std::uint8_t> b = header(3, 0, 1);
  put_string(b, "k");
  put<std::uint32_t>(b, 13);
  CHECK(error_of(b) == "t.gguf: byte 33: metadata 'k': unknown value type 13");

  b = header(3, 0, 1);
  put_string(b, "k");
  put<std::uint32_t>(b, 8);
  put<std::uint64_t>(b, 1ull << 60);
  CHECK_THAT(error_of(b), Catch::StartsWith("t.gguf: byte 37: a string: length 1152921504606846976 runs past the end"));

  b = header(3, 0, 1);
  put_string(b, "k");
  put<std::uint32_t>(b, 9);
  put<std::uint32_t>(b, 10);
  put<std::uint64_t>(b, 1ull << 62);
  CHECK_THAT(error_of(b), Catch::StartsWith("t.gguf: byte 41: metadata 'k': array of 4611686018427387904 u64 runs past the end"));

  b = header(3, 0, 2);
  put_string(b, "k");
  put<std::uint32_t>(b, 7);
  put<std::uint8_t>(b, 1);
  put_string(b, "k");
  put<std::uint32_t>(b, 7);
  put<std::uint8_t>(b, 2);
  CHECK(error_of(b) == "t.gguf: byte 38: metadata key 'k' appears twice");

  b = header(3, 0, 1);
  put_string(b, "general.alignment");
  put<std::uint32_t>(b, 4);
  put<std::uint32_t>(b, 24);
  CHECK(error_of(b) == "t.gguf: metadata 'general.alignment' must be a u32 power of two");

  // Tensor infos: an unknown type, rows not whole blocks, a misaligned offset, data past the end,
  // two tensors over the same bytes.
  auto tensor_file = [](std::uint32_t type, std::uint64_t ne0, std::uint64_t offset2,
                        std::size_t data_bytes) {
    std::vector<std::uint8_t> f = header(3, 2, 0);
    put_string(f, "a");
    put<std::uint32_t>(f, 1);
    put<std::uint64_t>(f, ne0);
    put<std::uint32_t>(f, type);
    put<std::uint64_t>(f, 0);
    put_string(f, "b");
    put<std::uint32_t>(f, 1);
    put<std::uint64_t>(f, 8);
    put<std::uint32_t>(f, 0);
    put<std::uint64_t>(f, offset2);
    f.resize((f.size() + 31) / 32 * 32 + data_bytes, 0);
    return f;
  };
  CHECK(error_of(tensor_file(0, 8, 32, 64)).empty());
  CHECK(error_of(tensor_file(99, 8, 32, 64)) == "t.gguf: byte 45: tensor 'a': unknown ggml type 99");
  CHECK(error_of(tensor_file(8, 8, 64, 96)) ==
        "t.gguf: byte 33: tensor 'a': its rows of 8 elements are not whole blocks of 32 (q8_0)");
  // A scalar (no dims) of a block type (found by kiln_fuzz_gguf, corpus/gguf/scalar-q4.gguf).
  std::vector<std::uint8_t> scalar = header(3, 1, 0);
  put_string(scalar, "s");
  put<std::uint32_t>(scalar, 0);
  put<std::uint32_t>(scalar, 2);
  put<std::uint64_t>(scalar, 0);
  scalar.resize(64, 0);
  CHECK(error_of(scalar) ==
        "t.gguf: byte 33: tensor 's': its rows of 1 elements are not whole blocks of 32 (q4_0)");
  CHECK(error_of(tensor_file(0, 8, 40, 96)) ==
        "t.gguf: byte 82: tensor 'b': offset 40 is not a multiple of the alignment 32");
  CHECK_THAT(error_of(tensor_file(0, 8, 32, 40)),
             Catch::StartsWith("t.gguf: byte 57: truncated: tensor 'b' (32 bytes at data offset 32) runs past the end"));
  CHECK(error_of(tensor_file(0, 16, 32, 64)) == "t.gguf: byte 57: tensor 'b' overlaps tensor 'a'");
}

TEST_CASE("gguf: a missing or unreadable file is a user error [model]") {
  CHECK_THROWS_WITH(GgufFile("/nonexistent/model.gguf"),
                    Catch::Contains("/nonexistent/model.gguf: cannot open: No such file or directory"));
}

namespace {

// A one-layer LLaMA of f32 weights (hidden 32, 2 heads over 1 kv head, FFN 32, vocab 4), with
// `change` applied to the writer before the tensors are added and `skip` left out.
std::string small_llama(const std::string& name, const std::function<void(GgufWriter&)>& change,
                        const std::string& skip = "",
                        std::vector<std::int64_t> q_shape = {32, 32}) {
  GgufWriter w;
  w.set("general.architecture", GgufValue::of_string("llama"));
  w.set("llama.block_count", GgufValue::of_u32(1));
  w.set("llama.embedding_length", GgufValue::of_u32(32));
  w.set("llama.feed_forward_length", GgufValue::of_u32(32));
  w.set("llama.attention.head_count", GgufValue::of_u32(2));
  w.set("llama.attention.head_count_kv", GgufValue::of_u32(1));
  w.set("llama.attention.layer_norm_rms_epsilon", GgufValue::of_f32(1e-5f));
  w.set("llama.context_length", GgufValue::of_u32(16));
  change(w);
  auto add = [&](const std::string& t, std::vector<std::int64_t> shape) {
    if (t == skip) return;
    std::int64_t n = 1;
    for (std::int64_t d : shape) n *= d;
    w.add_tensor(t, GgmlType::F32, shape, std::vector<std::uint8_t>(static_cast<std::size_t>(n) * 4));
  };
  add("token_embd.weight", {4, 32});
  add("blk.0.attn_norm.weight", {32});
  add("blk.0.attn_q.weight", q_shape);
  add("blk.0.attn_k.weight", {16, 32});
  add("blk.0.attn_v.weight", {16, 32});
  add("blk.0.attn_output.weight", {32, 32});
  add("blk.0.ffn_norm.weight", {32});
  add("blk.0.ffn_gate.weight", {32, 32});
  add("blk.0.ffn_up.weight", {32, 32});
  add("blk.0.ffn_down.weight", {32, 32});
  add("output_norm.weight", {32});
  const std::string path = kiln::testing::temp_path(name);
  w.write(path);
  return path;
}

std::string load_error(const std::string& path) {
  std::string error;
  try {
    const GgufFile file(path);
    const auto config = llama_config(file.gguf(), 16);
    load_llama_weights(file, config, [](const std::string&, const kiln::graph::NativeTensor&) {});
  } catch (const UserError& e) {
    error = e.message();
  }
  std::filesystem::remove(path);
  return error;
}

}  // namespace

TEST_CASE("llama: a file the decoder cannot use is refused by name [model]") {
  const auto nothing = [](GgufWriter&) {};
  CHECK(load_error(small_llama("ok.gguf", nothing)).empty());
  CHECK_THAT(load_error(small_llama("arch.gguf", [](GgufWriter& w) {
               w.set("general.architecture", GgufValue::of_string("gemma3"));
             })),
             Catch::EndsWith("architecture 'gemma3' (general.architecture) is not supported; kiln loads 'llama'"));
  CHECK_THAT(load_error(small_llama("scaling.gguf", [](GgufWriter& w) {
               w.set("llama.rope.scaling.type", GgufValue::of_string("linear"));
             })),
             Catch::EndsWith("rope scaling 'linear' (llama.rope.scaling.type) is not supported"));
  CHECK_THAT(load_error(small_llama("heads.gguf", [](GgufWriter& w) {
               w.set("llama.attention.head_count_kv", GgufValue::of_u32(3));
             })),
             Catch::EndsWith("head_count 2 is not a multiple of head_count_kv 3"));
  CHECK_THAT(load_error(small_llama("missing.gguf", nothing, "blk.0.ffn_up.weight")),
             Catch::EndsWith("the decoder's weight layers.0.mlp.up.weight [32, 32] has no tensor in the file"));
  CHECK_THAT(load_error(small_llama("shape.gguf", nothing, "", {32, 16})),
             Catch::EndsWith("tensor 'blk.0.attn_q.weight' is [32, 16], the decoder's layers.0.attn.q.weight is [32, 32]"));
  CHECK_THAT(load_error(small_llama("extra.gguf", [](GgufWriter& w) {
               w.add_tensor("rope_freqs.weight", GgmlType::F32, {8}, std::vector<std::uint8_t>(32));
             })),
             Catch::EndsWith("tensor 'rope_freqs.weight' is not a weight of the LLaMA decoder (1 layers)"));
}
