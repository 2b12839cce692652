#pragma once
// bench_attention --capture-path / --trace-path: the attention calls a real job ran (a converted
// trace's SDPA operators: trace/op_shapes.hpp), as cases to run alone beside their in-job time.
#include <optional>
#include <string>
#include <vector>

#include "attention/attention_run.hpp"
#include "common/capture_tables.hpp"

namespace opbench {

// One case per attention key (api, pass, dtype and shape) of `source`'s tables (rank `rank`'s
// only when given), calls and times summed, largest in-job total first. Shapes whose dtype or
// dims bench_attention cannot take are named in `left_out`.
std::vector<AttentionCase> capture_attention_cases(const ShapeSource& source,
                                                   std::optional<int> rank,
                                                   std::vector<std::string>* left_out);

}  // namespace opbench
