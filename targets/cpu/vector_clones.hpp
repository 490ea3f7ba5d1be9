// One clone of a function per x86 level, chosen once at load time: the library is built for
// the baseline, the machine usually has FMA, F16C and wider registers. Helpers marked
// KILN_INLINE are inlined into each clone, so they are compiled for its instruction set (no
// vector crosses a call, so GCC's note about the AVX ABI does not apply).
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define KILN_VECTOR_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define KILN_VECTOR_CLONES
#endif
#define KILN_INLINE __attribute__((always_inline)) inline
