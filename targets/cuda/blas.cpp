// cuBLAS and cuBLASLt for the gemm op; see blas.hpp.
#include "targets/cuda/blas.hpp"

#include <cublasLt.h>
#include <cublas_v2.h>

#include <algorithm>
#include <array>
#include <mutex>
#include <sstream>

#include "support/diagnostic.hpp"
#include "targets/cuda/blas_layout.hpp"
#include "targets/cuda/device.hpp"
#include "targets/cuda/dynamic_library.hpp"
#include "targets/gemm_reference.hpp"

namespace kiln::targets::cuda {

namespace {

using graph::DType;

// cuBLASLt's scratch space for its faster algorithms, and cuBLAS's (given, so that cuBLAS
// allocates nothing while a CUDA graph is captured).
constexpr std::size_t kLtWorkspaceBytes = std::size_t{32} << 20;
constexpr std::size_t kBlasWorkspaceBytes = std::size_t{32} << 20;

// The functions the gemm op calls, resolved from the dlopen'd libraries. The types come from
// the headers, so a signature that changes between toolkits fails to compile here.
struct Symbols {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetWorkspace_v2) set_workspace = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
  decltype(&cublasGemmEx_64) gemm = nullptr;
  decltype(&cublasGemmStridedBatchedEx_64) gemm_strided = nullptr;
  decltype(&cublasLtCreate) lt_create = nullptr;
  decltype(&cublasLtDestroy) lt_destroy = nullptr;
  decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&cublasLtMatrixLayoutSetAttribute) layout_set = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
};

Symbols g_symbols;
std::string g_load_error;

std::string load_once() {
  std::string error;
  void* blas = open_library(KILN_CUBLAS_PATH, KILN_CUBLAS_SONAME, error);
  if (!blas) return "cannot load cuBLAS: " + error;
  void* lt = open_library(KILN_CUBLASLT_PATH, KILN_CUBLASLT_SONAME, error);
  if (!lt) return "cannot load cuBLASLt: " + error;
  Symbols& s = g_symbols;
  const bool ok =
      resolve(blas, "cublasCreate_v2", s.create, error) &&
      resolve(blas, "cublasDestroy_v2", s.destroy, error) &&
      resolve(blas, "cublasSetStream_v2", s.set_stream, error) &&
      resolve(blas, "cublasSetWorkspace_v2", s.set_workspace, error) &&
      resolve(blas, "cublasGetStatusString", s.status_string, error) &&
      resolve(blas, "cublasGemmEx_64", s.gemm, error) &&
      resolve(blas, "cublasGemmStridedBatchedEx_64", s.gemm_strided, error) &&
      resolve(lt, "cublasLtCreate", s.lt_create, error) &&
      resolve(lt, "cublasLtDestroy", s.lt_destroy, error) &&
      resolve(lt, "cublasLtMatmulDescCreate", s.desc_create, error) &&
      resolve(lt, "cublasLtMatmulDescDestroy", s.desc_destroy, error) &&
      resolve(lt, "cublasLtMatmulDescSetAttribute", s.desc_set, error) &&
      resolve(lt, "cublasLtMatrixLayoutCreate", s.layout_create, error) &&
      resolve(lt, "cublasLtMatrixLayoutDestroy", s.layout_destroy, error) &&
      resolve(lt, "cublasLtMatrixLayoutSetAttribute", s.layout_set, error) &&
      resolve(lt, "cublasLtMatmulPreferenceCreate", s.pref_create, error) &&
      resolve(lt, "cublasLtMatmulPreferenceDestroy", s.pref_destroy, error) &&
      resolve(lt, "cublasLtMatmulPreferenceSetAttribute", s.pref_set, error) &&
      resolve(lt, "cublasLtMatmulAlgoGetHeuristic", s.heuristic, error) &&
      resolve(lt, "cublasLtMatmul", s.matmul, error);
  return ok ? "" : "cuBLAS: " + error;
}

void check(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw support::UserError(std::string("cuda: ") + what + " failed: " +
                           g_symbols.status_string(status));
}

void check(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return;
  throw support::UserError(std::string("cuda: ") + what + " failed: " + error_text(error));
}

