#include "gemm/expert_gemm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/enum_names.hpp"
#include "common/error.hpp"
#include "common/list_items.hpp"
#include "common/text.hpp"

namespace opbench {

constexpr EnumNames<MoeImpl, 3> kMoeImplNames{
    {{MoeImpl::grouped, "grouped"}, {MoeImpl::loop, "loop"}, {MoeImpl::padded, "padded"}}};

std::string moe_impl_name(MoeImpl impl) {
  return std::string(enum_name(kMoeImplNames, impl, ""));
}

std::vector<MoeImpl> parse_moe_impls(const std::string& text) {
  std::vector<MoeImpl> out;
  for (const auto& item : split(text, ',')) {
    const auto impl = enum_from_name(kMoeImplNames, item);
    if (!impl)
      throw bad_input(fmt::format("--moe-impl: unknown implementation '{}' (accepted: {})", item,
                                  enum_name_list(kMoeImplNames)));
    push_once(out, *impl, "--moe-impl", item);
  }
  if (out.empty()) throw bad_input("--moe-impl: empty list");
  return out;
}

std::int64_t ExpertGemm::min_tokens() const {
  return tokens.empty() ? 0 : *std::min_element(tokens.begin(), tokens.end());
}

std::int64_t ExpertGemm::max_tokens() const {
  return tokens.empty() ? 0 : *std::max_element(tokens.begin(), tokens.end());
}

std::int64_t ExpertGemm::total_tokens() const {
  return std::accumulate(tokens.begin(), tokens.end(), std::int64_t{0});
}

std::size_t ExpertGemm::busiest() const {
  return static_cast<std::size_t>(std::max_element(tokens.begin(), tokens.end()) - tokens.begin());
}

GemmProblem ExpertGemm::expert(std::size_t i) const {
  return pass_problem(LinearLayer{"expert", tokens.at(i), N, K, 1, ""}, pass, dtype);
}

GemmProblem ExpertGemm::padded() const {
  GemmProblem p = pass_problem(LinearLayer{"expert", max_tokens(), N, K, 1, ""}, pass, dtype);
  p.batch = std::max<std::int64_t>(experts(), 1);
  return p;
}

std::vector<GemmProblem> ExpertGemm::problems(MoeImpl impl) const {
  if (impl == MoeImpl::padded) return {padded()};
  std::vector<GemmProblem> out;
  for (std::size_t i = 0; i < tokens.size(); ++i)
    out.push_back(expert(i));
  return out;
}

std::int64_t ExpertGemm::flops() const {
  std::int64_t sum = 0;
  for (std::size_t i = 0; i < tokens.size(); ++i)
    sum += expert(i).flops();
  return sum;
}

std::optional<double> ExpertGemm::efficiency() const {
  const std::int64_t padded = padded_flops();
  if (padded <= 0) return std::nullopt;
  return static_cast<double>(flops()) / static_cast<double>(padded);
}

// An expert without tokens reads nothing (no GEMM runs for it); in wgrad it still writes its
// zero gradient.
std::int64_t ExpertGemm::read_bytes() const {
  std::int64_t sum = 0;
  for (std::size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] > 0) sum += expert(i).read_bytes();
  return sum;
}

std::int64_t ExpertGemm::write_bytes() const {
  std::int64_t sum = 0;
  for (std::size_t i = 0; i < tokens.size(); ++i)
    sum += expert(i).write_bytes();
  return sum;
}

ExpertCalls expert_calls(const std::vector<GemmProblem>& problems) {
  ExpertCalls calls;
  for (std::size_t i = 0; i < problems.size(); ++i) {
    const GemmProblem& p = problems[i];
    if (p.m == 0 || p.n == 0) continue;
    (p.k == 0 ? calls.zeroed : calls.gemms).push_back(i);
  }
  return calls;
}

CheckResult check_experts(const ExpertGemm& experts, const std::vector<const void*>& a,
                          const std::vector<const void*>& b, const std::vector<const void*>& c,
                          const CheckPrecision& precision) {
  CheckResult all;
  all.passed = true;
  std::string first_failure;
  std::int64_t checked = 0;
  for (std::size_t i = 0; i < experts.tokens.size(); ++i) {
    const GemmProblem p = experts.expert(i);
    if (p.m == 0 || p.n == 0) continue;  // nothing was computed
    CheckResult one;
    if (p.k == 0) {
      // No tokens in wgrad: the gradient must be zero, and nothing else is a right answer.
      double largest = 0;
      for (std::int64_t e = 0; e < p.c_elements(); ++e)
        largest = std::max(
            largest, std::fabs(element_as_double(c[i], p.out_dtype, static_cast<std::size_t>(e))));
      one.passed = largest == 0;
      one.max_residual = largest;
      one.detail = fmt::format("no tokens: the gradient holds {} where it must be zero", largest);
    } else {
      one = freivalds_check(p, a[i], b[i], c[i], precision);
    }
    ++checked;
    all.tolerance = std::max(all.tolerance, one.tolerance);
    if (!(one.max_residual <= all.max_residual)) all.max_residual = one.max_residual;
    if (!one.passed && all.passed) {
      all.passed = false;
      first_failure = fmt::format("expert {} ({} tokens): {}", i, experts.tokens[i], one.detail);
    }
  }
  all.detail = all.passed ? fmt::format("{} experts checked, worst Freivalds residual {:.2e}",
                                        checked, all.max_residual)
                          : first_failure;
  return all;
}

}  // namespace opbench
