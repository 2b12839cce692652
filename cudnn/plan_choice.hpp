#pragma once
// Which of the heuristics' engine configurations a run keeps, as they are tried in cuDNN's order:
// the policy of cudnn/cudnn_plan_cache, without cuDNN, so that it is tested on any machine.
//
//   first   — the first configuration whose plan finalizes and runs. cuDNN's graph API guide
//             ("Heuristics", docs.nvidia.com/cudnn/developer/graph-api) says CUDNN_HEUR_MODE_A
//             returns the configurations ranked by expected performance, so the first that runs
//             is cuDNN's own pick; nothing after it is tried.
//   fastest — every configuration offered is tried and the quickest trial kept (a tie keeps the
//             earlier, cuDNN's better-ranked one), as cudnn-frontend's cudnnFindPlan times the
//             plans cudnnGetPlan could build (include/cudnn_frontend_find_plan.h, _get_plan.h).
//
// Either way a configuration that does not finalize or run is passed over, as cudnnGetPlan does.
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace opbench {

enum class PlanPolicy { first, fastest };

inline const char* plan_policy_name(PlanPolicy p) {
  return p == PlanPolicy::first ? "first" : "fastest";
}

class PlanChoice {
 public:
  explicit PlanChoice(PlanPolicy policy) : policy_(policy) {}

  // Configuration `position` (1-based, in the heuristics' order) ran, a trial in `us`
  // microseconds (the first policy ignores it), or was refused (nullopt). Returns whether it is
  // now the choice.
  bool consider(int position, std::optional<double> us) {
    if (!us || done()) return false;
    ++ran_;
    // fastest: only a strictly quicker trial replaces the choice, so a NaN or infinite one is
    // never chosen (it still counts as run), and a tie keeps cuDNN's better-ranked configuration.
    const bool better = policy_ == PlanPolicy::first || *us < best_us_;
    if (better) {
      chosen_ = position;
      best_us_ = *us;
      return true;
    }
    return false;
  }
  // Whether trying more configurations can change the choice.
  bool done() const { return policy_ == PlanPolicy::first && chosen_ > 0; }

  PlanPolicy policy() const { return policy_; }
  int chosen() const { return chosen_; }  // the chosen position, 0 while none ran
  int ran() const { return ran_; }        // how many configurations ran
  double chosen_us() const { return best_us_; }

 private:
  PlanPolicy policy_;
  int chosen_ = 0, ran_ = 0;
  double best_us_ = std::numeric_limits<double>::infinity();
};

// The position (1-based) `policy` keeps among trials in the heuristics' order (nullopt: refused),
// 0 when none ran; stops where the policy does.
inline int choose_plan(PlanPolicy policy, const std::vector<std::optional<double>>& trials) {
  PlanChoice choice(policy);
  for (std::size_t i = 0; i < trials.size() && !choice.done(); ++i)
    choice.consider(static_cast<int>(i) + 1, trials[i]);
  return choice.chosen();
}

}  // namespace opbench
