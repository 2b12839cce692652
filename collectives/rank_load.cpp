#include "collectives/rank_load.hpp"

#include <fmt/format.h>

#include <vector>

#include "common/text.hpp"

namespace opbench {

RankLoad rank_load(const nlohmann::json& rank_map) {
  RankLoad load;
  for (const auto& rank : rank_map) {
    auto& host = load.hosts[rank.value("host", std::string("?"))];
    if (host.is_null()) host = {{"ranks", 0}, {"cpus", rank.value("cpus", 0)}};
    host["ranks"] = host["ranks"].get<int>() + 1;
  }
  std::vector<std::string> crowded;
  for (const auto& [name, host] : load.hosts.items()) {
    const int ranks = host["ranks"], cpus = host["cpus"];
    if (cpus > 0 && ranks > cpus)
      crowded.push_back(
          fmt::format("{} ranks share {} CPU{} on {}", ranks, cpus, cpus == 1 ? "" : "s", name));
  }
  load.oversubscribed = !crowded.empty();
  if (load.oversubscribed)
    load.warning = fmt::format(
        "oversubscribed: {}; the ranks take turns on the cores, so the timings measure the "
        "scheduler as much as the collectives (launch at most one rank per CPU to measure them)",
        join(crowded, ", "));
  return load;
}

}  // namespace opbench
