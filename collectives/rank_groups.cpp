#include "collectives/rank_groups.hpp"

namespace opbench {

int group_leader(int rank, int world, RankGroups g) {
  const int block = g.size * g.stride;
  const int whole = world / block * block;  // the ranks in whole blocks
  if (rank >= whole) return whole + (rank - whole) / g.size * g.size;
  return rank / block * block + rank % g.stride;
}

}  // namespace opbench
