#pragma once
// Temporary files and folders for tests: bad inputs for the loaders, report folders.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace opbench::test {

// The folders below are removed when the test process ends: under ctest each test case is a
// process of its own, and the system's temp folder would keep one folder per case and run.
class TempFolders {
 public:
  void add(const std::filesystem::path& dir) { dirs_.push_back(dir); }
  ~TempFolders() {
    for (const auto& d : dirs_) {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  }

 private:
  std::vector<std::filesystem::path> dirs_;
};
inline TempFolders& temp_folders() {
  static TempFolders folders;
  return folders;
}

inline std::string write_temp(const std::string& name, const std::string& content) {
  auto dir =
      std::filesystem::temp_directory_path() / ("opbench_unit_" + std::to_string(::getpid()));
  if (std::filesystem::create_directories(dir)) temp_folders().add(dir);
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
  temp_folders().add(d);
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
