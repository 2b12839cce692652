#include "common/host_allocator.hpp"

#include <malloc.h>

namespace opbench {
namespace {

enum class Policy { defaults, kept, refused };
Policy g_policy = Policy::defaults;

}  // namespace

void keep_host_pages() {
  // Both, or the record would describe a half-kept heap: M_MMAP_MAX alone still trims the top,
  // M_TRIM_THRESHOLD alone still maps and unmaps every large block.
  const bool mmap_off = mallopt(M_MMAP_MAX, 0) == 1;
  const bool trim_off = mallopt(M_TRIM_THRESHOLD, -1) == 1;
  g_policy = mmap_off && trim_off ? Policy::kept : Policy::refused;
}

nlohmann::json host_allocator_record() {
  switch (g_policy) {
    case Policy::kept:
      return {{"policy", "keeps its pages"},
              {"mallopt", {{"M_MMAP_MAX", 0}, {"M_TRIM_THRESHOLD", -1}}},
              {"why",
               "no block of its own mapping and no trimming: memory a library frees is reused, "
               "as in a long-running training process, so no call pays page faults for a "
               "temporary buffer"}};
    case Policy::refused:
      return {{"policy", "defaults"},
              {"why", "mallopt refused M_MMAP_MAX 0 or M_TRIM_THRESHOLD -1 (not glibc's malloc)"}};
    case Policy::defaults:
      break;
  }
  return {{"policy", "defaults"},
          {"why", "glibc's dynamic mmap and trim thresholds (only the MPI binaries keep pages)"}};
}

}  // namespace opbench
