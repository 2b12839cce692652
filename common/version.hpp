#pragma once
// --version: the opbench version and, for every library a binary uses, the version it was built
// with and the one it runs on (they differ when a newer library sits on the machine).
#include <string>
#include <vector>

namespace opbench {

struct LibraryVersion {
  std::string name, built, running;
};

LibraryVersion openblas_library_version();
// NVIDIA's integer versions, major·10000 + minor·100 + patch (cuBLASLt 130100, cuDNN 91900,
// NCCL 22809), as "13.1.0".
std::string version_from_int(long long v);
std::string opbench_version_line(
    const std::string& binary);  // "bench_gemm (opbench 0.1.0, git 3f2a..., Release)"
void print_versions(const std::string& binary, const std::vector<LibraryVersion>& libraries);

}  // namespace opbench
