// libFuzzer target: the values flags take — sizes ("64K"), integer lists and start:stop:step
// ranges, dtype lists, collective and reduction names, passes. Each line of the input is tried
// with every parser.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "collectives/coll_op.hpp"
#include "common/cli.hpp"
#include "common/dtype.hpp"
#include "common/error.hpp"
#include "gemm/model_gemms.hpp"

namespace {
template <typename F>
void attempt(F&& f) {
  try {
    f();
  } catch (const opbench::Error&) {
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  std::string line;
  while (std::getline(in, line)) {
    attempt([&] { opbench::parse_size(line, "-b"); });
    attempt([&] { opbench::parse_int_list(line, "--m"); });
    attempt([&] { opbench::parse_dtype_list(line, "--dtype"); });
    attempt([&] { opbench::parse_coll_ops(line); });
    attempt([&] { opbench::parse_red_op(line); });
    attempt([&] { opbench::parse_passes(line); });
  }
  return 0;
}
