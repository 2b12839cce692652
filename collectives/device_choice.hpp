#pragma once
// Which GPU a rank runs NCCL on, decided on the host so it is tested without a GPU. In order:
//   --device N                 this GPU, whatever the rank;
//   $NCCL_TESTS_DEVICE         the same, as nccl-tests reads it;
//   local rank + --device-offset, when the node shows each rank a GPU of its own;
//   device 0, when a rank sees exactly one GPU: one visible GPU per rank (srun
//   --gpus-per-task=1, or CUDA_VISIBLE_DEVICES set per rank by a wrapper).
// Two ranks of one host on the same GPU (its PCI bus id) are refused once every rank has chosen.
#include <optional>
#include <string>
#include <vector>

namespace opbench {

struct DeviceChoice {
  int device = -1;    // -1: none (see error)
  std::string how;    // "local rank 3", "--device 2", "$NCCL_TESTS_DEVICE=1", "the one visible GPU"
  std::string error;  // why no GPU could be chosen
};

DeviceChoice choose_rank_device(int visible_gpus, int local_rank, int local_size, int offset,
                                std::optional<int> flag_device, const char* env_device);

// Ranks (indices into `host_and_bus`, one "host busid" per rank) that share a GPU with an
// earlier rank, as pairs (earlier, later); empty when every rank has its own.
std::vector<std::pair<int, int>> ranks_sharing_a_gpu(const std::vector<std::string>& host_and_bus);

}  // namespace opbench
