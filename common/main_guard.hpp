#pragma once
// Every binary's main() runs inside run_guarded(): user mistakes and failures become one
// `error: ...` line on stderr and an exit code, never an abort or a stack trace.
#include <functional>

namespace opbench {

// report_input_errors: false on all but one rank of an MPI job, where every rank reads the
// same input and would print the same error.
int run_guarded(int argc, char** argv, const std::function<int(int, char**)>& body,
                bool report_input_errors = true);

}  // namespace opbench
