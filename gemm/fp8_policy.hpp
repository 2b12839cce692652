#pragma once
// How fp8 GEMMs run on cuBLASLt, decided on the host so it can be tested without a GPU:
// - the accumulation mode (CUBLASLT_MATMUL_DESC_FAST_ACCUM): Transformer Engine's recipes
//   accumulate the forward GEMM fast and the two gradient GEMMs with a split (promoted)
//   accumulator, for accuracy (transformer_engine/common/recipe: MMParams
//   use_split_accumulator, fprop False, dgrad and wgrad True; cublaslt_gemm.cu sets FAST_ACCUM
//   to !use_split_accumulator);
// - the layout: before Blackwell, cuBLASLt runs fp8 only in its "TN" layout (NT in our
//   row-major table); compute capability 10.x and 13.x accept any layout (Transformer Engine's
//   nvte_is_non_tn_fp8_gemm_supported: 100 <= sm < 120 or sm >= 130).
#include <string>

#include "gemm/gemm_problem.hpp"

namespace opbench {

enum class Fp8Accumulation { by_pass, fast, split };

// --fp8-accum auto|fast|split (auto: by pass, as Transformer Engine).
Fp8Accumulation parse_fp8_accumulation(const std::string& text);

// Whether a GEMM of `pass` ("fprop", "dgrad", "wgrad", or "" for shapes and sweeps) accumulates
// fast. A GEMM without a pass is taken as a forward GEMM.
bool fp8_fast_accumulation(Fp8Accumulation mode, const std::string& pass);
// "fast accumulation" or "split accumulator", as the `algo` column names it.
std::string fp8_accumulation_name(bool fast);

// Whether cuBLASLt on a device of compute capability major.minor needs fp8 in its TN layout.
bool fp8_needs_tn_layout(int cc_major, int cc_minor);

// The problem as cuBLASLt runs it on that device: fp8 GEMMs in another layout get pre-transposed
// operands (as Transformer Engine does) where the device needs TN, and `note` says so; every
// other problem is returned as it is, with `note` untouched.
GemmProblem fp8_layout_as_run(GemmProblem p, int cc_major, int cc_minor, std::string* note);

}  // namespace opbench
