// The measurement harness and its on-disk cache; see measure.hpp.
#include "compiler/measure.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "graph/body_bounds.hpp"
#include "graph/interpret.hpp"
#include "graph/native.hpp"
#include "graph/compare.hpp"
#include "support/cache_files.hpp"
#include "support/diagnostic.hpp"
#include "targets/gemm_reference.hpp"

namespace kiln::compiler {

namespace fs = std::filesystem;
using graph::DType;

namespace {

// Buffers of one candidate smaller than this get several input sets, rotated between runs.
constexpr std::size_t kRotateBytes = std::size_t{32} << 20;
constexpr std::size_t kMaxInputSets = 8;
// The smallest time reported: a zero cost would make a kernel free to the search.
constexpr double kMinSeconds = 1e-9;



const graph::Body* body_of(const Candidate& c) { return std::get_if<graph::Body>(&c.op); }
const runtime::LibraryCall* call_of(const Candidate& c) {
  return std::get_if<runtime::LibraryCall>(&c.op);
}

std::pair<std::uint64_t, std::uint64_t> body_id(const graph::Body& body) {
  const support::Hash128 k = body.key();
  return {k.high, k.low};
}

// The dims an op mentions, sorted.
std::vector<std::string> op_dims(const Candidate& c) {
  if (const graph::Body* body = body_of(c)) return graph::body_dims(*body);
  std::set<std::string> names;
  for (const auto& [param, value] : call_of(c)->params) {
    for (std::string& d : graph::free_dims(value)) names.insert(std::move(d));
  }
  return {names.begin(), names.end()};
}

void check_shape(const Candidate& c) {
  KILN_ASSERT(c.input_dtypes.size() == c.input_elements.size(),
              "measure: a candidate needs one element count per input");
  if (const graph::Body* body = body_of(c)) {
    KILN_ASSERT(body->inputs() == c.input_dtypes, "measure: candidate inputs differ from its Body");
    KILN_ASSERT(body->dtype() == c.output_dtype, "measure: candidate output differs from its Body");
  }
  for (std::int64_t n : c.input_elements) KILN_ASSERT(n >= 0, "measure: negative buffer size");
  KILN_ASSERT(c.output_elements >= 0, "measure: negative buffer size");
}

std::size_t bytes_of(std::int64_t elements, DType dtype) {
  return static_cast<std::size_t>(elements) * graph::dtype_size(dtype);
}

// Device buffers released on scope exit.
class DeviceBuffers {
 public:
  explicit DeviceBuffers(runtime::Device& device) : device_(device) {}
  ~DeviceBuffers() {
    for (void* p : buffers_) device_.release(p);
  }
  DeviceBuffers(const DeviceBuffers&) = delete;
  DeviceBuffers& operator=(const DeviceBuffers&) = delete;

  void* add(const std::vector<double>& values, DType dtype) {
    std::vector<std::byte> bytes = graph::to_native(values, dtype);
    void* p = device_.allocate(std::max<std::size_t>(bytes.size(), 1));
    buffers_.push_back(p);
    if (!bytes.empty()) device_.upload(p, bytes.data(), bytes.size());
    return p;
  }

