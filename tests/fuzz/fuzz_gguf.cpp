// libFuzzer target for the GGUF reader (model/gguf): any bytes either read or fail with a
// UserError; what reads has its tensors inside the input and its metadata round-trips through
// the writer (tests/fuzz/gguf_contract.hpp). Anything else is a bug.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "tests/fuzz/gguf_contract.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (!kiln::testing::gguf_contract_holds({data, size})) {
    std::fprintf(stderr, "GGUF contract broken\n");
    std::abort();
  }
  return 0;
}
