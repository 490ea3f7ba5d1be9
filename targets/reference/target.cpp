// The reference target; see target.hpp.
#include "targets/reference/target.hpp"

#include "graph/body.hpp"
#include "graph/native.hpp"
#include "support/diagnostic.hpp"
#include "targets/gemm_reference.hpp"
#include "targets/host_device.hpp"

namespace kiln::targets {

namespace {

using graph::DType;

class ReferenceDevice final : public HostDevice {
 public:
  void launch(const runtime::Kernel& kernel, const std::vector<void*>& buffers,
              const std::vector<long long>& dim_values) override {
    const graph::Body& body = kernel.body();
    graph::DimValues dims;
    for (std::size_t i = 0; i < kernel.dims().size(); ++i) dims[kernel.dims()[i]] = dim_values[i];
    const std::size_t n = body.inputs().size();
    KILN_ASSERT(buffers.size() == n + 1, "reference launch: wrong number of buffers");
    std::vector<std::vector<double>> inputs(n);
    std::vector<const std::vector<double>*> pointers;
    for (std::size_t k = 0; k < n; ++k) {
      inputs[k] = read(buffers[k], body.inputs()[k]);
      pointers.push_back(&inputs[k]);
    }
    const auto size = static_cast<std::size_t>(graph::evaluate(body.output_size(), dims));
    std::vector<double> out = read(buffers[n], body.dtype());
    KILN_ASSERT(out.size() >= size, "reference launch: output buffer too small");
    out.resize(size);
    graph::interpret_body(body, pointers, dims, out);
    write(buffers[n], out, body.dtype());
  }

  void call(const runtime::LibraryCall& call, const std::vector<void*>& buffers,
            const graph::DimValues& dims) override {
    if (const std::optional<graph::QuantFormat> f = quantized_gemm_format(call.op)) {
      KILN_ASSERT(buffers.size() == 4, call.op + ": needs A, quants, scales and C");
      const GemmShape s = gemm_shape(call, dims);
      std::vector<double> a = read(buffers[0], DType::F32);
      std::vector<double> quants = read(buffers[1], DType::U8);
      std::vector<double> scales = read(buffers[2], DType::F16);
      std::vector<double> c = read(buffers[3], DType::F32);
      KILN_ASSERT(static_cast<long long>(c.size()) >= s.c_elements(), "gemm: C too small");
      c.resize(static_cast<std::size_t>(s.c_elements()));
      quantized_gemm_reference(call, dims, a, quants, scales, c);
      write(buffers[3], c, DType::F32);
      return;
    }
    if (call.op != "gemm") throw support::UserError("reference: no library op " + call.op);
    const GemmShape s = gemm_shape(call, dims);
    KILN_ASSERT(buffers.size() == s.inputs() + 1, "gemm: needs its inputs and C");
    std::vector<std::vector<double>> inputs;
    for (std::size_t k = 0; k < s.inputs(); ++k) inputs.push_back(read(buffers[k], call.dtype));
    std::vector<double> c = read(buffers.back(), call.dtype);
    KILN_ASSERT(static_cast<long long>(c.size()) >= s.c_elements(), "gemm: C too small");
    c.resize(static_cast<std::size_t>(s.c_elements()));
    gemm_reference(call, dims, inputs, c);
    write(buffers.back(), c, call.dtype);
  }

 private:
  // The elements from `p` to the end of its allocation.
  std::vector<double> read(const void* p, DType dtype) const {
    return graph::from_native(p, bytes_after(p) / graph::dtype_size(dtype), dtype);
  }
  static void write(void* p, const std::vector<double>& values, DType dtype) {
    std::vector<std::byte> bytes = graph::to_native(values, dtype);
    std::copy(bytes.begin(), bytes.end(), static_cast<std::byte*>(p));
  }
};

class ReferenceTarget final : public runtime::Target {
 public:
  ReferenceTarget() {
    capabilities_.dtypes = {DType::F32, DType::F16, DType::BF16, DType::F64,
                            DType::I32, DType::I64, DType::Bool, DType::U8};
    capabilities_.library_ops = {"gemm", "gemm-q8_0", "gemm-q4_0", "gemm-q4_1"};
  }
  std::string name() const override { return "reference"; }
  const runtime::Capabilities& capabilities() const override { return capabilities_; }
  bool supports(const graph::Body&) const override { return true; }
  bool supports(const runtime::LibraryCall& call) const override {
    return call.op == "gemm" || quantized_gemm_format(call.op).has_value();
  }
  std::vector<runtime::Prepared> prepare(const std::vector<graph::Body>& bodies) override {
    std::vector<runtime::Prepared> out;
    for (const graph::Body& body : bodies) {
      out.push_back({std::make_shared<runtime::Kernel>(body), ""});
    }
    return out;
  }
  runtime::Device& device() override { return device_; }

 private:
  runtime::Capabilities capabilities_;
  ReferenceDevice device_;
};

}  // namespace

std::unique_ptr<runtime::Target> make_reference_target() {
  return std::make_unique<ReferenceTarget>();
}

}  // namespace kiln::targets