 private:
  runtime::Device& device_;
  std::vector<void*> buffers_;
};

// The output's contents before the op runs: the aliased input (Scatter), else zeros.
std::vector<double> initial_output(const Candidate& c,
                                   const std::vector<std::vector<double>>& inputs) {
  std::vector<double> out(static_cast<std::size_t>(c.output_elements), 0.0);
  if (const graph::Body* body = body_of(c); body && body->output_aliases()) {
    const std::vector<double>& from = inputs.at(*body->output_aliases());
    std::copy_n(from.begin(), std::min(from.size(), out.size()), out.begin());
  }
  return out;
}

// For each input slot used directly as a dynamic row, the smallest row count it must stay under.
std::map<std::size_t, std::int64_t> row_bounds(const graph::Body& body,
                                               const graph::DimValues& dims) {
  std::map<std::size_t, std::int64_t> bounds;
  auto note = [&](graph::ScalarId row, const graph::Expr& count) {
    while (body.scalar(row).op == graph::ScalarOp::Cast) row = body.scalar(row).args.at(0);
    const graph::Scalar& s = body.scalar(row);
    if (s.op != graph::ScalarOp::Load || !s.args.empty()) return;
    for (const std::string& d : graph::free_dims(count)) {
      if (!dims.count(d)) return;
    }
    const std::int64_t n = std::max<std::int64_t>(graph::evaluate(count, dims), 1);
    auto [it, fresh] = bounds.emplace(s.slot, n);
    if (!fresh) it->second = std::min(it->second, n);
  };
  for (const graph::Scalar& s : body.scalars()) {
    if (s.op == graph::ScalarOp::Load && !s.args.empty()) note(s.args[0], s.row_count);
  }
  if (body.store_row()) note(*body.store_row(), body.store_row_count());
  return bounds;
}

std::string describe(const Candidate& c) {
  if (const graph::Body* body = body_of(c)) {
    const std::string text = to_text(*body);
    return text.substr(0, text.find('\n'));
  }
  const runtime::LibraryCall& call = *call_of(c);
  return "library " + call.op + " " + std::string(graph::dtype_name(call.dtype));
}

}  // namespace

Candidate body_candidate(graph::Body body, std::vector<std::int64_t> input_elements,
                         const graph::DimValues& dims) {
  Candidate c;
  c.input_dtypes = body.inputs();
  c.input_elements = std::move(input_elements);
  c.output_dtype = body.dtype();
  c.output_elements = graph::evaluate(body.output_size(), dims);
  c.op = std::move(body);
  return c;
}

Candidate gemm_candidate(runtime::LibraryCall call, const graph::DimValues& dims) {
  const std::optional<graph::QuantFormat> quantized = targets::quantized_gemm_format(call.op);
  KILN_ASSERT(call.op == "gemm" || quantized, "gemm_candidate: not a gemm call");
  const targets::GemmShape s = targets::gemm_shape(call, dims);
  Candidate c;
  if (quantized) {
    c.input_dtypes = {call.dtype, DType::U8, DType::F16};
    c.input_elements = {s.a_elements(), s.quants_elements(*quantized),
                        s.scales_elements(*quantized)};
  } else {
    c.input_dtypes = {call.dtype, call.dtype};
    c.input_elements = {s.a_elements(), s.b_elements()};
  }
  if (s.bias) {  // the epilogue's inputs: a bias row, then C0 (targets/gemm_reference.hpp)
    c.input_dtypes.push_back(call.dtype);
    c.input_elements.push_back(s.n);
  }
  if (s.accumulate) {
    c.input_dtypes.push_back(call.dtype);
    c.input_elements.push_back(s.c_elements());
  }
  c.output_dtype = call.dtype;
  c.output_elements = s.c_elements();
  c.op = std::move(call);
  return c;
}

std::string library_call_in_bounds(const runtime::LibraryCall& call,
                                   const std::vector<graph::Expr>& buffer_elements) {
  using graph::Expr;
  const std::optional<graph::QuantFormat> quantized = targets::quantized_gemm_format(call.op);
  if (call.op != "gemm" && !quantized) return "no bounds are known for library op " + call.op;
  auto flag = [&](const char* name) {
    auto it = call.params.find(name);
    return it != call.params.end() && it->second != Expr(0);
  };
  const bool bias = flag("bias"), accumulate = flag("accumulate");
  const std::size_t buffers = quantized ? 4 : 3 + (bias ? 1 : 0) + (accumulate ? 1 : 0);
  if (buffer_elements.size() != buffers) {
    return quantized ? call.op + " takes 4 buffers (A, quants, scales, C)"
                     : "this gemm call takes " + std::to_string(buffers) +
                           " buffers (A, B, bias and C0 where present, C)";
  }
  auto param = [&](const char* name, const Expr& fallback) {
    auto it = call.params.find(name);
    return it == call.params.end() ? fallback : it->second;
  };
  for (const char* required : {"m", "n", "k"}) {
    if (!call.params.count(required)) return std::string("gemm: ") + required + " is required";
  }
  // The same defaults as targets::gemm_shape.
  const Expr m = param("m", 0), n = param("n", 0), k = param("k", 0), batch = param("batch", 1);
  const bool trans_a = param("trans_a", 0) != Expr(0), trans_b = param("trans_b", 0) != Expr(0);
  const Expr lda = param("lda", trans_a ? m : k), ldb = param("ldb", trans_b ? k : n);
  const Expr ldc = param("ldc", n);
  // Each operand: batch x rows x columns, rows `ld` apart.
  const graph::StridedAccess a{"gemm A", param("offset_a", 0),
                               {{batch, param("stride_a", m * k)},
                                {trans_a ? k : m, lda},
                                {trans_a ? m : k, 1}}};
  const graph::StridedAccess b{"gemm B", param("offset_b", 0),
                               {{batch, param("stride_b", k * n)},
                                {trans_b ? n : k, ldb},
                                {trans_b ? k : n, 1}}};
  const graph::StridedAccess c{"gemm C", 0, {{batch, param("stride_c", m * n)}, {m, ldc}, {n, 1}}};
  std::string why = graph::prove_in_bounds(a, buffer_elements[0]);
  if (quantized) {  // n rows of k / 32 blocks in each weight buffer, from 0
    const Expr blocks = floor_div(k, Expr(graph::kQuantBlock));
    const graph::StridedAccess q{"gemm quants", 0,
                                 {{n * blocks * Expr(graph::quant_bytes(*quantized)), 1}}};
    const graph::StridedAccess sc{"gemm scales", 0,
                                  {{n * blocks * Expr(graph::scales_per_block(*quantized)), 1}}};
    if (why.empty()) why = graph::prove_in_bounds(q, buffer_elements[1]);
    if (why.empty()) why = graph::prove_in_bounds(sc, buffer_elements[2]);
    if (why.empty()) why = graph::prove_in_bounds(c, buffer_elements[3]);
    return why;
  }
  if (why.empty()) why = graph::prove_in_bounds(b, buffer_elements[1]);
  std::size_t next = 2;
  if (bias && why.empty()) {
    why = graph::prove_in_bounds(graph::StridedAccess{"gemm bias", 0, {{n, 1}}},
                                 buffer_elements[next++]);
  }
  if (accumulate && why.empty()) {
    const graph::StridedAccess c0{"gemm C0", 0,
                                  {{batch, param("stride_c", m * n)}, {m, ldc}, {n, 1}}};
    why = graph::prove_in_bounds(c0, buffer_elements[next++]);
  }
  if (why.empty()) why = graph::prove_in_bounds(c, buffer_elements.back());
  return why;
}

std::int64_t reduction_length(const Candidate& c, const graph::DimValues& dims) {
  if (const graph::Body* body = body_of(c)) return graph::reduction_length(*body, dims);
  const runtime::LibraryCall& call = *call_of(c);
  if (call.op == "gemm" || targets::quantized_gemm_format(call.op)) {
    return std::max<long long>(targets::gemm_shape(call, dims).k, 1);
  }
  return 1;
}

std::vector<std::vector<double>> random_inputs(const Candidate& c, const graph::DimValues& dims,
                                               std::uint64_t seed) {
  check_shape(c);
  std::map<std::size_t, std::int64_t> bounds;
  if (const graph::Body* body = body_of(c)) bounds = row_bounds(*body, dims);
  // Quantized weights: every byte is a valid pair of nibbles or int8 value.
  if (const runtime::LibraryCall* call = call_of(c); call && targets::quantized_gemm_format(call->op)) {
    bounds[1] = 256;
  }
  std::vector<std::vector<double>> inputs;
  for (std::size_t k = 0; k < c.input_dtypes.size(); ++k) {
    const DType dtype = c.input_dtypes[k];
    std::mt19937_64 rng(support::hash_combine(seed, k));
    std::uniform_real_distribution<double> real(-1.0, 1.0);
    auto bound = bounds.find(k);
    std::uniform_int_distribution<std::int64_t> integer(
        0, (bound != bounds.end() ? bound->second : 4) - 1);
    // An i32 or i64 input that is not a row index is most often positions (an Iota, a
    // cache position): 0, 1, 2, ... A causal mask compares them; with small random values it
    // hid nothing, and a causal attention kernel was timed doing twice its work.
    const bool positions = bound == bounds.end() && (dtype == DType::I32 || dtype == DType::I64);
    std::vector<double> values(static_cast<std::size_t>(c.input_elements[k]));
    for (std::size_t e = 0; e < values.size(); ++e) {
      double& v = values[e];
      if (graph::is_float(dtype)) {
        do {
          v = graph::round_to_dtype(real(rng), dtype);
        } while (v == 0.0);
      } else if (dtype == DType::Bool) {
        v = static_cast<double>(rng() & 1);
      } else if (positions) {
        v = static_cast<double>(e % (std::size_t{1} << 31));
      } else {
        v = static_cast<double>(integer(rng));
      }
    }
    inputs.push_back(std::move(values));
  }
  return inputs;
}

std::string machine_fingerprint() {
  static const std::string fingerprint = [] {
    std::string model;
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);) {
      if (line.rfind("model name", 0) == 0) {
        model = line.substr(std::min(line.find(':') + 1, line.size()));
        while (!model.empty() && model.front() == ' ') model.erase(model.begin());
        break;
      }
    }
    struct utsname names {};
    const std::string machine = ::uname(&names) == 0 ? names.machine : "unknown";
    // The OpenMP settings a time depends on: the thread count, and how idle threads wait
    // (targets/cpu/jit.cpp sets a bounded spin before any target measures).
    std::string omp;
    for (const char* name : {"OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT"}) {
      const char* value = std::getenv(name);
      omp += std::string(";") + name + "=" + (value ? value : "");
    }
    return "cpu=" + model + ";arch=" + machine +
           ";threads=" + std::to_string(std::thread::hardware_concurrency()) + omp;
  }();
  return fingerprint;
}

