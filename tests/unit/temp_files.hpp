#pragma once
// Temporary files for tests that feed bad inputs to the loaders.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace opbench::test {

inline std::string write_temp(const std::string& name, const std::string& content) {
  auto dir =
      std::filesystem::temp_directory_path() / ("opbench_unit_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto path = dir / name;
  std::ofstream(path) << content;
  return path.string();
}

inline std::string repo_config(const std::string& name) {
  return std::string(OPBENCH_SOURCE_DIR) + "/configs/" + name;
}

}  // namespace opbench::test
