#pragma once
// How a router spreads tokens over the experts of an expert-parallel group, and which rank that
// leaves with the most work (the rank that sets the step time).
//
// With T tokens per rank, top_k experts per token and an EP group of N ranks, the group routes
// A = N x T x top_k assignments over E experts (docs/formulas.md, "MoE routing"):
//   balanced  A / E each, the remainder one by one from expert 1;
//   zipf:S    expert i (1-based) weighs i^-S; counts A x w_i / sum(w), rounded by largest
//             remainder so they sum to A; no expert takes more than N x T (a token picks distinct
//             experts): the excess moves on to the next experts in order (from expert 1 again
//             past the last);
//   FILE      a JSON list of E counts, a real router's histogram, taken as it is.
// Rank r holds experts r x E/N + 1 .. (r + 1) x E/N.
#include <cstdint>
#include <string>
#include <vector>

namespace opbench {

struct RoutingSpec {
  enum class Kind { balanced, zipf, file } kind = Kind::balanced;
  double zipf_s = 0;  // zipf:S
  std::string path;   // FILE
  std::string text;   // as given: "balanced", "zipf:1.2", the path
};

// "balanced", "zipf:S" (S > 0) or a file path; bad_input naming --routing otherwise.
RoutingSpec parse_routing(const std::string& text);

// Per-expert token counts of the EP group (E of them). `ep` must divide `experts`.
std::vector<std::int64_t> route_tokens(const RoutingSpec& spec, std::int64_t experts,
                                       std::int64_t top_k, std::int64_t ep,
                                       std::int64_t tokens_per_rank);

struct RankLoad {
  int rank = 0;                      // the most loaded rank (the lowest of equals)
  std::vector<std::int64_t> counts;  // its experts' token counts, in expert order
  std::int64_t min = 0, max = 0, total = 0;
};

// The rank of the EP group with the most tokens, and its experts' counts.
RankLoad busiest_rank(const std::vector<std::int64_t>& expert_counts, std::int64_t ep);

}  // namespace opbench
