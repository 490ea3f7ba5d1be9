// libFuzzer target for the safetensors reader (model/safetensors): any bytes either read or fail
// with a UserError; what reads has its tensors inside the input, sized by dtype and shape, not
// overlapping (tests/fuzz/safetensors_contract.hpp). Anything else is a bug.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "tests/fuzz/safetensors_contract.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (!kiln::testing::safetensors_contract_holds({data, size})) {
    std::fprintf(stderr, "safetensors contract broken\n");
    std::abort();
  }
  return 0;
}
