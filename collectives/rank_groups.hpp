#pragma once
// How a collective's groups lie among the ranks of a launch. A group is `size` ranks `stride`
// apart (b, b + stride, ..., b + (size - 1)·stride), each block of size·stride consecutive ranks
// holding `stride` groups: the layout Megatron-LM gives its parallel dimensions, tensor
// parallelism innermost and the pipeline outermost (megatron/core/parallel_state.py, order
// "tp-cp-ep-dp-pp"):
//   stride 1             consecutive ranks: a tensor-parallel group, bench_ccl's --group-size
//   stride etp           an expert-parallel group (expert tensor parallelism etp: tp by default)
//   stride world / pp    a pipeline stage and the next one (groups of 2)
//   stride world / size  HSDP's replica groups: one rank of every shard group
// Ranks past the last whole block (an odd pipeline's last stage) form groups of consecutive
// ranks.
#include <compare>

namespace opbench {

struct RankGroups {
  int size = 1;
  int stride = 1;
  auto operator<=>(const RankGroups&) const = default;
};

// The lowest rank of `rank`'s group: the same for every rank of a group (MPI_Comm_split's
// color). `world` must be a multiple of g.size; so is then what the whole blocks leave over.
int group_leader(int rank, int world, RankGroups g);

}  // namespace opbench
