# Third-party libraries, all from Debian packages (scripts/install-deps installs them).
find_package(pegtl 3.2 REQUIRED CONFIG)          # tao-pegtl-dev
find_package(CLI11 REQUIRED CONFIG)              # libcli11-dev
find_package(Catch2 2.13 REQUIRED CONFIG)        # catch2
find_package(Boost 1.74 REQUIRED COMPONENTS graph) # libboost-graph-dev (from the tensor-graph issue on)
find_path(XXHASH_INCLUDE_DIR xxhash.h REQUIRED)  # libxxhash-dev
find_library(XXHASH_LIBRARY xxhash REQUIRED)
add_library(xxhash::xxhash UNKNOWN IMPORTED)
set_target_properties(xxhash::xxhash PROPERTIES IMPORTED_LOCATION ${XXHASH_LIBRARY}
  INTERFACE_INCLUDE_DIRECTORIES ${XXHASH_INCLUDE_DIR})
include(Catch)
# libopenblas-dev: the CPU target's Gemm. Its own cblas.h, not whichever BLAS the alternatives
# system links as /usr/include/.../cblas.h.
find_path(OPENBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas-pthread openblas REQUIRED
  NO_DEFAULT_PATH PATHS /usr/include/x86_64-linux-gnu /usr/include/aarch64-linux-gnu /usr/include)
find_library(OPENBLAS_LIBRARY openblas REQUIRED)
add_library(openblas::openblas UNKNOWN IMPORTED)
set_target_properties(openblas::openblas PROPERTIES IMPORTED_LOCATION ${OPENBLAS_LIBRARY}
  INTERFACE_INCLUDE_DIRECTORIES ${OPENBLAS_INCLUDE_DIR})
