#include <catch2/catch.hpp>

#include "common/error.hpp"
#include "common/hardware.hpp"
#include "temp_files.hpp"

using namespace opbench;

TEST_CASE("devices are matched by name in hardware.json") {
  auto table = load_hardware_table(test::repo_config("hardware.json"));
  auto h100 = match_device(table, "NVIDIA H100 80GB HBM3");
  REQUIRE(h100);
  CHECK(h100->name == "NVIDIA H100 SXM5 80GB");
  CHECK(h100->peak_tflops.at(DType::bf16) == 989.4);
  CHECK(*h100->mem_bw_gbps == 3350);
  CHECK(match_device(table, "NVIDIA H100 PCIe")->name == "NVIDIA H100 PCIe 80GB");
  CHECK(match_device(table, "NVIDIA H200")->mem_bw_gbps == 4800);
  CHECK(match_device(table, "NVIDIA A100-SXM4-80GB")->peak_tflops.at(DType::tf32) == 156);
  CHECK(match_device(table, "NVIDIA B200")->peak_tflops.at(DType::fp8_e4m3) == 4500);
  CHECK_FALSE(match_device(table, "Intel(R) Xeon(R) Processor"));
  for (const auto& d : table)
    CHECK_FALSE(d.source.empty());
}

TEST_CASE("command-line peaks override the table") {
  auto table = load_hardware_table(test::repo_config("hardware.json"));
  Peaks from_table(match_device(table, "NVIDIA H200"), {});
  CHECK(*from_table.tflops(DType::bf16) == 989.4);
  CHECK_FALSE(from_table.tflops(DType::int32));
  PeakOverrides o;
  o.peak_tflops = 500;
  o.peak_bw_gbps = 1000;
  Peaks overridden(match_device(table, "NVIDIA H200"), o);
  CHECK(*overridden.tflops(DType::bf16) == 500);
  CHECK(*overridden.bandwidth_gbps() == 1000);
  CHECK(Peaks().describe() == "unknown");
}

TEST_CASE("a bad hardware table names the entry and key") {
  auto path = test::write_temp(
      "hw.json", R"([{"name": "X", "match": ["X"], "source": "s", "peak_tflops": {"bf17": 1}}])");
  CHECK_THROWS_WITH(load_hardware_table(path),
                    Catch::Contains("entry 0 (\"X\"): key 'peak_tflops': unknown dtype 'bf17'"));
}
