// The copies that change the number format (memops/memop_spec.hpp): the casts between fp32 and
// bf16, and the fp8 quantisation of bf16 with its amax. Each rounds once, so each is exact.
#include <algorithm>

#include "memops/memop_check.hpp"
#include "memops/memop_inputs.hpp"
#include "memops/memop_spec.hpp"
#include "memops/reference_memops.hpp"

namespace opbench::memop_specs {

namespace ref = reference_memops;

void cast_operands(const MemopCase& c, OperandList& list) {
  const bool to_bf16 = c.op == MemOp::cast_to_bf16;
  list.in("x", c.elements(), to_bf16 ? DType::fp32 : DType::bf16)
      .out("y", c.elements(), to_bf16 ? DType::bf16 : DType::fp32);
}

void check_cast(ReferenceCheck& k) {
  auto& y = k.add("y", 0, k.c.cols);
  std::vector<double> a;
  element_blocks(k.c.elements(), [&](std::int64_t i0, std::int64_t i1) {
    const std::int64_t n = i1 - i0;
    if (k.c.op == MemOp::cast_to_bf16)
      ref::cast_to_bf16(k.get("x", i0, n).data(), n, zeroed(a, n));
    else
      ref::cast_to_fp32(k.read.bits16("x", i0, n).data(), n, zeroed(a, n));
    k.compare(y, k.get("y", i0, n), a.data(), i0);
  });
}

// bf16 input and the fp32 scale -> e4m3 output and the amax.
void fp8_operands(const MemopCase& c, OperandList& list) {
  list.in("x", c.elements(), DType::bf16, kWideInputs)
      .filled("scale", 1, DType::fp32, OperandFill::fp8_scale)
      .out("y", c.elements(), DType::fp8_e4m3)
      .out("amax", 1, DType::fp32);
}

void check_fp8(ReferenceCheck& k) {
  auto& y = k.add("y", 0, k.c.cols);
  double amax = 0;
  std::vector<double> a;
  element_blocks(k.c.elements(), [&](std::int64_t i0, std::int64_t i1) {
    const std::int64_t n = i1 - i0;
    amax = std::max(amax, ref::fp8_quantize(k.read.bits16("x", i0, n).data(),
                                            memop_inputs::kFp8Scale, n, zeroed(a, n)));
    k.compare(y, k.get("y", i0, n), a.data(), i0);
  });
  k.add("amax", 0).add(0, k.get("amax", 0, 1)[0], amax);
}

std::string exact_rule(const MemopCase&, const std::string&) {
  return "exact";
}

}  // namespace opbench::memop_specs
