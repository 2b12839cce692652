#pragma once
// One GEMM case run through its provider, written once for bench_gemm and bench_step: the
// providers of a backend, the guarded run with its notes (layout, check, noise), and the case's
// label and progress line.
#include <memory>
#include <string>

#include "common/backend.hpp"
#include "common/record.hpp"
#include "gemm/expert_gemm.hpp"
#include "gemm/fp8_policy.hpp"
#include "gemm/gemm_cases.hpp"
#include "gemm/provider.hpp"

namespace opbench {

// The backend's default providers (the tables are in gemm_run.cpp).
std::unique_ptr<GemmProvider> make_gemm_provider(Backend backend, int device);
std::unique_ptr<ExpertGemmProvider> make_gemm_expert_provider(Backend backend, int device);

// The providers of a run: the dense GEMMs', and the routed experts' when a case has experts.
struct GemmProviders {
  std::unique_ptr<GemmProvider> dense;
  std::unique_ptr<ExpertGemmProvider> experts;

  ProviderId id_for(const GemmCase& c) const;
  // The case as its provider runs it (fp8 on cuBLASLt forces the TN layout; expert rows as
  // given).
  GemmCase as_run(GemmCase c, std::string* note) const;
};

// Runs `c` (rewritten as run) under the stop rule: skipped when the provider cannot, failed when
// it throws or its check fails, with every note the row needs.
GemmResult run_gemm_case(GemmProviders& providers, GemmCase& c, GemmRunOptions run_options,
                         Fp8Accumulation fp8_accum);

std::string gemm_case_label(const GemmCase& c);
std::string gemm_progress_line(const GemmCase& c, const Record& row, const GemmResult& r);

}  // namespace opbench