Measurer::Measurer(runtime::Target& target, fs::path cache_root, std::string fingerprint,
                   runtime::TimerOptions timer, SandboxOptions sandbox)
    : target_(target),
      dir_((cache_root.empty() ? support::default_cache_root() : cache_root) / "measure" / target.name()),
      fingerprint_(machine_fingerprint() + "|" + fingerprint),
      timer_(timer),
      sandbox_(sandbox) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw support::UserError("cannot create the measurement cache " + dir_.string());
}

Measurer::~Measurer() = default;

std::string Measurer::hex(const support::Hash128& key) {
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%016llx%016llx",
                static_cast<unsigned long long>(key.high), static_cast<unsigned long long>(key.low));
  return buffer;
}

support::Hash128 Measurer::key(const Candidate& c, const graph::DimValues& dims,
                               const std::string& target_name, const std::string& fingerprint) {
  check_shape(c);
  std::ostringstream text;
  text << "kiln-measure 1\ntarget " << target_name << "\nfingerprint " << fingerprint << "\n";
  if (const graph::Body* body = body_of(c)) {
    text << "body\n" << to_text(*body) << "\n";
  } else {
    const runtime::LibraryCall& call = *call_of(c);
    text << "library " << call.op << " " << graph::dtype_name(call.dtype) << "\n";
    for (const auto& [name, value] : call.params) {
      text << "param " << name << " = " << graph::to_string(value) << "\n";
    }
  }
  for (std::size_t k = 0; k < c.input_dtypes.size(); ++k) {
    text << "input " << k << " " << graph::dtype_name(c.input_dtypes[k]) << " "
         << c.input_elements[k] << "\n";
  }
  text << "output " << graph::dtype_name(c.output_dtype) << " " << c.output_elements << "\n";
  for (const std::string& d : op_dims(c)) {
    auto it = dims.find(d);
    KILN_ASSERT(it != dims.end(), "measure: no value for dim " + d);
    text << "dim " << d << " = " << it->second << "\n";
  }
  const std::string s = text.str();
  return support::hash128(s.data(), s.size());
}

