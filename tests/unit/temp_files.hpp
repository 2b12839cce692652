#pragma once
// Temporary files and folders for tests: bad inputs for the loaders, report folders.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
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

// An empty folder of its own for one test (emptied if an earlier run left it).
inline std::filesystem::path fresh_temp_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() /
           ("opbench_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::string repo_config(const std::string& name) {
  return std::string(OPBENCH_SOURCE_DIR) + "/configs/" + name;
}

}  // namespace opbench::test
