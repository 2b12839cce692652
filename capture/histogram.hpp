#pragma once
// A log-bucketed histogram of call times with bounded relative error (the DDSketch idea: bucket i
// holds values in (γ^(i-1), γ^i] and reports 2·γ^i/(γ+1), which is within α = (γ-1)/(γ+1) of
// every value in it). A long job makes millions of calls per shape; storing them to sort for p99
// would grow without bound, and the buckets a shape actually uses (its times rarely span more
// than 100x) are a few hundred counters.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace opbench::capture {

class LogHistogram {
 public:
  // Relative error of every quantile: 1%.
  static constexpr double kAlpha = 0.01;
  static constexpr double kGamma = (1 + kAlpha) / (1 - kAlpha);

  void add(double ns) {
    const double v = std::max(ns, 1.0);  // below the clock's resolution: the first bucket
    const int index = static_cast<int>(std::ceil(std::log(v) / log_gamma()));
    if (counts_.empty()) {
      first_ = index;
      counts_.assign(1, 0);
    } else if (index < first_) {
      counts_.insert(counts_.begin(), static_cast<std::size_t>(first_ - index), 0);
      first_ = index;
    } else if (index - first_ >= static_cast<int>(counts_.size())) {
      counts_.resize(static_cast<std::size_t>(index - first_ + 1), 0);
    }
    ++counts_[static_cast<std::size_t>(index - first_)];
    ++n_;
  }

  std::uint64_t count() const { return n_; }

  // The nearest-rank q-quantile (the value of rank ⌈q·n⌉, 1-based), as its bucket reports it;
  // 0 when empty. The caller clamps to the exact min and max it keeps.
  double quantile(double q) const {
    if (n_ == 0) return 0.0;
    const auto rank = std::max<std::uint64_t>(
        1, static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(n_))));
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < counts_.size(); ++i) {
      seen += counts_[i];
      if (seen >= rank) return 2.0 * std::pow(kGamma, first_ + static_cast<int>(i)) / (kGamma + 1);
    }
    return 2.0 * std::pow(kGamma, first_ + static_cast<int>(counts_.size()) - 1) / (kGamma + 1);
  }

  std::size_t buckets() const { return counts_.size(); }

 private:
  static double log_gamma() {
    static const double value = std::log(kGamma);
    return value;
  }
  std::vector<std::uint64_t> counts_;
  int first_ = 0;
  std::uint64_t n_ = 0;
};

}  // namespace opbench::capture