fs::path Measurer::cache_file(const Candidate& c, const graph::DimValues& dims) const {
  return dir_ / (hex(key(c, dims, target_.name(), fingerprint_)) + ".time");
}

std::vector<std::string> Measurer::prepare(const std::vector<Candidate>& candidates,
                                           const graph::DimValues& dims) {
  (void)dims;  // sizes are runtime arguments of kernels; kept for targets that specialize
  std::vector<graph::Body> batch;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> batch_ids;
  std::set<std::pair<std::uint64_t, std::uint64_t>> queued;
  for (const Candidate& c : candidates) {
    check_shape(c);
    const graph::Body* body = body_of(c);
    if (!body) continue;
    const auto id = body_id(*body);
    if (kernels_.count(id) || !queued.insert(id).second) continue;
    if (!target_.supports(*body)) {
      kernels_[id] = {nullptr, "target " + target_.name() + " does not support this Body"};
      continue;
    }
    batch.push_back(*body);
    batch_ids.push_back(id);
  }
  if (!batch.empty()) {
    std::vector<runtime::Prepared> prepared = target_.prepare(batch);
    KILN_ASSERT(prepared.size() == batch.size(), "measure: target.prepare lost bodies");
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (!prepared[i].kernel && prepared[i].error.empty()) {
        prepared[i].error = "target " + target_.name() + " made no kernel";
      }
      kernels_[batch_ids[i]] = std::move(prepared[i]);
    }
  }
  std::vector<std::string> errors;
  for (const Candidate& c : candidates) {
    if (const graph::Body* body = body_of(c)) {
      errors.push_back(kernels_.at(body_id(*body)).error);
    } else {
      const runtime::LibraryCall& call = *call_of(c);
      errors.push_back(target_.supports(call)
                           ? ""
                           : "target " + target_.name() + " has no library op " + call.op +
                                 " for " + std::string(graph::dtype_name(call.dtype)));
    }
  }
  return errors;
}

