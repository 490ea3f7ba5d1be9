// The search's cost model (DESIGN §7: "start from a cost model"): a candidate's time estimated,
// without running it, from the flops and bytes of its Body or library call against this
// machine's measured FMA peak and memory bandwidth (a roofline), times penalties the CPU code
// generator is known to pay. It only ranks the candidates of an e-class (rank_candidates.hpp),
// so that the search compiles, checks and measures the most promising few; a measured time
// always replaces it.
#pragma once

#include <filesystem>
#include <string>

#include "compiler/measure.hpp"
#include "graph/expr.hpp"

namespace kiln::compiler {

// What one core of this machine does at best.
struct MachineRates {
  double flops_per_second = 0;  // independent chains of vector FMAs
  double bytes_per_second = 0;  // a large memcpy, bytes read plus written
};

// Measured now (about 0.1 s).
MachineRates measure_machine_rates();
// Measured once per machine: read from `file` when it holds them, else measured and written
// there (a file that cannot be written is not an error: the next compile measures again).
MachineRates machine_rates(const std::filesystem::path& file);
// This machine's, cached in `measurer`'s cache folder under its fingerprint.
MachineRates machine_rates(const Measurer& measurer);

// This process's memcpy bandwidth (bytes read plus written per second), measured on first use.
double copy_bandwidth();

struct CostEstimate {
  double flops = 0;    // arithmetic at the real dims (a transcendental counts for several)
  double bytes = 0;    // each buffer once: what a kernel must move at least
  double penalty = 1;  // >= 1: a strided or short innermost loop, a serial loop
  double seconds = 0;  // max(flops / rate, bytes / bandwidth) * penalty + a launch
};

// The estimate for `candidate` at `dims` (which bind every dim it mentions).
//
// A Body's node runs as often as the loops its variables need (the code generator computes it in
// the innermost one: loop-invariant code motion), so flops are counted per node; arithmetic runs
// at half the FMA peak (what measured kernels and library calls of these sizes reach). The
// innermost loop is the one the code generator vectorizes (a float reduction's, else the last
// output loop): a load whose position steps by more than one element there is strided (no vector
// load, a cache line per element: x4); an
// innermost loop shorter than a vector wastes lanes (x2), and a serial loop does not vectorize
// (x2).
CostEstimate estimate_cost(const Candidate& candidate, const graph::DimValues& dims,
                           const MachineRates& rates);

}  // namespace kiln::compiler
