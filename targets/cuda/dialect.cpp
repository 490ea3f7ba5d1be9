// The CUDA dialect; see dialect.hpp.
#include "targets/cuda/dialect.hpp"

namespace kiln::targets::cuda {

std::string CudaDialect::header() const {
  return R"(#include <cuda_fp16.h>
typedef long long kiln_i64;
#define KILN_HAS_F64 1
#define KILN_FN static __device__ __forceinline__
#define kiln_float_bits(f) __float_as_uint(f)
#define kiln_bits_float(u) __uint_as_float(u)
#define kiln_trunc(x) trunc(x)
#define kiln_load_f16(p, i) __half2float((p)[i])
#define kiln_store_f16(p, i, v) ((p)[i] = __float2half_rn(v))
KILN_FN float kiln_round_f16(float x) { return __half2float(__float2half_rn(x)); }
)";
}

std::string CudaDialect::kernel_declaration(const std::string& name, const std::string& params,
                                            int block) const {
  return "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(block) + ") " + name +
         "(" + params + ")";
}

gpu::BufferParam CudaDialect::buffer_param(std::size_t, const std::string& element_type,
                                           bool writable, const std::string& name) const {
  return {(writable ? "" : "const ") + element_type + "* " + name, ""};
}

std::string CudaDialect::local_array(const std::string& type, const std::string& name,
                                     int size) const {
  return "__shared__ " + type + " " + name + "[" + std::to_string(size) + "];";
}

std::string CudaDialect::shuffle_xor(const std::string& type, const std::string& value,
                                     const std::string& lane_mask) const {
  // Every lane of the warp takes part (the renderer calls it in group-uniform code).
  const std::string call = "__shfl_xor_sync(0xffffffffu, ";
  if (type == "unsigned char") return "(unsigned char)" + call + "(int)(" + value + "), (int)(" + lane_mask + "))";
  return call + value + ", (int)(" + lane_mask + "))";
}

std::string CudaDialect::nan(bool f64) const {
  return f64 ? "__longlong_as_double(0x7ff8000000000000LL)" : "__int_as_float(0x7fc00000)";
}

std::string CudaDialect::infinity(bool f64) const {
  return f64 ? "__longlong_as_double(0x7ff0000000000000LL)" : "__int_as_float(0x7f800000)";
}

}  // namespace kiln::targets::cuda
