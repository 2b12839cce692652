#pragma once
// One attention case run through its provider and written as a row, for bench_attention and
// bench_step alike.
#include <optional>
#include <string>

#include "attention/attention_provider.hpp"
#include "attention/attention_shape.hpp"
#include "common/capture_tables.hpp"
#include "common/hardware.hpp"
#include "common/record.hpp"

namespace opbench {

struct AttentionCase {
  AttentionShape shape;
  AttentionPass pass;
  std::string note;
  std::optional<CapturedCall> captured;  // --capture-path / --trace-path: the job's own call
};

// Under the stop rule: skipped when the provider cannot run it, failed when it throws; an ok
// result's note says whether the mean stayed noisy.
AttentionResult run_attention_case(AttentionProvider& provider, const AttentionCase& c,
                                   const AttentionRunOptions& run);

// The row of docs/outputs.md, "bench_attention".
Record attention_row(const AttentionCase& c, const AttentionProvider& provider,
                     const AttentionResult& r, const Peaks& peaks);

}  // namespace opbench
