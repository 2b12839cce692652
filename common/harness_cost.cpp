#include "common/harness_cost.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace opbench {

nlohmann::json HarnessCost::add_case(double case_s, const Measurement& m) {
  const double timed_s = std::accumulate(m.samples_us.begin(), m.samples_us.end(), 0.0) * 1e-6;
  const double sampling_s = m.sampling_s, warmup_s = m.warmup_s;
  ++cases_;
  case_s_ += case_s;
  timed_s_ += timed_s;
  warmup_s_ += warmup_s;
  const double between = std::max(0.0, sampling_s - timed_s);
  between_s_ += between;
  return {{"case_s", case_s},
          {"timed_s", timed_s},
          {"warmup_s", warmup_s},
          {"between_samples_s", between},
          {"setup_and_check_s", std::max(0.0, case_s - sampling_s - warmup_s)}};
}

void HarnessCost::result_written() {
  if (first_result_s_ < 0) first_result_s_ = clock_.elapsed_s();
}

namespace {
std::string share(double part, double whole) {
  return whole > 0 ? fmt::format("{:.1f} s ({:.0f}%)", part, 100 * part / whole)
                   : fmt::format("{:.1f} s", part);
}
}  // namespace

std::string HarnessCost::text() const {
  const double other = std::max(0.0, case_s_ - timed_s_ - warmup_s_ - between_s_);
  std::string first = first_result_s_ < 0
                          ? std::string("no result written")
                          : fmt::format("first result after {:.1f} s", first_result_s_);
  return fmt::format(
      "time: {}; {} case{} in {:.1f} s: timed samples {}, warm-up {}, untimed between samples {}, "
      "set-up and checks {}; {:.1f} s outside cases",
      first, cases_, cases_ == 1 ? "" : "s", case_s_, share(timed_s_, case_s_),
      share(warmup_s_, case_s_), share(between_s_, case_s_), share(other, case_s_),
      std::max(0.0, clock_.elapsed_s() - case_s_));
}

std::string HarnessCost::markdown() const {
  const double other = std::max(0.0, case_s_ - timed_s_ - warmup_s_ - between_s_);
  std::string md =
      "## Where the time went\n\n| part | seconds | share of cases |\n|---|---:|---:|\n";
  auto line = [&](const std::string& what, double s) {
    md += fmt::format("| {} | {:.2f} | {} |\n", what, s,
                      case_s_ > 0 ? fmt::format("{:.1f}%", 100 * s / case_s_) : "");
  };
  line("timed samples", timed_s_);
  line("warm-up runs", warmup_s_);
  line("untimed work between samples (rotation, cache flush)", between_s_);
  line("set-up and checks (allocation, fills, plans, verification)", other);
  md += fmt::format(
      "\n{} cases, {:.2f} s in all; first result written after {:.2f} s; {:.2f} s of the run "
      "outside any case (start-up, reports).",
      cases_, case_s_, std::max(0.0, first_result_s_), std::max(0.0, clock_.elapsed_s() - case_s_));
  return md;
}

}  // namespace opbench
