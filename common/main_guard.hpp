#pragma once
// Every binary's main() runs inside run_guarded(): user mistakes and failures become one
// `error: ...` line on stderr and an exit code, never an abort or a stack trace.
#include <functional>

namespace opbench {

int run_guarded(int argc, char** argv, const std::function<int(int, char**)>& body);

}  // namespace opbench
