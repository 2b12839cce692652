#pragma once
// How many ranks share each host's CPUs. "mpirun --oversubscribe -np 8" on a 2-core machine runs,
// but its timings then measure the scheduler as much as the collective: the run says so once on
// the console and records every host's load in environment.json ("rank_load").
#include <nlohmann/json.hpp>

#include <string>

namespace opbench {

struct RankLoad {
  nlohmann::json hosts = nlohmann::json::object();  // {host: {"ranks": n, "cpus": c}}
  bool oversubscribed = false;                      // some host has more ranks than CPUs
  std::string warning;                              // the console line; empty when none is
};

// From the rank map (gather_rank_map: every rank's "host" and "cpus", the CPUs online there).
RankLoad rank_load(const nlohmann::json& rank_map);

}  // namespace opbench