cudaDataType data_type(DType t) {
  switch (t) {
    case DType::F64: return CUDA_R_64F;
    case DType::F16: return CUDA_R_16F;
    case DType::BF16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}

// f64 products in f64; f32 in f32 (no TF32: kiln's f32 products are f32); halves accumulate
// in f32.
cublasComputeType_t compute_type(DType t) {
  return t == DType::F64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
}

// alpha and beta in the compute type's scale type.
struct Scale {
  double d;
  float f;
  const void* get(DType t) const { return t == DType::F64 ? static_cast<const void*>(&d) : &f; }
};

const void* at(const void* buffer, long long offset, DType t) {
  return static_cast<const char*>(buffer) + offset * static_cast<long long>(graph::dtype_size(t));
}

cublasOperation_t op(bool transposed) { return transposed ? CUBLAS_OP_T : CUBLAS_OP_N; }

cublasLtEpilogue_t epilogue(const GemmShape& s) {
  switch (s.activation) {
    case GemmActivation::Relu: return s.bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    case GemmActivation::Gelu: return s.bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    case GemmActivation::None: break;
  }
  return s.bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
}

// The shape of a call at its dims, as a key for plans and for the measured choice.
std::string shape_key(const runtime::LibraryCall& call, const GemmShape& s) {
  std::ostringstream k;
  k << graph::dtype_name(call.dtype) << ' ' << s.batch << ' ' << s.m << ' ' << s.n << ' ' << s.k
    << ' ' << s.lda << ' ' << s.ldb << ' ' << s.ldc << ' ' << s.stride_a << ' ' << s.stride_b
    << ' ' << s.stride_c << ' ' << s.trans_a << s.trans_b << s.bias << s.accumulate << ' '
    << static_cast<int>(s.activation);
  return k.str();
}

// A cuBLASLt product ready to run: its descriptor, the four layouts and the algorithm chosen
// by cuBLASLt's heuristic.
struct LtPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  std::array<cublasLtMatrixLayout_t, 3> layouts{};  // op a, op b, C and D
  cublasLtMatmulAlgo_t algo{};
  ~LtPlan() {
    for (cublasLtMatrixLayout_t l : layouts) {
      if (l) g_symbols.layout_destroy(l);
    }
    if (desc) g_symbols.desc_destroy(desc);
  }
};

cublasLtMatrixLayout_t lt_layout(DType t, long long rows, long long cols, long long ld,
                                 long long batch, long long stride) {
  const Symbols& s = g_symbols;
  cublasLtMatrixLayout_t layout = nullptr;
  check(s.layout_create(&layout, data_type(t), static_cast<std::uint64_t>(rows),
                        static_cast<std::uint64_t>(cols), ld),
        "cublasLtMatrixLayoutCreate");
  const auto count = static_cast<std::int32_t>(batch);
  const std::int64_t offset = stride;
  check(s.layout_set(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
        "cublasLtMatrixLayoutSetAttribute");
  check(s.layout_set(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &offset, sizeof offset),
        "cublasLtMatrixLayoutSetAttribute");
  return layout;
}

}  // namespace

const char* blas_library_name(BlasLibrary library) {
  return library == BlasLibrary::Cublas ? "cuBLAS" : "cuBLASLt";
}

std::string load_blas() {
  static std::once_flag once;
  std::call_once(once, [] { g_load_error = load_once(); });
  return g_load_error;
}

bool blas_supports(const runtime::LibraryCall& call) {
  if (call.op != "gemm") return false;
  const DType t = call.dtype;
  if (t != DType::F32 && t != DType::F64 && t != DType::F16 && t != DType::BF16) return false;
  auto constant = [&](const char* name, long long fallback) -> long long {
    auto it = call.params.find(name);
    if (it == call.params.end()) return fallback;
    return it->second.as_constant().value_or(-1);
  };
  const long long library = constant("library", 0);
  const long long activation = constant("activation", 0);
  const bool plain = constant("bias", 0) == 0 && constant("accumulate", 0) == 0 && activation == 0;
  if (library < 0 || library > 2 || activation < 0 || activation > 2) return false;
  if (!plain && library == static_cast<long long>(BlasLibrary::Cublas)) return false;
  return !(t == DType::F64 && activation == 2);  // cuBLASLt has no f64 GELU epilogue
}

struct Blas::State {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  cublasLtHandle_t lt = nullptr;
  void* workspace = nullptr;
  void* blas_workspace = nullptr;
  std::map<std::string, std::unique_ptr<LtPlan>> plans;
  std::map<std::string, BlasLibrary> chosen;

