#include "memops/memop_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/dtype.hpp"
#include "memops/elementwise.hpp"
#include "memops/memop_operands.hpp"
#include "memops/memop_spec.hpp"
#include "memops/reference_memops.hpp"

namespace opbench {
namespace {

// An elementwise operator's tolerance, by what its arithmetic does (memops/elementwise.hpp).
double elementwise_tolerance(const MemopCase& c) {
  switch (elementwise::accuracy_of(c.op, c.pass)) {
    case elementwise::Accuracy::exact:
      return 0.0;
    case elementwise::Accuracy::arithmetic:
      return stored_in(c.dtype, kElementwiseTolerance);
    case elementwise::Accuracy::exponential:
      return stored_in(c.dtype, kActivationTolerance);
  }
  return 0.0;
}

std::string elementwise_rule(const MemopCase& c, const std::string& rounding) {
  switch (elementwise::accuracy_of(c.op, c.pass)) {
    case elementwise::Accuracy::exact:
      return "exact";
    case elementwise::Accuracy::arithmetic:
      return "8u" + rounding;
    case elementwise::Accuracy::exponential:
      return "64u (exp within 2 ulp, ten roundings)" + rounding;
  }
  return "exact";
}

// Its outputs, computed from the inputs in memop_operands' order; an in-place kernel's updated
// operand is its first input, as it was before the call (saved[0]).
void check_elementwise(ReferenceCheck& k) {
  const MemopCase& c = k.c;
  const std::vector<OperandSpec> operands = memop_operands(c);
  const double tol = elementwise_tolerance(c);
  std::vector<OutputCheck*> outs;
  for (const auto& o : operands)
    if (o.written()) outs.push_back(&k.add(o.name, tol, c.cols));
  std::vector<double> a, b;
  element_blocks(c.elements(), [&](std::int64_t i0, std::int64_t i1) {
    const std::int64_t n = i1 - i0;
    std::vector<std::vector<float>> inputs;
    for (const auto& o : operands) {
      if (o.in_place())
        inputs.emplace_back(k.saved.at(0).begin() + i0, k.saved.at(0).begin() + i1);
      else if (o.read())
        inputs.push_back(k.get(o.name, i0, n));
    }
    const float* in[3] = {};
    for (std::size_t j = 0; j < inputs.size() && j < 3; ++j)
      in[j] = inputs[j].data();
    double* const y[2] = {zeroed(a, n), zeroed(b, n)};
    reference_memops::elementwise(c.op, c.pass, in, n, y);
    for (std::size_t j = 0; j < outs.size() && j < 2; ++j)
      k.compare(*outs[j], k.get(outs[j]->name, i0, n), y[j], i0);
  });
}

}  // namespace

std::string memop_tolerance_rule(const MemopCase& c) {
  const std::string rounding = c.dtype == DType::fp32 || !memop_accepts(c.op, DType::fp16)
                                   ? ""
                                   : fmt::format(", + {} for the rounding to {}",
                                                 unit_roundoff(c.dtype), dtype_name(c.dtype));
  if (elementwise::is_elementwise(c.op)) return elementwise_rule(c, rounding);
  if (const MemopSpec* spec = memop_spec(c.op)) return spec->rule(c, rounding);
  return "exact";
}

std::deque<OutputCheck> check_memop_outputs(const MemopCase& c, OperandReader& read,
                                            const std::vector<std::vector<float>>& saved) {
  ReferenceCheck check(c, read, saved);
  if (elementwise::is_elementwise(c.op))
    check_elementwise(check);
  else if (const MemopSpec* spec = memop_spec(c.op))
    spec->check(check);
  return check.take();
}

void summarize_checks(const std::deque<OutputCheck>& checks, const std::string& rule,
                      MemopResult& r) {
  const OutputCheck* worst = &checks.front();
  bool passed = true;
  std::string names;
  for (const auto& ch : checks) {
    passed = passed && ch.passed();
    if (ch.ratio() > worst->ratio()) worst = &ch;
    names += (names.empty() ? "" : ", ") + ch.name;
  }
  r.check_passed = passed;
  r.max_abs_err = worst->relative();
  r.tolerance = worst->tolerance;
  if (passed)
    r.check_detail = fmt::format(
        "largest error {:.3g} of the output's largest magnitude, at {} (bound {:.3g}: {}); "
        "outputs checked: {}",
        worst->relative(), worst->where(), worst->tolerance, rule, names);
  else
    r.check_detail = fmt::format(
        "{}: got {:.9g}, want {:.9g}: error {:.3g} of max |{}| {:.3g} is {:.3g} > {:.3g} ({})",
        worst->where(), worst->got, worst->want, worst->max_err, worst->name, worst->scale(),
        worst->relative(), worst->tolerance, rule);
}

OutputCheck compare_bytes(const std::string& name, const unsigned char* want,
                          const unsigned char* got, std::size_t bytes, DType t, std::int64_t cols) {
  OutputCheck check{name, 0, cols};
  check.add(0, 0, 0);
  if (std::memcmp(want, got, bytes) == 0) return check;
  const std::size_t size = dtype_size(t);
  const auto at =
      static_cast<std::size_t>(std::mismatch(want, want + bytes, got).first - want) / size;
  check.add(static_cast<std::int64_t>(at), element_as_double(got, t, at),
            element_as_double(want, t, at));
  check.max_ref = std::max(check.max_ref, 1.0);
  if (check.max_err == 0) check.max_err = INFINITY;  // bytes differ, values compare equal (NaN)
  return check;
}

}  // namespace opbench