const runtime::Kernel* Measurer::kernel_for(const Candidate& c, const graph::DimValues& dims,
                                            std::string& error) {
  error = prepare({c}, dims).front();
  if (!error.empty()) return nullptr;
  const graph::Body* body = body_of(c);
  return body ? kernels_.at(body_id(*body)).kernel.get() : nullptr;
}

void Measurer::launch(const Candidate& c, const runtime::Kernel* kernel,
                      const std::vector<void*>& buffers, const graph::DimValues& dims) {
  runtime::Device& device = target_.device();
  if (kernel) {
    std::vector<long long> values;
    for (const std::string& d : kernel->dims()) {
      auto it = dims.find(d);
      KILN_ASSERT(it != dims.end(), "measure: no value for dim " + d);
      values.push_back(it->second);
    }
    device.launch(*kernel, buffers, values);
  } else {
    device.call(*call_of(c), buffers, dims);
  }
}

namespace {

std::string to_bytes(const std::vector<double>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(double));
}

std::vector<double> from_bytes(const std::string& bytes) {
  std::vector<double> values(bytes.size() / sizeof(double));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(double));
  return values;
}

}  // namespace

Job Measurer::run_job(const Candidate& c, const runtime::Kernel* kernel,
                      const std::vector<std::vector<double>>& inputs,
                      const graph::DimValues& dims) {
  KILN_ASSERT(inputs.size() == c.input_dtypes.size(), "measure: wrong number of inputs");
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    KILN_ASSERT(static_cast<std::int64_t>(inputs[k].size()) == c.input_elements[k],
                "measure: input " + std::to_string(k) + " has the wrong size");
  }
  // Runs in a worker: references stay valid there (the worker's copy of this process).
  return [this, &c, kernel, &inputs, &dims] {
    runtime::Device& device = target_.device();
    DeviceBuffers owned(device);
    std::vector<void*> buffers;
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      buffers.push_back(owned.add(inputs[k], c.input_dtypes[k]));
    }
    buffers.push_back(owned.add(initial_output(c, inputs), c.output_dtype));
    launch(c, kernel, buffers, dims);
    device.synchronize();
    std::vector<std::byte> bytes(bytes_of(c.output_elements, c.output_dtype));
    if (!bytes.empty()) device.download(bytes.data(), buffers.back(), bytes.size());
    return to_bytes(graph::from_native(bytes.data(), static_cast<std::size_t>(c.output_elements),
                                         c.output_dtype));
  };
}

