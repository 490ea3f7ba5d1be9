// Exceptions to messages and exit statuses; see exit_status.hpp.
#include "tools/exit_status.hpp"

#include <exception>

#include "support/diagnostic.hpp"

namespace kiln::tools {

int run_reporting_errors(const std::function<int()>& command, std::ostream& out,
                         std::ostream& err) {
  try {
    return command();
  } catch (const support::UserError& e) {
    out.flush();
    err << e.what() << "\n";
    return kUserErrorStatus;
  } catch (const support::InternalError& e) {
    // what() already reads "internal error at FILE:LINE: ...".
    out.flush();
    err << "kiln: " << e.what() << "\n";
    return kInternalErrorStatus;
  } catch (const std::exception& e) {
    // kiln's own failure (a broken invariant, memory exhausted, a library's error).
    out.flush();
    err << "kiln: internal error: " << e.what() << "\n";
    return kInternalErrorStatus;
  } catch (...) {
    out.flush();
    err << "kiln: internal error: an exception of unknown type\n";
    return kInternalErrorStatus;
  }
}

}  // namespace kiln::tools
