#include "common/main_guard.hpp"

#include <cstdio>
#include <exception>
#include <new>

#include "common/error.hpp"

namespace opbench {

int run_guarded(int argc, char** argv, const std::function<int(int, char**)>& body) {
  try {
    return body(argc, argv);
  } catch (const Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", e.what());
    return static_cast<int>(e.code());
  } catch (const std::bad_alloc&) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: out of host memory\n");
    return static_cast<int>(ExitCode::run_failed);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: internal error: %s\n", e.what());
    return static_cast<int>(ExitCode::run_failed);
  }
}

}  // namespace opbench