std::vector<Measurer::RunResult> Measurer::try_run_all(
    const std::vector<Candidate>& candidates,
    const std::vector<std::vector<std::vector<double>>>& inputs, const graph::DimValues& dims) {
  KILN_ASSERT(inputs.size() == candidates.size(), "measure: one input set per candidate");
  std::vector<RunResult> results(candidates.size());
  std::vector<Job> jobs;
  std::vector<std::size_t> job_of;  // the candidate of each job
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    std::string error;
    const runtime::Kernel* kernel = kernel_for(candidates[i], dims, error);
    if (!error.empty()) {
      results[i].failure = "the target rejected it: " + error;
      continue;
    }
    jobs.push_back(run_job(candidates[i], kernel, inputs[i], dims));
    job_of.push_back(i);
  }
  std::vector<JobResult> done = run_sandboxed(jobs, sandbox_);
  for (std::size_t j = 0; j < done.size(); ++j) {
    RunResult& r = results[job_of[j]];
    ++stats_.runs;
    if (done[j].ok()) {
      r.output = from_bytes(done[j].output);
    } else {
      r.failure = std::move(done[j].failure);
      ++stats_.failures;
    }
  }
  return results;
}

Measurer::RunResult Measurer::try_run(const Candidate& c,
                                      const std::vector<std::vector<double>>& inputs,
                                      const graph::DimValues& dims) {
  return try_run_all({c}, {inputs}, dims).front();
}

std::vector<double> Measurer::run(const Candidate& c,
                                  const std::vector<std::vector<double>>& inputs,
                                  const graph::DimValues& dims) {
  RunResult r = try_run(c, inputs, dims);
  if (!r.ok()) throw support::UserError("cannot run " + describe(c) + ": " + r.failure);
  return std::move(r.output);
}

std::vector<std::string> Measurer::check_all(const std::vector<Candidate>& candidates,
                                             const graph::DimValues& dims,
                                             std::optional<graph::Tolerance> tolerance) {
  std::vector<std::string> verdicts(candidates.size());
  std::vector<Job> jobs;
  std::vector<std::size_t> job_of;  // the candidate of each job
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    std::string error;
    const runtime::Kernel* kernel = kernel_for(c, dims, error);
    if (!error.empty()) {
      verdicts[i] = describe(c) + " on target " + target_.name() + ": the target rejected it: " +
                    error;
      continue;
    }
    const graph::Tolerance tol =
        tolerance.value_or(graph::tolerance(c.output_dtype, reduction_length(c, dims)));
    // In a worker, the reference semantics too: interpreting an unchecked Body may take forever.
    jobs.push_back([this, &c, kernel, &dims, tol]() -> std::string {
      const support::Hash128 k = key(c, dims, target_.name(), fingerprint_);
      const std::vector<std::vector<double>> in = random_inputs(c, dims, k.low);
      std::vector<double> want = initial_output(c, in);
      try {
        if (const graph::Body* body = body_of(c)) {
          std::vector<const std::vector<double>*> pointers;
          for (const std::vector<double>& x : in) pointers.push_back(&x);
          graph::interpret_body(*body, pointers, dims, want);
        } else if (const runtime::LibraryCall& call = *call_of(c); call.op == "gemm") {
          targets::gemm_reference(call, dims, in, want);
        } else if (targets::quantized_gemm_format(call.op)) {
          targets::quantized_gemm_reference(call, dims, in.at(0), in.at(1), in.at(2), want);
        } else {
          return "no reference semantics for library op " + call.op;
        }
      } catch (const support::UserError& e) {
        return std::string("its reference semantics fail: ") + e.what();
      }
      return graph::mismatch(from_bytes(run_job(c, kernel, in, dims)()), want, tol);
    });
    job_of.push_back(i);
  }
  const std::vector<JobResult> done = run_sandboxed(jobs, sandbox_);
  for (std::size_t j = 0; j < done.size(); ++j) {
    const Candidate& c = candidates[job_of[j]];
    ++stats_.runs;
    if (!done[j].ok()) ++stats_.failures;
    const std::string& why = done[j].ok() ? done[j].output : done[j].failure;
    if (!why.empty()) verdicts[job_of[j]] = describe(c) + " on target " + target_.name() + ": " + why;
  }
  return verdicts;
}

