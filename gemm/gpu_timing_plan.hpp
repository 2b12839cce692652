#pragma once
// How the cuBLASLt provider times a GEMM, decided on the host so it can be tested without a
// GPU: the CUDA graph of a launch-bound case, the ranking of autotune candidates, and the
// device memory its operand sets may take.
#include <cstdint>
#include <vector>

namespace opbench {

// A launch-bound GEMM is timed as a CUDA graph of `launches` launches that walks the rotating
// operand sets in order: at least every set once, and long enough to last `target_us`, but
// no more than `max_launches`. `sets_walked` < the planned sets means the cap cut the walk:
// the working set the graph touches is then smaller than planned (the row must say so).
struct GraphLaunchPlan {
  int launches = 1;
  std::int64_t sets_walked = 1;
};
GraphLaunchPlan plan_graph_launches(double launch_us, std::int64_t sets, double target_us,
                                    int max_launches);

// The candidate whose median trial time is lowest (`trials[c]` holds candidate c's trial
// samples; a candidate with none is never chosen); -1 when none has a sample. The median of a
// few interleaved short samples resists a sample disturbed by a clock change or a neighbour.
int fastest_by_median(const std::vector<std::vector<double>>& trials);

}  // namespace opbench
