#pragma once
// The kernels PyTorch eager runs for a Hugging Face-style decoder (bench_step --kernels eager;
// docs/formulas.md, "Kernel plans"): what its autograd records for bench/peers/
// torch_train_step.py's model, forward and backward, and torch.optim.AdamW's foreach and
// single-tensor steps. The linear layers' GEMMs (separate projections) come from step_operators.
#include <vector>

#include "step/step_stage.hpp"

namespace opbench {

// Per decoder layer of the stage, and the embedding, final norm and loss where the stage has
// them: the norms, rotary embedding, attention as per-head GEMMs around a scale, a causal mask
// and a softmax (with the GQA copies), the activation, the residual adds, the gradient sums of
// tensors used twice, the layout copies and the zero fills of the backward.
void add_eager_layer_kernels(const StageView& v, std::vector<StepOperator>& out);

// AdamW's step as torch.optim.AdamW runs it when not fused: PyTorch 2's eight elementwise
// kernels, once per parameter tensor (single) or once over all of them (foreach).
void add_eager_optimizer(const StageView& v, std::vector<StepOperator>& out);

}  // namespace opbench