std::string Measurer::check(const Candidate& c, const graph::DimValues& dims,
                            std::optional<graph::Tolerance> tolerance) {
  return check_all({c}, dims, tolerance).front();
}

namespace {

// The seconds stored in a cache file; nullopt when absent or unreadable (then measured again).
std::optional<double> read_seconds(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  char* end = nullptr;
  const double seconds = std::strtod(line.c_str(), &end);
  if (end == line.c_str() || *end != '\0' || !std::isfinite(seconds) || seconds <= 0.0) {
    return std::nullopt;
  }
  return seconds;
}

void write_seconds(const fs::path& file, double seconds, const std::string& comment) {
  char value[40];
  std::snprintf(value, sizeof value, "%.17g", seconds);
  support::write_file_atomically(file, std::string(value) + "\n# " + comment + "\n");
}

}  // namespace

std::optional<double> Measurer::cached(const Candidate& c, const graph::DimValues& dims) const {
  return read_seconds(cache_file(c, dims));
}

double Measurer::time_program(const std::string& program, const graph::DimValues& dims,
                              const std::function<double()>& measure) {
  // "2": program times no longer include fetching the outputs (Executor::Fetch::Nothing).
  std::string text = "program 2\n" + target_.name() + "\n" + fingerprint_ + "\n" + program;
  for (const auto& [name, value] : dims) text += "\n" + name + "=" + std::to_string(value);
  const fs::path file = dir_ / ("program-" + hex(support::hash128(text.data(), text.size())) +
                                ".time");
  if (std::optional<double> seconds = read_seconds(file)) {
    ++stats_.cache_hits;
    return *seconds;
  }
  const double seconds = std::max(measure(), kMinSeconds);
  write_seconds(file, seconds, target_.name() + " program");
  ++stats_.measured;
  return seconds;
}

Job Measurer::time_job(const Candidate& c, const runtime::Kernel* kernel,
                       const graph::DimValues& dims, const runtime::TimerOptions& timer) {
  return [this, &c, kernel, &dims, timer] {
    const support::Hash128 k = key(c, dims, target_.name(), fingerprint_);
    std::size_t set_bytes = bytes_of(c.output_elements, c.output_dtype);
    for (std::size_t i = 0; i < c.input_dtypes.size(); ++i) {
      set_bytes += bytes_of(c.input_elements[i], c.input_dtypes[i]);
    }
    const std::size_t sets =
        set_bytes >= kRotateBytes
            ? 1
            : std::min(kMaxInputSets,
                       (kRotateBytes + set_bytes) / std::max<std::size_t>(set_bytes, 1));
    runtime::Device& device = target_.device();
    DeviceBuffers owned(device);
    std::vector<std::vector<void*>> buffers(sets);
    for (std::size_t s = 0; s < sets; ++s) {
      const std::vector<std::vector<double>> inputs = random_inputs(c, dims, k.low + s);
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        buffers[s].push_back(owned.add(inputs[i], c.input_dtypes[i]));
      }
      buffers[s].push_back(owned.add(initial_output(c, inputs), c.output_dtype));
    }
    const runtime::Timing timing = runtime::measure(
        [&](int run) { launch(c, kernel, buffers[static_cast<std::size_t>(run) % sets], dims); },
        [&] { device.synchronize(); }, timer);
    char text[64];
    std::snprintf(text, sizeof text, "%.17g %d", timing.median_seconds,
                  timing.runs + timing.warmups);
    return std::string(text);
  };
}