  void open() {
    if (blas) return;
    const std::string why = load_blas();
    if (!why.empty()) throw support::UserError("cuda: " + why);
    check(g_symbols.create(&blas), "cublasCreate");
    check(g_symbols.set_stream(blas, stream), "cublasSetStream");
    check(cudaMalloc(&blas_workspace, kBlasWorkspaceBytes), "cudaMalloc (cuBLAS workspace)");
    check(g_symbols.set_workspace(blas, blas_workspace, kBlasWorkspaceBytes), "cublasSetWorkspace");
    check(g_symbols.lt_create(&lt), "cublasLtCreate");
    check(cudaMalloc(&workspace, kLtWorkspaceBytes), "cudaMalloc (cuBLASLt workspace)");
  }

  void run_cublas(const runtime::LibraryCall& call, const GemmShape& s,
                  const std::vector<void*>& buffers) {
    const ColumnMajorGemm g = column_major_gemm(s);
    const DType t = call.dtype;
    const cudaDataType dt = data_type(t);
    const Scale one{1.0, 1.0f}, zero{0.0, 0.0f};
    const void* a = at(buffers[static_cast<std::size_t>(g.a.input)], g.a.offset, t);
    const void* b = at(buffers[static_cast<std::size_t>(g.b.input)], g.b.offset, t);
    void* c = buffers.back();
    if (g.batch == 1) {
      check(g_symbols.gemm(blas, op(g.a.transposed), op(g.b.transposed), g.m, g.n, g.k,
                           one.get(t), a, dt, g.a.ld, b, dt, g.b.ld, zero.get(t), c, dt, g.ldc,
                           compute_type(t), CUBLAS_GEMM_DEFAULT),
            "cublasGemmEx");
    } else {
      check(g_symbols.gemm_strided(blas, op(g.a.transposed), op(g.b.transposed), g.m, g.n, g.k,
                                   one.get(t), a, dt, g.a.ld, g.a.stride, b, dt, g.b.ld,
                                   g.b.stride, zero.get(t), c, dt, g.ldc, g.stride_c, g.batch,
                                   compute_type(t), CUBLAS_GEMM_DEFAULT),
            "cublasGemmStridedBatchedEx");
    }
  }

