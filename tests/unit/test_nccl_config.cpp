// environment.json's nccl_config against the NCCL this test is built with and runs on (no GPU
// needed: ncclGetVersion answers without one): graphUsageMode is set, 1 with -G and 0 without,
// only where both have the field (2.29+); otherwise the record says why NCCL's default applies.
#include <nccl.h>

#include <catch2/catch.hpp>

#include "collectives/nccl_communicator.hpp"

using namespace opbench;

TEST_CASE("environment.json's nccl_config: graphUsageMode as set, or why not") {
  int running = 0;
  REQUIRE(ncclGetVersion(&running) == ncclSuccess);
  const auto graphs = nccl_config_record(true), plain = nccl_config_record(false);
  if (NCCL_VERSION_CODE >= 22900 && running >= 22900) {
    CHECK(graphs["graphUsageMode"] == 1);
    CHECK(plain["graphUsageMode"] == 0);
  } else {
    // NCCL 2.28.9 here: the field does not exist, and the record says so.
    REQUIRE(graphs["graphUsageMode"].is_string());
    CHECK_THAT(graphs["graphUsageMode"].get<std::string>(),
               Catch::Contains("has no graphUsageMode before 2.29; NCCL's default"));
    CHECK(plain["graphUsageMode"] == graphs["graphUsageMode"]);
  }
  if (running >= 22800 && NCCL_VERSION_CODE >= 22800) CHECK(graphs["nvlinkCentricSched"] == 1);
}
