#include "common/measure.hpp"

#include <fmt/format.h>

#include <cmath>

#include "common/error.hpp"
#include "common/timer.hpp"

namespace opbench {

void validate(const MeasureOptions& o) {
  auto check = [](bool ok, const char* flag, const std::string& why) {
    if (!ok) throw bad_input(fmt::format("--{}: {}", flag, why));
  };
  check(o.warmup_iters >= 0, "warmup", fmt::format("must be >= 0, got {}", o.warmup_iters));
  check(o.warmup_time_s >= 0 && std::isfinite(o.warmup_time_s), "warmup-time",
        "must be >= 0 seconds");
  check(o.min_samples >= 1, "min-samples", fmt::format("must be >= 1, got {}", o.min_samples));
  check(o.max_samples >= o.min_samples, "max-samples",
        fmt::format("must be >= --min-samples ({}), got {}", o.min_samples, o.max_samples));
  check(o.min_time_s >= 0 && std::isfinite(o.min_time_s), "min-time", "must be >= 0 seconds");
  check(o.max_time_s >= o.min_time_s && std::isfinite(o.max_time_s), "max-time",
        fmt::format("must be >= --min-time ({} s)", o.min_time_s));
  check(o.max_noise > 0 && o.max_noise < 1, "max-noise",
        fmt::format("must be in (0, 1), got {}", o.max_noise));
}

Measurement measure(const MeasureOptions& o, const std::function<double()>& sample,
                    const std::function<void()>& prepare) {
  Measurement m;
  CpuTimer wall;
  while (m.warmup_runs < o.warmup_iters || wall.elapsed_s() < o.warmup_time_s) {
    if (prepare) prepare();
    sample();
    ++m.warmup_runs;
    // A single run longer than the whole sampling budget needs no further warm-up.
    if (m.warmup_runs >= o.warmup_iters && wall.elapsed_s() > o.max_time_s) break;
  }
  m.warmup_s = wall.elapsed_s();

  wall.restart();
  const int floor_samples = std::min(o.min_samples, 3);  // fewest samples that give a spread
  while (true) {
    if (prepare) prepare();
    m.samples_us.push_back(sample());
    auto n = static_cast<int>(m.samples_us.size());
    double elapsed = wall.elapsed_s();
    if (n >= o.max_samples) break;
    if (elapsed >= o.max_time_s && n >= floor_samples) break;
    if (n >= o.min_samples && elapsed >= o.min_time_s) {
      Stats s = compute_stats(m.samples_us);
      if (s.rse < o.max_noise) break;
    }
  }
  m.sampling_s = wall.elapsed_s();
  m.stats = compute_stats(m.samples_us);
  m.noisy = m.stats.rse >= o.max_noise;
  return m;
}

std::string noise_note(const Measurement& m, const MeasureOptions& o) {
  if (!m.noisy) return "";
  return fmt::format("noisy (rse {:.1f}% > {:.1f}% after {} samples, {:.1f} s)", m.stats.rse * 100,
                     o.max_noise * 100, m.stats.count, m.sampling_s);
}

}  // namespace opbench
