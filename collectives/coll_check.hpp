#pragma once
// The expected result of a collective under the check pattern (collectives/pattern.hpp), element
// by element, for the backends that check on the host.
#include <cstdint>
#include <optional>
#include <string>

#include "collectives/communicator.hpp"
#include "collectives/pattern.hpp"

namespace opbench {

PatternSpec make_pattern(const CollCall& call, int nranks);
// Why a call's result cannot be checked (the pattern is not `verifiable`), or nullopt.
std::optional<std::string> unverifiable_reason(const CollCall& call, const PatternSpec& spec);

// Number of elements of this rank's result, and where the result starts in the receive buffer
// (in elements). Non-root ranks of reduce have no result to check.
std::int64_t result_elements(const CollCall& call, int rank, int nranks);

// Expected value of result element j on `rank`.
double expected_result(const CollCall& call, const PatternSpec& spec, int rank, int nranks,
                       std::int64_t j);

// The input element i of `rank` (every op fills its send data with this).
inline double input_element(const PatternSpec& spec, int rank, std::int64_t i) {
  return pattern_input(spec, rank, i);
}

}  // namespace opbench
