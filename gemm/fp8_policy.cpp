#include "gemm/fp8_policy.hpp"

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/text.hpp"

namespace opbench {

Fp8Accumulation parse_fp8_accumulation(const std::string& text) {
  const std::string t = to_lower(text);
  if (t == "auto") return Fp8Accumulation::by_pass;
  if (t == "fast") return Fp8Accumulation::fast;
  if (t == "split") return Fp8Accumulation::split;
  throw bad_input(fmt::format(
      "--fp8-accum: unknown mode '{}' (accepted: auto — fast for fprop, split for dgrad and "
      "wgrad, as Transformer Engine — fast, split)",
      text));
}

bool fp8_fast_accumulation(Fp8Accumulation mode, const std::string& pass) {
  switch (mode) {
    case Fp8Accumulation::fast:
      return true;
    case Fp8Accumulation::split:
      return false;
    case Fp8Accumulation::by_pass:
      break;
  }
  return pass != "dgrad" && pass != "wgrad";
}

std::string fp8_accumulation_name(bool fast) {
  return fast ? "fast accumulation" : "split accumulator";
}

bool fp8_needs_tn_layout(int cc_major, int cc_minor) {
  const int sm = cc_major * 10 + cc_minor;
  return !((sm >= 100 && sm < 120) || sm >= 130);
}

GemmProblem fp8_layout_as_run(GemmProblem p, int cc_major, int cc_minor, std::string* note) {
  if (p.dtype != DType::fp8_e4m3 || (!p.transa && p.transb)) return p;
  if (!fp8_needs_tn_layout(cc_major, cc_minor)) return p;
  p.transa = false;
  p.transb = true;
  if (note)
    *note = fmt::format(
        "fp8 in cuBLASLt needs its TN layout on compute capability {}.{} (NT in this row-major "
        "table): operands pre-transposed, as Transformer Engine does",
        cc_major, cc_minor);
  return p;
}

}  // namespace opbench
