// Device profiles (configs/cudnn_devices.json) and the cuDNN version policy: pure host logic.
#include <catch2/catch.hpp>

#include <string>

#include "attention/cudnn_version_policy.hpp"
#include "common/device_profile.hpp"
#include "common/error.hpp"

using namespace opbench;

TEST_CASE("the shipped device profiles load, with the compute capability from deviceVer") {
  CHECK(builtin_device_profile_names() == "a100, h100, h200, b200");
  const DeviceProfile h100 = load_device_profile("H100");
  CHECK(h100.cc_major == 9);
  CHECK(h100.cc_minor == 0);
  CHECK(h100.device["multiProcessorCount"] == 132);
  CHECK(h100.device["l2CacheSize"] == 52428800);
  CHECK_FALSE(h100.sources.empty());
  CHECK(load_device_profile("a100").cc_major == 8);
  CHECK(load_device_profile("b200").cc_major == 10);
  CHECK(load_device_profile("b200").device["multiProcessorCount"] == 148);
}

TEST_CASE("a bad device profile names the file, the key and what is wrong") {
  nlohmann::json p = load_device_profile("h100").device;
  nlohmann::json entry = {
      {"name", "mine"}, {"description", "test"}, {"sources", {"by hand"}}, {"device", p}};
  CHECK(device_profile_from_json(entry, "mine.json").cc_major == 9);
  entry["device"].erase("l2CacheSize");
  CHECK_THROWS_WITH(device_profile_from_json(entry, "mine.json"),
                    Catch::Contains("mine.json: key 'device'") && Catch::Contains("l2CacheSize"));
  entry["device"] = p;
  entry["device"]["maxGridSize"] = {1, 2};
  CHECK_THROWS_WITH(device_profile_from_json(entry, "mine.json"),
                    Catch::Contains("maxGridSize") && Catch::Contains("three integers"));
  entry["device"] = p;
  entry["device"]["smClock"] = 1;
  CHECK_THROWS_WITH(device_profile_from_json(entry, "mine.json"), Catch::Contains("smClock"));
  CHECK_THROWS_WITH(load_device_profile("v100"), Catch::Contains("'v100' is neither a profile") &&
                                                     Catch::Contains("a100, h100, h200, b200"));
}

TEST_CASE("cuDNN older than the graphs need gets a reason naming both versions") {
  CHECK_FALSE(cudnn_version_refusal(91900, AttentionPass::bwd));
  CHECK_FALSE(cudnn_version_refusal(90600, AttentionPass::bwd));
  CHECK_FALSE(cudnn_version_refusal(90501, AttentionPass::fwd));
  auto why = cudnn_version_refusal(90501, AttentionPass::bwd);
  REQUIRE(why);
  CHECK(*why ==
        "cuDNN 9.5.1 is older than 9.6.0, which this bwd graph needs (its dQ accumulator is "
        "zeroed correctly from 9.6.0 on)");
  CHECK(cudnn_version_refusal(8907, AttentionPass::fwd));
}
