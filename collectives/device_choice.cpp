#include "collectives/device_choice.hpp"

#include <fmt/format.h>

#include <map>

namespace opbench {

DeviceChoice choose_rank_device(int visible_gpus, int local_rank, int local_size, int offset,
                                std::optional<int> flag_device, const char* env_device) {
  DeviceChoice c;
  auto fixed = [&](int device, std::string how) {
    if (device < 0 || device >= visible_gpus) {
      c.error = fmt::format("{} asks for GPU {}, but this rank sees {}", how, device, visible_gpus);
      return c;
    }
    c.device = device;
    c.how = std::move(how);
    return c;
  };
  if (flag_device) return fixed(*flag_device, fmt::format("--device {}", *flag_device));
  if (env_device && *env_device) {
    char* end = nullptr;
    const long v = std::strtol(env_device, &end, 10);
    if (*end || v < 0 || v > 1024) {
      c.error = fmt::format("$NCCL_TESTS_DEVICE='{}' is not a GPU index", env_device);
      return c;
    }
    return fixed(static_cast<int>(v), fmt::format("$NCCL_TESTS_DEVICE={}", v));
  }
  if (local_rank + offset < visible_gpus) {
    c.device = local_rank + offset;
    c.how = offset ? fmt::format("local rank {} + offset {}", local_rank, offset)
                   : fmt::format("local rank {}", local_rank);
    return c;
  }
  if (visible_gpus == 1 && offset == 0) {
    c.device = 0;
    c.how = "the one GPU this rank sees";
    return c;
  }
  c.error = fmt::format(
      "{} ranks on this host need {} GPUs (device offset {}), but a rank sees {}: give each rank "
      "its own (CUDA_VISIBLE_DEVICES per rank, srun --gpus-per-task=1), or --device",
      local_size, local_size + offset, offset, visible_gpus);
  return c;
}

std::vector<std::pair<int, int>> ranks_sharing_a_gpu(const std::vector<std::string>& host_and_bus) {
  std::map<std::string, int> first;
  std::vector<std::pair<int, int>> shared;
  for (int r = 0; r < static_cast<int>(host_and_bus.size()); ++r) {
    auto [it, inserted] = first.emplace(host_and_bus[r], r);
    if (!inserted) shared.emplace_back(it->second, r);
  }
  return shared;
}

}  // namespace opbench
