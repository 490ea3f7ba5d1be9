// The target list; see registry.hpp.
#include "targets/registry.hpp"

#include "support/diagnostic.hpp"
#include "targets/cpu/target.hpp"
#include "targets/cuda/target.hpp"
#include "targets/opencl/target.hpp"
#include "targets/reference/target.hpp"

namespace kiln::targets {

namespace {

struct Entry {
  const char* name;
  std::unique_ptr<runtime::Target> (*make)();
};

std::unique_ptr<runtime::Target> make_cpu() { return make_cpu_target(); }

// One line per target.
const Entry kTargets[] = {
    {"cpu", make_cpu},
    {"cuda", make_cuda_target},
    {"opencl", make_opencl_target},
    {"reference", make_reference_target},
};

}  // namespace

std::vector<std::string> target_names() {
  std::vector<std::string> out;
  for (const Entry& e : kTargets) out.push_back(e.name);
  return out;
}

std::unique_ptr<runtime::Target> make_target(const std::string& name) {
  for (const Entry& e : kTargets) {
    if (name != e.name) continue;
    std::unique_ptr<runtime::Target> target = e.make();
    const std::string why = target->unavailable();
    if (!why.empty()) throw support::UserError("target " + name + " is unavailable here: " + why);
    return target;
  }
  std::string known;
  for (const Entry& e : kTargets) known += std::string(known.empty() ? "" : ", ") + e.name;
  throw support::UserError("unknown target '" + name + "' (known: " + known + ")");
}

}  // namespace kiln::targets
