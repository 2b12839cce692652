#pragma once
// The one exception type of opbench: it carries a message written for the user and the exit
// code main() returns (2 for bad input, 1 for a run that failed).
#include <stdexcept>
#include <string>

namespace opbench {

enum class ExitCode : int { ok = 0, run_failed = 1, bad_input = 2 };

class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

inline Error bad_input(const std::string& message) {
  return Error(ExitCode::bad_input, message);
}
inline Error run_failure(const std::string& message) {
  return Error(ExitCode::run_failed, message);
}

}  // namespace opbench
