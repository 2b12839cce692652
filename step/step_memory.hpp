#pragma once
// Memory per rank of a training configuration (docs/formulas.md, "Memory per rank"): the
// parameters, gradients and optimizer state the rank holds under its sharding, the activations
// its kernels save for backward (listed tensor by tensor, so GQA, head_dim, a gated MLP or fp32
// come out of the same lists), the micro-batches a pipeline stage keeps in flight, and the
// transient buffers of the backward's start (the logits' gradient, FSDP's gathered units) and of
// the optimizer step. Pure functions of the configuration: bench_step --dry-run prints them too.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "step/step_config.hpp"

namespace opbench {

// One tensor a kernel keeps for its backward, for one micro-batch on one rank.
struct SavedTensor {
  std::string what;  // "Q after rotary"
  std::int64_t elements = 0;
  std::int64_t element_bytes = 0;
  // The attention core's own (scores, log-sum-exp, scaled copies): what selective recomputation
  // drops and recomputes.
  bool attention_core = false;
  // Kept only under selective recomputation: the core's inputs, which its checkpoint stores
  // when the core itself would have saved something else (eager's scaled copies of q and k).
  bool checkpoint_input = false;
  std::int64_t bytes() const { return elements * element_bytes; }
};

// What the configuration does not say and the lists need (tests set them).
struct ActivationModel {
  bool dropout = false;  // Korthikanti et al.'s dropout masks (the shipped models train without)
  std::optional<bool> flash;  // attention keeps only the log-sum-exp (default: kernels fused)
};

// One decoder layer (an MoE layer when `moe_layer`), one micro-batch, on one rank, without
// recomputation: every tensor its kernels save for backward.
std::vector<SavedTensor> layer_saved_tensors(const StepConfig& c, bool moe_layer,
                                             const ActivationModel& am = {});

// Sum of the tensors a recompute mode keeps: none everything but checkpoint inputs; selective
// without the attention core, with its checkpoint inputs; full only the layer's input.
std::int64_t kept_bytes(const std::vector<SavedTensor>& layer, Recompute r);

// Micro-batches whose activations stage `stage` holds at once under 1F1B: min(pp − stage, m);
// interleaved (vpp > 1), Megatron's warm-up chunks + 1 over vpp chunks per micro-batch, at most m.
double in_flight_micro_batches(const StepConfig& c, std::int64_t stage);

struct StepMemory {  // bytes per rank of one stage
  std::int64_t stage = 0;
  std::int64_t weights = 0;      // parameters in the model's dtype (sharded with fsdp, hsdp)
  std::int64_t grads = 0;        // gradients in grad_dtype
  std::int64_t optimizer = 0;    // AdamW's m and v, and fp32 master weights below fp32
  std::int64_t activations = 0;  // saved for backward over the in-flight micro-batches
  double in_flight = 1;          // those micro-batches
  // At the start of the backward (the last micro-batch's, when the most is alive): the gradients
  // that exist then, and the transient buffers (the logits and their gradient on the last stage,
  // FSDP's gathered parameters, a fully recomputed layer's activations).
  std::int64_t grads_in_backward = 0;
  std::int64_t backward_transient = 0;
  std::int64_t optimizer_transient = 0;  // the optimizer step's temporaries
  // At the backward's end, every gradient there: a tied table's second gradient beside them.
  std::int64_t backward_end_transient = 0;
  std::int64_t backward_peak() const {
    return weights + optimizer + grads_in_backward + activations + backward_transient;
  }
  std::int64_t backward_end_peak() const {
    return weights + optimizer + grads + backward_end_transient;
  }
  std::int64_t optimizer_peak() const { return weights + optimizer + grads + optimizer_transient; }
  std::int64_t peak() const {
    return std::max({backward_peak(), backward_end_peak(), optimizer_peak()});
  }
  bool peak_in_backward() const { return backward_peak() == peak(); }
  bool peak_at_backward_end() const { return !peak_in_backward() && backward_end_peak() == peak(); }
};

StepMemory step_memory(const StepConfig& c, std::int64_t stage);
// The stage with the largest peak (the lowest of equals).
StepMemory busiest_memory(const StepConfig& c);

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// The machine's memory (MemTotal of /proc/meminfo) in GiB; nullopt when unreadable.
std::optional<double> host_memory_gib();

}  // namespace opbench
