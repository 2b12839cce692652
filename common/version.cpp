#include "common/version.hpp"

#include <cblas.h>
#include <fmt/format.h>

#include <cstdio>
#include <string_view>

#include "common/text.hpp"
#include "opbench_git_revision.h"

namespace opbench {

LibraryVersion openblas_library_version() {
  // OPENBLAS_VERSION is " OpenBLAS 0.3.21 "; the running library reports its config string.
  std::string running = openblas_get_config();
  return {"OpenBLAS", std::string(trim(OPENBLAS_VERSION)), running};
}

std::string version_from_int(long long v) {
  return fmt::format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100);
}

std::string opbench_version_line(const std::string& binary) {
  return fmt::format("{} (opbench {}, git {}, {} build, {} {})", binary, OPBENCH_VERSION,
                     OPBENCH_GIT_REVISION, OPBENCH_BUILD_TYPE, OPBENCH_COMPILER_ID,
                     OPBENCH_COMPILER_VERSION);
}

void print_versions(const std::string& binary, const std::vector<LibraryVersion>& libraries) {
  std::printf("%s\n", opbench_version_line(binary).c_str());
  for (const auto& l : libraries)
    std::printf("  %-14s built with %-24s runs on %s\n", l.name.c_str(), l.built.c_str(),
                l.running.c_str());
}

}  // namespace opbench
