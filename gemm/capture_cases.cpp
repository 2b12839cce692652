#include "gemm/capture_cases.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "common/capture_tables.hpp"
#include "common/error.hpp"

namespace opbench {

std::vector<GemmCase> capture_cases(const CaptureSelection& sel,
                                    std::vector<std::string>* left_out) {
  const std::vector<CapturedShape> shapes = read_capture_shapes(
      {sel.source, sel.rank, {"gemm"}, {"api", "dtype", "m", "n", "k", "batch", "layout"}});
  std::vector<GemmCase> cases;  // in the order read: largest in-job total first
  for (const CapturedShape& shape : shapes) {
    const std::string& api = shape.key[0];
    const std::string& dtype_text = shape.key[1];
    const std::int64_t mm = std::stoll(shape.key[2]), nn = std::stoll(shape.key[3]),
                       kk = std::stoll(shape.key[4]), batch = std::stoll(shape.key[5]);
    const std::string& layout = shape.key[6];
    DType dtype;
    try {
      dtype = parse_dtype(dtype_text);
    } catch (const Error&) {
      if (left_out)
        left_out->push_back(fmt::format("{} {}x{}x{} {}: dtype '{}' is not one bench_gemm knows",
                                        api, mm, nn, kk, layout, dtype_text));
      continue;
    }
    // The layout is NN, NT, TN or TT: the capture's rules refuse any other.
    GemmCase c;
    c.report = "capture";
    c.model = "capture";
    c.gemm = api;
    c.problem.m = mm;
    c.problem.n = nn;
    c.problem.k = kk;
    c.problem.batch = std::max<std::int64_t>(1, batch);
    c.problem.transa = layout[0] == 'T';
    c.problem.transb = layout[1] == 'T';
    c.problem.dtype = dtype;
    c.problem.out_dtype = gemm_output_dtype(dtype);
    CapturedGemm cap;
    cap.api = api;
    cap.calls = shape.calls;
    cap.in_job_us = shape.in_job_us();
    c.captured = cap;
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace opbench
