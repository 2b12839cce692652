// The MPI binaries' allocator policy (common/host_allocator.hpp): a freed 4 MiB block, allocated
// again, comes back with its pages, so touching it costs no page fault. Under glibc's defaults
// the same block is a fresh mapping every time (1,024 pages to fault in). Counted with this
// thread's minor faults.
#include <sys/resource.h>
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>

#include "common/host_allocator.hpp"

namespace {

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_minflt;
}

// Minor faults of allocating, touching and freeing `bytes`.
long faults_of_a_block(std::size_t bytes) {
  const long before = minor_faults();
  auto* p = static_cast<char*>(std::malloc(bytes));
  std::memset(p, 1, bytes);
  // Keeps the stores: a block written and freed at once may be optimized away.
  asm volatile("" : : "r"(p) : "memory");
  std::free(p);
  return minor_faults() - before;
}

}  // namespace

TEST_CASE("host allocator: a freed 4 MiB block comes back with its pages") {
  opbench::keep_host_pages();
  const auto record = opbench::host_allocator_record();
  if (record["policy"] != "keeps its pages") {
    // A sanitizer's allocator refuses mallopt: the record says so, and nothing else is checked.
    CHECK(record["policy"] == "defaults");
    CHECK(std::string(record["why"]).find("mallopt refused") != std::string::npos);
    return;
  }
  CHECK(record["mallopt"]["M_MMAP_MAX"] == 0);
  CHECK(record["mallopt"]["M_TRIM_THRESHOLD"] == -1);
  constexpr std::size_t kBlock = 4 << 20;
  const long first = faults_of_a_block(kBlock);  // new pages (or pages an earlier test left)
  const long again = faults_of_a_block(kBlock);
  INFO("first touch " << first << " faults, the same size again " << again);
  CHECK(again == 0);
}
