#include "gemm/moe_routing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/error.hpp"
#include "common/json_reader.hpp"
#include "common/text.hpp"

namespace opbench {
namespace {

std::vector<std::int64_t> balanced(std::int64_t assignments, std::int64_t experts) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(experts), assignments / experts);
  for (std::int64_t i = 0; i < assignments % experts; ++i)
    ++out[static_cast<std::size_t>(i)];
  return out;
}

std::vector<std::int64_t> zipf(double s, std::int64_t assignments, std::int64_t experts,
                               std::int64_t cap) {
  const auto n = static_cast<std::size_t>(experts);
  std::vector<double> weight(n);
  for (std::size_t i = 0; i < n; ++i)
    weight[i] = std::pow(static_cast<double>(i + 1), -s);
  const double sum = std::accumulate(weight.begin(), weight.end(), 0.0);
  // Largest remainder: floors first, then one more to the largest fractions (the lower expert
  // first among equals) until the counts sum to A.
  std::vector<std::int64_t> out(n);
  std::vector<std::pair<double, std::size_t>> remainder(n);
  std::int64_t given = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double exact = static_cast<double>(assignments) * weight[i] / sum;
    out[i] = static_cast<std::int64_t>(std::floor(exact));
    remainder[i] = {exact - std::floor(exact), i};
    given += out[i];
  }
  std::stable_sort(remainder.begin(), remainder.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::int64_t k = 0; k < assignments - given; ++k)
    ++out[remainder[static_cast<std::size_t>(k) % n].second];
  // A token picks distinct experts: at most `cap` (N x T) each; the excess moves on in order.
  std::int64_t excess = 0;
  for (int sweep = 0; sweep < 2; ++sweep)
    for (std::size_t i = 0; i < n; ++i) {
      out[i] += excess;
      excess = std::max<std::int64_t>(0, out[i] - cap);
      out[i] -= excess;
    }
  return out;
}

std::vector<std::int64_t> from_file(const std::string& path, std::int64_t experts) {
  const nlohmann::json doc = load_json_file(path);
  if (!doc.is_array())
    throw bad_input(fmt::format("--routing {}: expected a JSON list of {} per-expert token counts",
                                path, experts));
  if (static_cast<std::int64_t>(doc.size()) != experts)
    throw bad_input(fmt::format("--routing {}: {} counts, but the model has {} routed experts",
                                path, doc.size(), experts));
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < doc.size(); ++i) {
    const auto& v = doc[i];
    if (!v.is_number_integer())
      throw bad_input(
          fmt::format("--routing {}: entry {} (expert {}): expected a whole number of "
                      "tokens, got {}",
                      path, i, i + 1, v.dump()));
    if (v.get<std::int64_t>() < 0)
      throw bad_input(fmt::format("--routing {}: entry {} (expert {}): {} tokens is negative", path,
                                  i, i + 1, v.get<std::int64_t>()));
    out.push_back(v.get<std::int64_t>());
  }
  if (std::accumulate(out.begin(), out.end(), std::int64_t{0}) == 0)
    throw bad_input(fmt::format("--routing {}: every count is zero", path));
  return out;
}

}  // namespace

RoutingSpec parse_routing(const std::string& text) {
  RoutingSpec spec;
  spec.text = text;
  const std::string lower = to_lower(trim(text));
  if (lower == "balanced") return spec;
  if (lower.rfind("zipf:", 0) == 0) {
    spec.kind = RoutingSpec::Kind::zipf;
    const std::string value = lower.substr(5);
    char* end = nullptr;
    spec.zipf_s = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || !std::isfinite(spec.zipf_s) || spec.zipf_s <= 0)
      throw bad_input(
          fmt::format("--routing {}: the zipf exponent must be a number above 0 (zipf:1.2)", text));
    return spec;
  }
  if (lower.empty() || lower.rfind("zipf", 0) == 0)
    throw bad_input(fmt::format(
        "--routing '{}': accepted: balanced, zipf:S (S > 0) or a JSON file of per-expert counts",
        text));
  spec.kind = RoutingSpec::Kind::file;
  spec.path = text;
  return spec;
}

std::vector<std::int64_t> route_tokens(const RoutingSpec& spec, std::int64_t experts,
                                       std::int64_t top_k, std::int64_t ep,
                                       std::int64_t tokens_per_rank) {
  const std::int64_t assignments = ep * tokens_per_rank * top_k;
  switch (spec.kind) {
    case RoutingSpec::Kind::balanced:
      return balanced(assignments, experts);
    case RoutingSpec::Kind::zipf:
      return zipf(spec.zipf_s, assignments, experts, ep * tokens_per_rank);
    case RoutingSpec::Kind::file:
      return from_file(spec.path, experts);
  }
  return {};
}

RankLoad busiest_rank(const std::vector<std::int64_t>& expert_counts, std::int64_t ep) {
  const std::size_t per_rank = expert_counts.size() / static_cast<std::size_t>(ep);
  RankLoad best;
  best.total = -1;
  for (std::int64_t r = 0; r < ep; ++r) {
    const auto first = expert_counts.begin() + static_cast<std::ptrdiff_t>(r * per_rank);
    const std::vector<std::int64_t> mine(first, first + static_cast<std::ptrdiff_t>(per_rank));
    const std::int64_t total = std::accumulate(mine.begin(), mine.end(), std::int64_t{0});
    if (total > best.total) {
      best.rank = static_cast<int>(r);
      best.counts = mine;
      best.total = total;
      best.min = *std::min_element(mine.begin(), mine.end());
      best.max = *std::max_element(mine.begin(), mine.end());
    }
  }
  return best;
}

}  // namespace opbench
