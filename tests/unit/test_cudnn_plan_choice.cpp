// The plan cache's policy (cudnn/plan_choice.hpp) over given trial times: which of the
// heuristics' configurations each policy keeps, and where it stops trying. Pure, so it runs on
// any machine; the cache itself (cudnn/cudnn_plan_cache) only feeds it what cuDNN and the GPU say.
#include <catch2/catch.hpp>

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "cudnn/plan_choice.hpp"

using namespace opbench;

namespace {
constexpr auto kRefused = std::nullopt;
using Trials = std::vector<std::optional<double>>;
}  // namespace

TEST_CASE("first keeps the first configuration that runs, in the heuristics' order") {
  CHECK(choose_plan(PlanPolicy::first, Trials{5.0, 1.0, 0.5}) == 1);
  CHECK(choose_plan(PlanPolicy::first, Trials{kRefused, kRefused, 9.0, 1.0}) == 3);
  // Its time does not matter: the memops norm provider passes 0 for every trial.
  CHECK(choose_plan(PlanPolicy::first, Trials{kRefused, 0.0, 0.0}) == 2);
}

TEST_CASE("fastest keeps the quickest trial; a tie keeps the better-ranked configuration") {
  CHECK(choose_plan(PlanPolicy::fastest, Trials{5.0, 1.0, 3.0}) == 2);
  CHECK(choose_plan(PlanPolicy::fastest, Trials{kRefused, 4.0, kRefused, 2.0}) == 4);
  CHECK(choose_plan(PlanPolicy::fastest, Trials{2.0, 2.0, 2.0}) == 1);
  // A trial with no finite time never wins, but still counts as a configuration that ran.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(choose_plan(PlanPolicy::fastest, Trials{nan, 7.0}) == 2);
  CHECK(choose_plan(PlanPolicy::fastest, Trials{nan}) == 0);
}

TEST_CASE("no configuration that runs leaves no choice, under either policy") {
  for (PlanPolicy p : {PlanPolicy::first, PlanPolicy::fastest}) {
    CHECK(choose_plan(p, Trials{}) == 0);
    CHECK(choose_plan(p, Trials{kRefused, kRefused}) == 0);
  }
}

TEST_CASE("first stops at its choice; fastest tries every configuration") {
  PlanChoice first(PlanPolicy::first);
  CHECK_FALSE(first.consider(1, kRefused));
  CHECK_FALSE(first.done());
  CHECK(first.consider(2, 3.0));
  CHECK(first.done());
  // Nothing after the choice is considered: not chosen, not counted.
  CHECK_FALSE(first.consider(3, 0.1));
  CHECK(first.chosen() == 2);
  CHECK(first.ran() == 1);

  PlanChoice fastest(PlanPolicy::fastest);
  CHECK(fastest.consider(1, 3.0));
  CHECK_FALSE(fastest.done());
  CHECK_FALSE(fastest.consider(2, 4.0));
  CHECK(fastest.consider(3, 1.5));
  CHECK_FALSE(fastest.consider(4, kRefused));
  CHECK_FALSE(fastest.done());
  CHECK(fastest.chosen() == 3);
  CHECK(fastest.ran() == 3);
  CHECK(fastest.chosen_us() == 1.5);
  CHECK(std::string(plan_policy_name(fastest.policy())) == "fastest");
}
