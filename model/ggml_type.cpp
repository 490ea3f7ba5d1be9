// ggml type ids and block layouts (see ggml_type.hpp); the sizes are ggml's (ggml.c type_traits).
#include "model/ggml_type.hpp"

#include <string>

#include "support/diagnostic.hpp"

namespace kiln::model {

namespace {

struct Entry {
  GgmlType type;
  GgmlTypeInfo info;
};

// Q8_0: f16 d, 32 x int8.  Q4_0: f16 d, 16 bytes of nibbles.  Q4_1: f16 d, f16 m, 16 bytes.
constexpr Entry kTypes[] = {
    {GgmlType::F32, {"f32", 1, 4}},        {GgmlType::F16, {"f16", 1, 2}},
    {GgmlType::Q4_0, {"q4_0", 32, 18}},    {GgmlType::Q4_1, {"q4_1", 32, 20}},
    {GgmlType::Q5_0, {"q5_0", 32, 22}},    {GgmlType::Q5_1, {"q5_1", 32, 24}},
    {GgmlType::Q8_0, {"q8_0", 32, 34}},    {GgmlType::Q8_1, {"q8_1", 32, 36}},
    {GgmlType::Q2_K, {"q2_k", 256, 84}},   {GgmlType::Q3_K, {"q3_k", 256, 110}},
    {GgmlType::Q4_K, {"q4_k", 256, 144}},  {GgmlType::Q5_K, {"q5_k", 256, 176}},
    {GgmlType::Q6_K, {"q6_k", 256, 210}},  {GgmlType::Q8_K, {"q8_k", 256, 292}},
    {GgmlType::I8, {"i8", 1, 1}},          {GgmlType::I16, {"i16", 1, 2}},
    {GgmlType::I32, {"i32", 1, 4}},        {GgmlType::I64, {"i64", 1, 8}},
    {GgmlType::F64, {"f64", 1, 8}},        {GgmlType::BF16, {"bf16", 1, 2}},
};

}  // namespace

std::optional<GgmlTypeInfo> ggml_type_info(std::uint32_t id) {
  for (const Entry& e : kTypes) {
    if (static_cast<std::uint32_t>(e.type) == id) return e.info;
  }
  return std::nullopt;
}

GgmlTypeInfo ggml_type_info(GgmlType type) {
  std::optional<GgmlTypeInfo> info = ggml_type_info(static_cast<std::uint32_t>(type));
  KILN_ASSERT(info, "unknown ggml type " + std::to_string(static_cast<std::uint32_t>(type)));
  return *info;
}

bool is_supported(GgmlType type) {
  switch (type) {
    case GgmlType::F32:
    case GgmlType::F16:
    case GgmlType::BF16:
    case GgmlType::Q8_0:
    case GgmlType::Q4_0:
    case GgmlType::Q4_1: return true;
    default: return false;
  }
}

}  // namespace kiln::model
