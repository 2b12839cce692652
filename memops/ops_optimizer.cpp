// The optimizer (memops/memop_spec.hpp): one AdamW step over fp32 state, with an fp32 gradient or,
// in mixed precision, a bf16 gradient and the bf16 parameters written back.
#include "memops/memop_check.hpp"
#include "memops/memop_inputs.hpp"
#include "memops/memop_spec.hpp"
#include "memops/reference_memops.hpp"

namespace opbench::memop_specs {

namespace ref = reference_memops;

// The parameter, the gradient and both moments, updated in place.
void adamw_operands(const MemopCase& c, OperandList& list) {
  const std::int64_t n = c.elements();
  const bool mixed = c.op == MemOp::adamw_bf16;
  list.state("param", n, OperandFill::uniform)
      .in("grad", n, mixed ? DType::bf16 : DType::fp32)
      .state("m", n, OperandFill::uniform)
      .state("v", n, OperandFill::derived);
  if (mixed) list.out("param_bf16", n, DType::bf16);
}

void check_adamw(ReferenceCheck& k) {
  using memop_inputs::kAdamW;
  const bool mixed = k.c.op == MemOp::adamw_bf16;
  const ref::AdamWHyper h{kAdamW.lr,  kAdamW.beta1,        kAdamW.beta2,
                          kAdamW.eps, kAdamW.weight_decay, kAdamW.step};
  auto& param = k.add("param", kElementwiseTolerance);
  auto& m = k.add("m", kElementwiseTolerance);
  auto& v = k.add("v", kElementwiseTolerance);
  OutputCheck* p16 = mixed ? &k.add("param_bf16", 0x1p-8 + kElementwiseTolerance) : nullptr;
  OutputCheck* p16_exact = mixed ? &k.add("param_bf16 vs bf16(param)", 0) : nullptr;
  const auto& saved = k.saved;
  std::vector<double> a, b, e;
  element_blocks(k.c.elements(), [&](std::int64_t i0, std::int64_t i1) {
    const std::int64_t n = i1 - i0;
    std::vector<float> grad;
    std::vector<std::uint16_t> grad_bits;
    if (mixed)
      grad_bits = k.read.bits16("grad", i0, n);
    else
      grad = k.get("grad", i0, n);
    ref::adamw(saved[0].data() + i0, mixed ? nullptr : grad.data(),
               mixed ? grad_bits.data() : nullptr, saved[1].data() + i0, saved[2].data() + i0, n, h,
               zeroed(a, n), zeroed(b, n), zeroed(e, n));
    const auto got_param = k.get("param", i0, n);
    k.compare(param, got_param, a.data(), i0);
    k.compare(m, k.get("m", i0, n), b.data(), i0);
    k.compare(v, k.get("v", i0, n), e.data(), i0);
    if (!mixed) return;
    const auto got16 = k.get("param_bf16", i0, n);
    k.compare(*p16, got16, a.data(), i0);
    for (std::int64_t i = 0; i < n; ++i) {
      const auto at = static_cast<std::size_t>(i);
      p16_exact->add(i0 + i, got16[at], ref::round_to_bf16(got_param[at]));
    }
  });
}

std::string adamw_rule(const MemopCase& c, const std::string& rounding) {
  if (c.op == MemOp::adamw_bf16)
    return "8u; param_bf16 2^-8 (half a bf16 ulp) and exactly bf16(param)";
  return "8u" + rounding;
}

}  // namespace opbench::memop_specs
