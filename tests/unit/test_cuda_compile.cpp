// targets/cuda without a GPU: every kernel of the examples (default schedules) and every schedule
// choice of the conformance set and of attention-shaped Bodies with a multi-component reduction
// state is rendered as CUDA C++ and compiled by NVRTC to an sm_90 cubin,
// with ptxas's report of registers and spills (no spills allowed in the examples); the disk
// cache makes a second compile free; a broken source gives NVRTC's message; the OpenCL and CUDA
// renderings of one schedule differ only in the dialect's words; without a driver the target
// says why it is unavailable.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "support/diagnostic.hpp"
#include "targets/cuda/cuda_target.hpp"
#include "targets/cuda/dialect.hpp"
#include "targets/cuda/nvrtc.hpp"
#include "targets/gpu/render.hpp"
#include "targets/registry.hpp"
#include "tests/unit/body_cases.hpp"
#include "tests/unit/row_state_bodies.hpp"

using namespace kiln;
using kiln::testing::BodyCase;
using targets::cuda::Cubin;
using targets::cuda::KernelResources;
using targets::cuda::NvrtcCompiler;
using targets::gpu::Schedule;

namespace {

std::filesystem::path fresh_cache(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("kiln-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

// Translation units of every (body, schedule) pair, each kernel once, 24 kernels a unit;
// kernel names in order.
std::vector<std::string> units(const std::vector<std::pair<graph::Body, Schedule>>& kernels,
                               std::vector<std::string>& names) {
  targets::cuda::CudaDialect dialect;
  const std::string prelude = targets::gpu::gpu_prelude(dialect);
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& [body, schedule] : kernels) {
    targets::gpu::KernelSource k = targets::gpu::render_gpu_kernel(body, schedule, dialect);
    if (!seen.insert(k.name).second) continue;
    if (names.size() % 24 == 0) out.push_back(prelude);
    names.push_back(k.name);
    out.back() += "\n" + k.code;
  }
  return out;
}

// Compiles the units in parallel and checks that every kernel has a resource report; returns
// the reports by name.
std::map<std::string, KernelResources> compile_all(const NvrtcCompiler& compiler,
                                                   const std::vector<std::string>& sources,
                                                   const std::vector<std::string>& names) {
  std::map<std::string, KernelResources> by_name;
  for (const Cubin& cubin : compiler.compile_all(sources)) {
    INFO(cubin.log.substr(0, 4000));
    REQUIRE_FALSE(cubin.image.empty());
    CHECK(cubin.image.substr(0, 4) == "\x7f" "ELF");
    for (const KernelResources& r : cubin.resources) by_name[r.name] = r;
  }
  for (const std::string& n : names) {
    INFO(n);
    REQUIRE(by_name.count(n));
    CHECK(by_name[n].registers > 0);
  }
  return by_name;
}

}  // namespace

TEST_CASE("cuda: every example kernel compiles to an sm_90 cubin without spills", "[cuda]") {
  std::vector<std::pair<graph::Body, Schedule>> kernels;
  for (const BodyCase& c : kiln::testing::example_cases()) {
    kernels.emplace_back(c.body, targets::gpu::default_schedule(c.body));
  }
  std::vector<std::string> names;
  const std::vector<std::string> sources = units(kernels, names);
  const auto cache = fresh_cache("nvrtc");
  NvrtcCompiler compiler("sm_90", cache);
  const auto resources = compile_all(compiler, sources, names);
  int most = 0;
  std::string heaviest;
  for (const std::string& n : names) {
    const KernelResources& r = resources.at(n);
    INFO(n << ": " << r.registers << " registers, " << r.spill_stores << " bytes spill stores, "
           << r.spill_loads << " bytes spill loads");
    CHECK(r.spill_stores == 0);
    CHECK(r.spill_loads == 0);
    if (r.registers > most) most = r.registers, heaviest = n;
  }
  std::cout << names.size() << " example kernels for sm_90: at most " << most
            << " registers per thread (" << heaviest << "), no spills\n";

  // The same sources again: from the cache, the same images.
  const Cubin first = compiler.compile(sources[0]);
  CHECK(first.from_cache);
  for (const Cubin& again : compiler.compile_all(sources)) CHECK(again.from_cache);
  CHECK(compiler.compile_all(sources, 1)[0].image == first.image);
  std::filesystem::remove_all(cache);
}

TEST_CASE("cuda: every schedule choice of the conformance set compiles for sm_90", "[cuda]") {
  std::vector<std::pair<graph::Body, Schedule>> kernels;
  std::size_t group_reductions = 0;
  for (const BodyCase& c : kiln::testing::conformance_cases()) {
    for (const Schedule& s : targets::gpu::schedule_choices(c.body)) {
      kernels.emplace_back(c.body, s);
      group_reductions += s.group_reduce;
    }
  }
  CHECK(group_reductions > 20);
  std::vector<std::string> names;
  const std::vector<std::string> sources = units(kernels, names);
  const auto cache = fresh_cache("nvrtc-choices");
  compile_all(NvrtcCompiler("sm_90", cache), sources, names);
  std::filesystem::remove_all(cache);
}

TEST_CASE("cuda: multi-component reductions compile for sm_90 under every schedule choice",
          "[cuda]") {
  // The online softmax's three-component state over two elements, in every schedule's fold
  // (serial, group tree, sub-group butterfly); the device test runs them.
  std::vector<std::pair<graph::Body, Schedule>> kernels;
  for (const kiln::testing::AttentionShape& shape :
       {kiln::testing::AttentionShape{16, 16, kiln::testing::ScoreMask::Causal, true},
        kiln::testing::AttentionShape{8, 16, kiln::testing::ScoreMask::Input, true}}) {
    const graph::Body body = kiln::testing::attention_body(shape);
    for (const Schedule& s : targets::gpu::schedule_choices(body)) kernels.emplace_back(body, s);
  }
  CHECK(kernels.size() > 2);
  std::vector<std::string> names;
  const std::vector<std::string> sources = units(kernels, names);
  const auto cache = fresh_cache("nvrtc-multi-component");
  compile_all(NvrtcCompiler("sm_90", cache), sources, names);
  std::filesystem::remove_all(cache);
}

TEST_CASE("cuda: a source that does not compile gives NVRTC's message", "[cuda]") {
  const auto cache = fresh_cache("nvrtc-broken");
  const Cubin cubin = NvrtcCompiler("sm_90", cache).compile("extern \"C\" __global__ void f() { nope; }");
  CHECK(cubin.image.empty());
  CHECK(cubin.log.find("identifier \"nope\" is undefined") != std::string::npos);
  std::filesystem::remove_all(cache);
}

TEST_CASE("cuda: the ptxas report is parsed per entry function", "[cuda]") {
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'kiln_a' for 'sm_90'\n"
      "ptxas info    : Function properties for kiln_a\n"
      "    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 392 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function 'kiln_b' for 'sm_90'\n"
      "ptxas info    : Used 7 registers, used 0 barriers, 368 bytes cmem[0]\n";
  const auto r = targets::cuda::parse_ptxas_report(log);
  REQUIRE(r.size() == 2);
  CHECK(r[0].name == "kiln_a");
  CHECK(r[0].registers == 40);
  CHECK(r[0].stack_bytes == 8);
  CHECK(r[0].spill_stores == 4);
  CHECK(r[0].spill_loads == 12);
  CHECK(r[1].name == "kiln_b");
  CHECK(r[1].registers == 7);
  CHECK(r[1].spill_stores == 0);
}

TEST_CASE("cuda: without a usable device the target says why, and make_target refuses it",
          "[cuda]") {
  targets::cuda::CudaTarget target;
  if (!target.unavailable().empty()) {
    INFO(target.unavailable());
    CHECK((target.unavailable().find("CUDA runtime: cudaError") == 0 ||
           target.unavailable() == "no CUDA device"));
    CHECK_THROWS_WITH(targets::make_target("cuda"),
                      Catch::Contains("target cuda is unavailable here: " + target.unavailable()));
    // Kernels are still generated and compiled; only loading them needs the device.
    std::vector<runtime::Prepared> p = target.prepare({kiln::testing::conformance_cases()[0].body});
    REQUIRE(p.size() == 1);
    CHECK(p[0].kernel == nullptr);
    CHECK(p[0].error == "cuda: " + target.unavailable());
  } else {
    CHECK(targets::make_target("cuda")->name() == "cuda");
  }
}

#ifdef KILN_TEST_OPENCL_DIALECT
#include "targets/opencl/dialect.hpp"

namespace {

// A kernel's statements with the dialect's words replaced by neutral ones, and its declaration,
// buffer setup and local arrays (all dialect text) left out.
std::string neutral(const std::string& code, const targets::gpu::Dialect& d) {
  std::vector<std::pair<std::string, std::string>> words = {
      {d.barrier(), "BARRIER"}, {d.local_id(), "TID"}, {d.group_id(), "GID"},
      {d.group_count(), "NGROUPS"}};
  for (const char* fn : {"exp2", "log2", "sin", "sqrt", "fmod"}) {
    words.push_back({d.math(fn, false) + "(", std::string(fn) + "("});
  }
  words.push_back({d.nan(true), "Q_N_D"});
  words.push_back({d.infinity(true), "Q_I_D"});
  words.push_back({d.nan(false), "Q_N_F"});
  words.push_back({d.infinity(false), "Q_I_F"});
  std::string out;
  std::istringstream lines(code);
  std::string line;
  std::getline(lines, line);  // the declaration
  while (std::getline(lines, line)) {
    if (line.find("__global") != std::string::npos || line.find("__local") != std::string::npos ||
        line.find("__shared__") != std::string::npos) {
      continue;
    }
    for (const auto& [word, neutral_word] : words) {
      for (std::size_t at = line.find(word); at != std::string::npos;
           at = line.find(word, at + neutral_word.size())) {
        line.replace(at, word.size(), neutral_word);
      }
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("gpu render: OpenCL and CUDA kernels differ only in the dialect's words", "[cuda]") {
  targets::cuda::CudaDialect cuda;
  targets::opencl::OpenClDialect opencl;
  std::size_t compared = 0;
  std::size_t sub_group = 0;
  for (const BodyCase& c : kiln::testing::conformance_cases()) {
    for (const Schedule& s : targets::gpu::schedule_choices(c.body)) {
      const auto a = targets::gpu::render_gpu_kernel(c.body, s, cuda);
      const auto b = targets::gpu::render_gpu_kernel(c.body, s, opencl);
      INFO(c.label << " " << targets::gpu::schedule_tag(s) << "\n" << a.code << "\n" << b.code);
      CHECK(a.name == b.name);
      if (a.code.find("__shfl_xor_sync(0xffffffffu, ") != std::string::npos) {
        // The exchange differs: CUDA's warp shuffle, OpenCL's through local memory (the
        // OpenCL tests execute that form on PoCL against the interpreter).
        CHECK(s.warp_reduce);
        CHECK(b.code.find("shfl") == std::string::npos);
        CHECK(b.code.find(" ^ kiln_m]") != std::string::npos);
        ++sub_group;
        continue;
      }
      CHECK(neutral(a.code, cuda) == neutral(b.code, opencl));
      ++compared;
    }
  }
  CHECK(compared > 100);
  CHECK(sub_group > 10);
}
#endif
