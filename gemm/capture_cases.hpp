#pragma once
// bench_gemm --capture-path / --trace-path: the GEMMs a real job ran, read back from the capture
// library's CSV files (docs/outputs.md#capture-files-libopbench_captureso) or a converted
// profiler trace, as cases to run alone. The capture
// keys GEMMs in bench_gemm's own row-major convention, so a captured row is a case as it is.
#include <optional>
#include <string>
#include <vector>

#include "common/capture_tables.hpp"
#include "gemm/gemm_cases.hpp"

namespace opbench {

struct CaptureSelection {
  ShapeSource source;       // the capture folder or converted trace
  std::optional<int> rank;  // only that rank's tables; every table merged when not given
};

// One case per captured GEMM key (api, dtype, m, n, k, batch, layout) over the selected files,
// calls and times summed, in-job average = total / timed calls; largest in-job total first.
// Shapes whose dtype opbench does not know are left out and named in `left_out`. bad_input when
// the folder, its files or their columns are not a capture's.
std::vector<GemmCase> capture_cases(const CaptureSelection& selection,
                                    std::vector<std::string>* left_out = nullptr);

}  // namespace opbench
