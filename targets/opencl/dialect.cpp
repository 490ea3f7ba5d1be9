// The OpenCL C dialect; see dialect.hpp.
#include "targets/opencl/dialect.hpp"

namespace kiln::targets::opencl {

std::string OpenClDialect::header() const {
  // half is a storage type only (vload_half/vstore_half need no extension); double where the
  // device has it.
  return R"(#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define KILN_HAS_F64 1
#endif
typedef long kiln_i64;
#define KILN_FN static inline
#define kiln_float_bits(f) as_uint(f)
#define kiln_bits_float(u) as_float(u)
#define kiln_trunc(x) trunc(x)
#define kiln_load_f16(p, i) vload_half((size_t)(i), (p))
#define kiln_store_f16(p, i, v) vstore_half((v), (size_t)(i), (p))
KILN_FN float kiln_round_f16(float x) {
  ushort h; vstore_half(x, 0, (half*)&h); return vload_half(0, (const half*)&h);
}
)";
}

std::string OpenClDialect::kernel_declaration(const std::string& name, const std::string& params,
                                              int block) const {
  return "__kernel __attribute__((reqd_work_group_size(" + std::to_string(block) +
         ", 1, 1))) void " + name + "(" + params + ")";
}

gpu::BufferParam OpenClDialect::buffer_param(std::size_t index, const std::string& element_type,
                                             bool writable, const std::string& name) const {
  const std::string k = std::to_string(index);
  const std::string constness = writable ? "" : "const ";
  gpu::BufferParam p;
  p.params = "__global " + constness + "char* kiln_b" + k + ", kiln_i64 kiln_o" + k;
  p.setup = "__global " + constness + element_type + "* const " + name + " = (__global " +
            constness + element_type + "*)(kiln_b" + k + " + kiln_o" + k + ");";
  return p;
}

std::string OpenClDialect::local_array(const std::string& type, const std::string& name,
                                       int size) const {
  return "__local " + type + " " + name + "[" + std::to_string(size) + "];";
}

}  // namespace kiln::targets::opencl