  LtPlan& plan(const runtime::LibraryCall& call, const GemmShape& s) {
    std::unique_ptr<LtPlan>& p = plans[shape_key(call, s)];
    if (p) return *p;
    const Symbols& sym = g_symbols;
    const ColumnMajorGemm g = column_major_gemm(s);
    const DType t = call.dtype;
    auto made = std::make_unique<LtPlan>();
    check(sym.desc_create(&made->desc, compute_type(t), t == DType::F64 ? CUDA_R_64F : CUDA_R_32F),
          "cublasLtMatmulDescCreate");
    const cublasOperation_t ta = op(g.a.transposed), tb = op(g.b.transposed);
    const cublasLtEpilogue_t ep = epilogue(s);
    const std::int64_t bias_stride = 0;  // one bias for every batch entry
    check(sym.desc_set(made->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "TRANSA");
    check(sym.desc_set(made->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "TRANSB");
    check(sym.desc_set(made->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof ep), "EPILOGUE");
    if (s.bias) {
      check(sym.desc_set(made->desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &bias_stride,
                         sizeof bias_stride),
            "BIAS_BATCH_STRIDE");
    }
    made->layouts[0] = lt_layout(t, g.a.rows, g.a.cols, g.a.ld, g.batch, g.a.stride);
    made->layouts[1] = lt_layout(t, g.b.rows, g.b.cols, g.b.ld, g.batch, g.b.stride);
    made->layouts[2] = lt_layout(t, g.m, g.n, g.ldc, g.batch, g.stride_c);
    cublasLtMatmulPreference_t pref = nullptr;
    check(sym.pref_create(&pref), "cublasLtMatmulPreferenceCreate");
    const std::uint64_t bytes = kLtWorkspaceBytes;
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t st =
        sym.pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &bytes, sizeof bytes) ==
                CUBLAS_STATUS_SUCCESS
            ? sym.heuristic(lt, made->desc, made->layouts[0], made->layouts[1], made->layouts[2],
                            made->layouts[2], pref, 1, &result, &found)
            : CUBLAS_STATUS_INVALID_VALUE;
    sym.pref_destroy(pref);
    check(st, "cublasLtMatmulAlgoGetHeuristic");
    if (found == 0) {
      throw support::UserError("cuda: cuBLASLt has no algorithm for the gemm " +
                               shape_key(call, s));
    }
    made->algo = result.algo;
    p = std::move(made);
    return *p;
  }

  void run_lt(const runtime::LibraryCall& call, const GemmShape& s,
              const std::vector<void*>& buffers) {
    LtPlan& p = plan(call, s);
    const ColumnMajorGemm g = column_major_gemm(s);
    const DType t = call.dtype;
    const Scale one{1.0, 1.0f}, zero{0.0, 0.0f};
    if (s.bias) {
      const void* bias = buffers[2];
      check(g_symbols.desc_set(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias),
            "BIAS_POINTER");
    }
    const void* a = at(buffers[static_cast<std::size_t>(g.a.input)], g.a.offset, t);
    const void* b = at(buffers[static_cast<std::size_t>(g.b.input)], g.b.offset, t);
    void* d = buffers.back();
    const void* c = s.accumulate ? buffers[s.inputs() - 1] : d;
    check(g_symbols.matmul(lt, p.desc, one.get(t), a, p.layouts[0], b, p.layouts[1],
                           (s.accumulate ? one : zero).get(t), c, p.layouts[2], d, p.layouts[2],
                           &p.algo, workspace, kLtWorkspaceBytes, stream),
          "cublasLtMatmul");
  }

  void run(BlasLibrary library, const runtime::LibraryCall& call, const GemmShape& s,
           const std::vector<void*>& buffers) {
    if (library == BlasLibrary::Cublas) {
      run_cublas(call, s, buffers);
    } else {
      run_lt(call, s, buffers);
    }
  }

  // Device time of `runs` back-to-back calls on `library`, in ms (CUDA events).
  float time(BlasLibrary library, const runtime::LibraryCall& call, const GemmShape& s,
             const std::vector<void*>& buffers, int runs) {
    cudaEvent_t start = nullptr, stop = nullptr;
    check(cudaEventCreate(&start), "cudaEventCreate");
    check(cudaEventCreate(&stop), "cudaEventCreate");
    run(library, call, s, buffers);  // warm up: plans, kernels loaded
    check(cudaEventRecord(start, stream), "cudaEventRecord");
    for (int r = 0; r < runs; ++r) run(library, call, s, buffers);
    check(cudaEventRecord(stop, stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return ms;
  }
};

Blas::Blas(cudaStream_t stream) : state_(std::make_unique<State>()) { state_->stream = stream; }

Blas::~Blas() {
  state_->plans.clear();
  if (state_->lt) g_symbols.lt_destroy(state_->lt);
  if (state_->blas) g_symbols.destroy(state_->blas);
  if (state_->workspace) cudaFree(state_->workspace);
  if (state_->blas_workspace) cudaFree(state_->blas_workspace);
}

BlasLibrary Blas::library_for(const runtime::LibraryCall& call, const std::vector<void*>& buffers,
                              const graph::DimValues& dims) {
  if (!blas_supports(call)) {
    throw support::UserError("cuda: the gemm op cannot run this call (" +
                             std::string(graph::dtype_name(call.dtype)) + ")");
  }
  state_->open();
  const GemmShape s = gemm_shape(call, dims);
  if (auto it = call.params.find("library"); it != call.params.end()) {
    return static_cast<BlasLibrary>(*it->second.as_constant());
  }
  if (!s.plain()) return BlasLibrary::CublasLt;
  const std::string key = shape_key(call, s);
  if (auto it = state_->chosen.find(key); it != state_->chosen.end()) return it->second;
  // The first call of this shape: both libraries, timed on the device; the faster stays.
  constexpr int kRuns = 3;
  const float blas_ms = state_->time(BlasLibrary::Cublas, call, s, buffers, kRuns);
  const float lt_ms = state_->time(BlasLibrary::CublasLt, call, s, buffers, kRuns);
  const BlasLibrary best = lt_ms < blas_ms ? BlasLibrary::CublasLt : BlasLibrary::Cublas;
  state_->chosen.emplace(key, best);
  return best;
}

void Blas::gemm(const runtime::LibraryCall& call, const std::vector<void*>& buffers,
                const graph::DimValues& dims) {
  const BlasLibrary library = library_for(call, buffers, dims);
  const GemmShape s = gemm_shape(call, dims);
  KILN_ASSERT(buffers.size() == s.inputs() + 1, "cuda gemm: wrong number of buffers");
  if (s.batch <= 0 || s.m <= 0 || s.n <= 0) return;
  state_->run(library, call, s, buffers);
}

}  // namespace kiln::targets::cuda
