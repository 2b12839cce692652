#include "gemm/gemm_problem.hpp"

#include <fmt/format.h>

namespace opbench {

std::int64_t GemmProblem::read_bytes() const {
  auto in = static_cast<std::int64_t>(dtype_size(dtype));
  auto out = static_cast<std::int64_t>(dtype_size(out_dtype));
  return batch * (a_elements() + b_elements()) * in +
         (beta_nonzero ? batch * c_elements() * out : 0);
}

std::int64_t GemmProblem::write_bytes() const {
  return batch * c_elements() * static_cast<std::int64_t>(dtype_size(out_dtype));
}

std::int64_t GemmProblem::operand_bytes() const {
  return batch * ((a_elements() + b_elements()) * static_cast<std::int64_t>(dtype_size(dtype)) +
                  c_elements() * static_cast<std::int64_t>(dtype_size(out_dtype)));
}

std::string GemmProblem::layout() const {
  return fmt::format("{}{}", transa ? 'T' : 'N', transb ? 'T' : 'N');
}

std::string GemmProblem::dims() const {
  return batch > 1 ? fmt::format("b{} {}x{}x{}", batch, m, n, k) : fmt::format("{}x{}x{}", m, n, k);
}

DType gemm_output_dtype(DType input) {
  switch (input) {
    case DType::fp8_e4m3:
    case DType::fp8_e5m2:
      return DType::bf16;
    default:
      return input;
  }
}

}  // namespace opbench