std::vector<Measurer::TimeResult> Measurer::try_time_all(const std::vector<Candidate>& candidates,
                                                         const graph::DimValues& dims,
                                                         const TimeBound& bound) {
  std::vector<TimeResult> results(candidates.size());
  runtime::TimerOptions timer = timer_;
  timer.give_up_seconds = std::min(timer.give_up_seconds, bound.give_up_seconds);
  SandboxOptions sandbox = sandbox_;
  sandbox.time_limit_seconds = std::min(sandbox.time_limit_seconds, bound.job_seconds);
  std::vector<Job> jobs;
  std::vector<std::size_t> job_of;  // the candidate of each job
  // Candidates with one key run the same code on the same sizes (a kernel in place and the same
  // kernel writing a copy): timed once, they get one time, so the choice between them is made
  // by what differs (the copy's charge), not by two draws of the timing noise.
  std::map<std::string, std::size_t> first_with_key;
  std::vector<std::pair<std::size_t, std::size_t>> same_as;  // (candidate, first with its key)
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    if (std::optional<double> seconds = cached(c, dims)) {
      ++stats_.cache_hits;
      results[i].seconds = *seconds;
      continue;
    }
    auto [first, inserted] = first_with_key.try_emplace(cache_file(c, dims).filename().string(), i);
    if (!inserted) {
      same_as.emplace_back(i, first->second);
      continue;
    }
    std::string error;
    const runtime::Kernel* kernel = kernel_for(c, dims, error);
    if (!error.empty()) {
      results[i].failure = "the target rejected it: " + error;
      continue;
    }
    jobs.push_back(time_job(c, kernel, dims, timer));
    job_of.push_back(i);
  }
  auto copy_repeats = [&] {
    for (const auto& [i, first] : same_as) results[i] = results[first];
  };
  if (jobs.empty()) {
    copy_repeats();
    return results;
  }
  // In workers: the buffers, the runs and a crash all stay there; each time and its number of
  // runs come back as text.
  const auto start = std::chrono::steady_clock::now();
  const std::vector<JobResult> done = run_sandboxed(jobs, sandbox);
  stats_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (std::size_t j = 0; j < done.size(); ++j) {
    const Candidate& c = candidates[job_of[j]];
    TimeResult& r = results[job_of[j]];
    if (!done[j].ok()) {
      ++stats_.failures;
      r.failure = done[j].failure;
      continue;
    }
    double median = 0.0;
    int runs = 0;
    std::istringstream(done[j].output) >> median >> runs;
    stats_.runs += static_cast<std::size_t>(std::max(runs, 0));
    r.seconds = std::max(median, kMinSeconds);
    r.over_bound = runs == 1 && median >= timer.give_up_seconds;
    write_seconds(cache_file(c, dims), r.seconds, target_.name() + " " + describe(c));
    ++stats_.measured;
  }
  copy_repeats();
  return results;
}

Measurer::TimeResult Measurer::try_time(const Candidate& c, const graph::DimValues& dims) {
  return try_time_all({c}, dims).front();
}

double Measurer::time(const Candidate& c, const graph::DimValues& dims) {
  const TimeResult r = try_time(c, dims);
  if (!r.ok()) throw support::UserError("cannot time " + describe(c) + ": " + r.failure);
  return r.seconds;
}

}  // namespace kiln::compiler
