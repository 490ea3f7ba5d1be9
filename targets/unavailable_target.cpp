// A target not built in; see unavailable_target.hpp.
#include "targets/unavailable_target.hpp"

#include "support/diagnostic.hpp"

namespace kiln::targets {

namespace {

class UnavailableDevice final : public runtime::Device {
 public:
  explicit UnavailableDevice(std::string why) : why_(std::move(why)) {}
  void* allocate(std::size_t) override { fail(); }
  void release(void*) override {}
  void upload(void*, const void*, std::size_t) override { fail(); }
  void download(void*, const void*, std::size_t) override { fail(); }
  void copy(void*, const void*, std::size_t) override { fail(); }
  void launch(const runtime::Kernel&, const std::vector<void*>&,
              const std::vector<long long>&) override {
    fail();
  }
  void call(const runtime::LibraryCall&, const std::vector<void*>&,
            const graph::DimValues&) override {
    fail();
  }

 private:
  [[noreturn]] void fail() const { throw support::UserError(why_); }
  std::string why_;
};

class UnavailableTarget final : public runtime::Target {
 public:
  UnavailableTarget(std::string name, std::string reason)
      : name_(std::move(name)), reason_(std::move(reason)), device_(name_ + ": " + reason_) {
    capabilities_.host_memory = false;
  }
  std::string name() const override { return name_; }
  std::string unavailable() const override { return reason_; }
  const runtime::Capabilities& capabilities() const override { return capabilities_; }
  bool supports(const graph::Body&) const override { return false; }
  bool supports(const runtime::LibraryCall&) const override { return false; }
  std::vector<runtime::Prepared> prepare(const std::vector<graph::Body>& bodies) override {
    return std::vector<runtime::Prepared>(bodies.size(), runtime::Prepared{nullptr, reason_});
  }
  runtime::Device& device() override { return device_; }

 private:
  std::string name_;
  std::string reason_;
  runtime::Capabilities capabilities_;
  UnavailableDevice device_;
};

}  // namespace

std::unique_ptr<runtime::Target> make_unavailable_target(const std::string& name,
                                                         const std::string& reason) {
  return std::make_unique<UnavailableTarget>(name, reason);
}

}  // namespace kiln::targets
