# Warnings for every kiln target; CI turns them into errors (KILN_WERROR).
add_library(kiln_warnings INTERFACE)
target_compile_options(kiln_warnings INTERFACE -Wall -Wextra -Wpedantic -Wno-unused-parameter
  $<$<CXX_COMPILER_ID:GNU>:-Wshadow=local> $<$<BOOL:${KILN_WERROR}>:-Werror>)
if(KILN_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
