#pragma once
// --check for every memops provider, written once: each output of a case compared with the plain
// fp64 reference (memops/reference_memops), the tolerance rule, and the verdict a row carries.
// Providers give only an OperandReader: a slice of host memory (the CPU) or a fetch from the
// device (CUDA). max_abs_err has one meaning in every row: the largest |got - want| of the worst
// output relative to that output's largest |want|, held to `tolerance` (docs/outputs.md).
#include <cmath>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/dtype.hpp"
#include "memops/memop.hpp"
#include "memops/memop_provider.hpp"

namespace opbench {

// One output compared with the reference: the largest |got - want| and where, relative to the
// output's largest |want| (its scale), against `tolerance`.
struct OutputCheck {
  std::string name;
  double tolerance = 0;
  std::int64_t cols = 0;  // to name an element [row, col] (0: by its index)
  double max_ref = 0, max_err = 0;
  std::int64_t worst = -1;
  double got = 0, want = 0;

  void add(std::int64_t i, double g, double w) {
    max_ref = std::max(max_ref, std::fabs(w));
    double err = std::fabs(g - w);
    if (std::isnan(g) || std::isnan(w)) err = std::isnan(g) && std::isnan(w) ? 0.0 : INFINITY;
    if (worst < 0 || err > max_err) {
      max_err = err;
      worst = i;
      got = g;
      want = w;
    }
  }
  double scale() const { return max_ref > 0 ? max_ref : 1.0; }
  double relative() const { return max_err / scale(); }
  bool passed() const { return relative() <= tolerance; }
  double ratio() const {
    if (tolerance > 0) return relative() / tolerance;
    return relative() > 0 ? INFINITY : 0.0;
  }
  std::string where() const {
    if (cols > 0 && worst >= 0) return fmt::format("{}[{},{}]", name, worst / cols, worst % cols);
    return fmt::format("{}[{}]", name, worst);
  }
};

// The elements [first, first + count) of one of the case's operands (memop_operands' names) as
// the check reads them: decoded to float (fp32, bf16, fp16 and e4m3 all fit exactly), as token
// ids, or as the raw bits of a bf16 input the reference takes as bits.
class OperandReader {
 public:
  virtual ~OperandReader() = default;
  virtual std::vector<float> floats(const std::string& name, std::int64_t first,
                                    std::int64_t count) = 0;
  virtual std::vector<std::int64_t> ids(const std::string& name, std::int64_t first,
                                        std::int64_t count) = 0;
  virtual std::vector<std::uint16_t> bits16(const std::string& name, std::int64_t first,
                                            std::int64_t count) = 0;
};

// Every output of `c` against the reference. `saved`: the in-place operands' values before the
// run, in memop_operands' order (AdamW's param, m, v). Not for copies (compare_bytes).
std::deque<OutputCheck> check_memop_outputs(const MemopCase& c, OperandReader& read,
                                            const std::vector<std::vector<float>>& saved);
// The bound each output of `c` is held to, in words, for the row's detail.
std::string memop_tolerance_rule(const MemopCase& c);
// A copy compared byte for byte: `got` against `want`, `bytes` each, in elements of `t`; a
// mismatch is named [row, col] in rows of `cols` elements (0: by its index).
OutputCheck compare_bytes(const std::string& name, const unsigned char* want,
                          const unsigned char* got, std::size_t bytes, DType t, std::int64_t cols);
// The verdict, the worst output's error and bound, and the detail of a case's checks.
void summarize_checks(const std::deque<OutputCheck>& checks, const std::string& rule,
                      MemopResult& r);

}  // namespace opbench
