#pragma once
// bench_ccl's cases: a sweep of ops x dtypes x reductions x sizes x roots x placements, a
// model's messages (--model), or a captured job's collectives (--capture-path, --trace-path),
// for the world they run in.
#include <vector>

#include "collectives/ccl_options.hpp"
#include "collectives/ccl_report.hpp"

namespace opbench {

// The ranks a run has (a dry run's --world-size, else the launch's) and the size of its groups.
struct CclWorld {
  int world = 1;
  int group_size = 1;
};
// Checks the flags that name ranks or groups against the world of `launched` ranks (bad_input).
CclWorld ccl_world(const CclOptions& o, int launched);

// The cases in the order they run. `lead`: this rank says what a capture leaves out.
std::vector<CclCase> ccl_cases(const CclOptions& o, const CclWorld& w, bool lead);

}  // namespace opbench
