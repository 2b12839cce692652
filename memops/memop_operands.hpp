#pragma once
// What each memory-bound operator reads and writes, written once: the operand list every
// provider binds memory to (the CPU loops, our CUDA kernels), the bytes a row reports (sums over
// these operands), and the fills that give every provider the very same inputs. Providers add
// only their own workspaces; they describe no operand of their own. The lists themselves are the
// operators' own: an elementwise kernel names its operands (memops/elementwise.hpp), every other
// operator's spec lists them (memops/memop_spec.hpp).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/dtype.hpp"
#include "common/int_math.hpp"
#include "memops/memop.hpp"
#include "memops/memop_inputs.hpp"

namespace opbench {

enum class OperandRole {
  input,      // read once
  output,     // written once, and compared with the reference under --check
  state,      // read and written in place (the optimizer's parameters and moments)
  workspace,  // a provider's own scratch memory: not the operator's traffic, never checked
};

enum class OperandFill {
  none,       // an output: whatever the operator writes
  uniform,    // uniform in [-scale, scale): the project's fill (fill_uniform), times a power of two
  ids,        // token ids uniform in [0, vocab), drawn anew for every rotating set
  targets,    // target classes uniform in [0, cols)
  fp8_scale,  // the fp8 scale, memop_inputs::kFp8Scale
  derived,    // computed from the other inputs: a forward's saved statistics and output, rope's
              // tables, AdamW's second moment (memop_inputs::adamw_second_moment of m)
  scratch,    // a workspace: neither filled nor read back
};

struct OperandSpec {
  std::string name;
  DType type = DType::fp32;  // storage
  std::int64_t count = 0;    // elements
  OperandRole role = OperandRole::input;
  OperandFill fill = OperandFill::none;
  float scale = 1.0f;   // OperandFill::uniform's bound
  bool shared = false;  // one copy for every rotating set (embedding's table)
  // Elements the operator must touch at least once, when fewer than `count`: the rows of the
  // embedding table its ids look up. -1: all of them.
  std::int64_t touched = -1;
  std::uint64_t seed = 0;  // of its fill: the same on every provider

  bool read() const { return role == OperandRole::input || role == OperandRole::state; }
  bool written() const { return role == OperandRole::output || role == OperandRole::state; }
  bool in_place() const { return role == OperandRole::state; }
  std::int64_t bytes() const { return count * static_cast<std::int64_t>(dtype_size(type)); }
  std::int64_t touched_bytes() const {
    return (touched < 0 ? count : touched) * static_cast<std::int64_t>(dtype_size(type));
  }
};

// An operator's operand list as its spec writes it: inputs filled uniform (times `scale`),
// inputs with another fill, outputs, and the state it updates in place.
class OperandList {
 public:
  OperandList& in(const char* name, std::int64_t count, DType type, float scale = 1.0f) {
    return add(name, count, type, OperandRole::input, OperandFill::uniform, scale);
  }
  OperandList& filled(const char* name, std::int64_t count, DType type, OperandFill fill) {
    return add(name, count, type, OperandRole::input, fill);
  }
  OperandList& out(const char* name, std::int64_t count, DType type) {
    return add(name, count, type, OperandRole::output, OperandFill::none);
  }
  OperandList& state(const char* name, std::int64_t count, OperandFill fill,
                     DType type = DType::fp32) {
    return add(name, count, type, OperandRole::state, fill);
  }
  OperandList& add(const char* name, std::int64_t count, DType type, OperandRole role,
                   OperandFill fill, float scale = 1.0f) {
    list_.push_back(
        {.name = name, .type = type, .count = count, .role = role, .fill = fill, .scale = scale});
    return *this;
  }
  OperandSpec& back() { return list_.back(); }
  std::vector<OperandSpec>& specs() { return list_; }

 private:
  std::vector<OperandSpec> list_;
};

// Inputs of the exp-based operators (softmax, cross-entropy, the activations) and of fp8
// quantisation span [-4, 4), where their curves bend and e4m3's range is covered.
inline constexpr float kWideInputs = 4.0f;

// The operands of `c`, in an order every provider keeps (the seeds follow it). Activations are
// stored in the case's dtype; statistics, optimizer state and rotary tables in fp32; token ids
// in int64. Copies between memories other than `copy` have none (their bytes are the copy's).
std::vector<OperandSpec> memop_operands(const MemopCase& c);

// Bytes the operator must read and write at least once: sums over its operands (the rows of a
// shared table its ids look up, not the table), or the bytes a copy moves each way.
std::int64_t memop_read_bytes(const MemopCase& c);
std::int64_t memop_write_bytes(const MemopCase& c);
inline std::int64_t memop_io_bytes(const MemopCase& c) {
  return memop_read_bytes(c) + memop_write_bytes(c);
}

// Where a provider placed a case's operands (memop_operands', then its workspaces) for the set it
// runs, host or device addresses, by name: what each backend's dispatch binds its kernels'
// arguments with (cpu_memops::run; the CUDA provider's enqueue).
class OperandAddresses {
 public:
  virtual ~OperandAddresses() = default;
  // nullptr when the case has no operand of that name (a workspace only some dtypes need).
  virtual void* find(std::string_view name) const = 0;
  // std::logic_error when the case has no operand of that name.
  void* operator()(std::string_view name) const;
  template <class T>
  T* as(std::string_view name) const {
    return static_cast<T*>((*this)(name));
  }
};

// OperandAddresses over a provider's own operands for one set: anything with a `name` and the
// address raw(set) of that set's copy.
template <class Operands>
class SetAddresses final : public OperandAddresses {
 public:
  SetAddresses(const Operands& operands, std::int64_t set) : operands_(operands), set_(set) {}
  void* find(std::string_view name) const override {
    for (const auto& o : operands_)
      if (o.name == name) return o.raw(set_);
    return nullptr;
  }

 private:
  const Operands& operands_;
  std::int64_t set_;
};

// The bytes a provider's operands take in its rotating sets, each padded to
// memop_inputs::kAlign: one set's copies (`set`), what one set touches (`touched`: with the rows
// of a shared table its ids look up), and the one copy of the shared operands (`shared`).
struct OperandFootprint {
  std::int64_t set = 0, touched = 0, shared = 0;
};
template <class Operands>
OperandFootprint operand_footprint(const Operands& operands) {
  OperandFootprint f;
  std::int64_t looked_up = 0;
  for (const OperandSpec& o : operands) {
    (o.shared ? f.shared : f.set) += align_up(o.bytes(), memop_inputs::kAlign);
    if (o.shared && o.touched >= 0) looked_up += o.touched_bytes();
  }
  f.touched = f.set + looked_up;
  return f;
}

// A provider's workspace of `bytes` bytes: one copy for every set, neither filled nor checked.
OperandSpec workspace_operand(std::int64_t bytes);

// A shape the operator cannot take, as {field, why} (rope's heads and head_dim, embedding's
// vocabulary; its spec states the rule): for validate(), the shape files and providers.
struct ShapeProblem {
  std::string field, why;
};
std::optional<ShapeProblem> memop_shape_problem(const MemopCase& c);

}  // namespace opbench
