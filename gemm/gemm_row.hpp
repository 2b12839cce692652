#pragma once
// A GEMM case and its result as one report row (CSV columns as docs/outputs.md lists them).
#include "common/hardware.hpp"
#include "common/record.hpp"
#include "gemm/gemm_cases.hpp"
#include "gemm/provider.hpp"

namespace opbench {

Record gemm_row(const GemmCase& c, const ProviderId& provider, const GemmResult& result,
                const Peaks& peaks);

}  // namespace opbench
