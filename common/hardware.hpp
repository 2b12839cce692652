#pragma once
// Peak compute and memory bandwidth of known devices (configs/hardware.json), used for the
// pct_peak columns. Matched by device name; --peak-tflops / --peak-bw override.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "common/dtype.hpp"

namespace opbench {

struct DevicePeaks {
  std::string name;
  std::vector<std::string> match;       // substrings of the device name, case-insensitive
  std::map<DType, double> peak_tflops;  // dense (no structured sparsity)
  std::optional<double> mem_bw_gbps;
  std::optional<double> memory_gib;  // device memory, GiB (2^30 bytes) as datasheets' "GB" are
  std::string source;
};

std::vector<DevicePeaks> load_hardware_table(const std::string& path);

// First entry one of whose `match` strings occurs in `device_name`.
std::optional<DevicePeaks> match_device(const std::vector<DevicePeaks>& table,
                                        const std::string& device_name);

// The peaks a run compares against: the matched entry with the command-line overrides on top.
class Peaks {
 public:
  Peaks() = default;
  Peaks(std::optional<DevicePeaks> device, PeakOverrides overrides);
  // Loads the table (the default one if no path is given) and matches `device_name`.
  static Peaks for_device(const std::string& device_name, const PeakOverrides& overrides);

  std::optional<double> tflops(DType t) const;
  std::optional<double> bandwidth_gbps() const;
  // The matched device's memory (hardware.json's memory_gib); no override here.
  std::optional<double> memory_gib() const { return device_ ? device_->memory_gib : std::nullopt; }
  // "NVIDIA H100 SXM5 80GB (configs/hardware.json)", "--peak-tflops 500", or "unknown".
  std::string describe() const;

 private:
  std::optional<DevicePeaks> device_;
  PeakOverrides overrides_;
};

}  // namespace opbench
