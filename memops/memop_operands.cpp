#include "memops/memop_operands.hpp"

#include <stdexcept>

#include "memops/elementwise.hpp"
#include "memops/memop_inputs.hpp"
#include "memops/memop_spec.hpp"

namespace opbench {
namespace {

// An elementwise kernel's operands, by the names it gives them (memops/elementwise.hpp): the
// operand an in-place kernel updates first, then the inputs, then the outputs, all in the case's
// dtype. The first input of an exp-based kernel spans [-4, 4), where its curve bends.
template <class F>
void elementwise_operands(const MemopCase& c, OperandList& list) {
  const std::int64_t n = c.elements();
  const DType t = c.dtype;
  int name = 0;
  const float first_scale = F::kAccuracy == elementwise::Accuracy::exponential ? kWideInputs : 1.0f;
  if constexpr (F::kInPlace) list.state(F::kOperands[name++], n, OperandFill::uniform, t);
  for (; name < F::kIn; ++name)
    list.in(F::kOperands[name], n, t, name == 0 ? first_scale : 1.0f);
  if constexpr (!F::kInPlace)
    for (int k = 0; k < F::kOut; ++k)
      list.out(F::kOperands[F::kIn + k], n, t);
}

}  // namespace

std::vector<OperandSpec> memop_operands(const MemopCase& c) {
  OperandList list;
  if (const MemopSpec* spec = memop_spec(c.op))
    spec->operands(c, list);
  else if (c.op == MemOp::copy)
    list.in("src", c.elements(), c.dtype).out("dst", c.elements(), c.dtype);
  else  // copies between memories have none: the providers move the bytes themselves
    elementwise::visit_elementwise(
        c.op, c.pass, [&](auto kernel) { elementwise_operands<decltype(kernel)>(c, list); });
  std::vector<OperandSpec>& v = list.specs();
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i].seed = memop_inputs::kSeed + 7919 * i;
  return std::move(v);
}

namespace {

// The bytes of the operands `counted` selects (the read ones, the written ones).
std::int64_t operand_bytes(const MemopCase& c, bool (OperandSpec::*counted)() const) {
  if (is_copy(c.op)) return c.copied_bytes();
  std::int64_t bytes = 0;
  for (const auto& o : memop_operands(c))
    if ((o.*counted)()) bytes += o.touched_bytes();
  return bytes;
}

}  // namespace

std::int64_t memop_read_bytes(const MemopCase& c) {
  return operand_bytes(c, &OperandSpec::read);
}

std::int64_t memop_write_bytes(const MemopCase& c) {
  return operand_bytes(c, &OperandSpec::written);
}

void* OperandAddresses::operator()(std::string_view name) const {
  if (void* p = find(name)) return p;
  throw std::logic_error("memops: no operand " + std::string(name));
}

OperandSpec workspace_operand(std::int64_t bytes) {
  OperandSpec o;
  o.name = "workspace";
  o.type = DType::uint8;
  o.count = bytes;
  o.role = OperandRole::workspace;
  o.fill = OperandFill::scratch;
  o.shared = true;
  return o;
}

std::optional<ShapeProblem> memop_shape_problem(const MemopCase& c) {
  const MemopSpec* spec = memop_spec(c.op);
  if (spec && spec->shape_problem) return spec->shape_problem(c);
  return std::nullopt;
}

}  // namespace opbench
