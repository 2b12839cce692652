#include "gemm/cublas_api.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include "common/error.hpp"

namespace opbench {
namespace {

// The first definition in the process's global scope, as the dynamic linker binds a linked
// call: a library preloaded in front of cuBLAS (opbench's capture, LD_PRELOAD) is found before
// cuBLAS itself and sees the call, as it did when cuBLAS was linked.
void* find(const std::string& library, const char* symbol) {
  void* p = dlsym(RTLD_DEFAULT, symbol);
  if (p == nullptr)
    throw run_failure(
        fmt::format("{} has no {}: a cuBLAS older than the {}.{} opbench was built with?", library,
                    symbol, CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR));
  return p;
}

}  // namespace

void* open_cuda_library(const std::string& name) {
  // Global, so that the library's symbols join the global scope find() searches.
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr)
    throw run_failure(fmt::format(
        "cannot load {} ({}): the CUDA GEMMs need it; put the CUDA toolkit's library folder on "
        "LD_LIBRARY_PATH",
        name, dlerror()));
  return handle;
}

std::string cublaslt_library_name() {
  return fmt::format("libcublasLt.so.{}", CUBLAS_VER_MAJOR);
}
std::string cublas_library_name() {
  return fmt::format("libcublas.so.{}", CUBLAS_VER_MAJOR);
}

#define OPBENCH_CUBLAS_FIND(f) calls.f = reinterpret_cast<decltype(calls.f)>(find(name, #f));

const CublasLtCalls& cublaslt() {
  static const CublasLtCalls loaded = [] {
    const std::string name = cublaslt_library_name();
    open_cuda_library(name);  // kept open for the process
    CublasLtCalls calls;
    OPBENCH_CUBLASLT_CALLS(OPBENCH_CUBLAS_FIND)
    return calls;
  }();
  return loaded;
}

const CublasCalls& cublas() {
  static const CublasCalls loaded = [] {
    const std::string name = cublas_library_name();
    open_cuda_library(name);
    CublasCalls calls;
    OPBENCH_CUBLAS_CALLS(OPBENCH_CUBLAS_FIND)
    OPBENCH_CUBLAS_OVERLOADED_CALLS(OPBENCH_CUBLAS_FIND)
    return calls;
  }();
  return loaded;
}

#undef OPBENCH_CUBLAS_FIND

}  // namespace opbench
