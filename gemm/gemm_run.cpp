#include "gemm/gemm_run.hpp"

#include <fmt/format.h>

#include "common/case_loop.hpp"
#include "common/progress.hpp"
#include "common/provider_registry.hpp"
#include "common/text.hpp"

namespace opbench {
namespace {

// The GEMM providers of each backend (the first is its default): cuBLASLt on a GPU, OpenBLAS on
// the CPU; the routed experts' grouped GEMMs through cuBLAS or OpenBLAS.
const ProviderTable<GemmProvider>& gemm_providers() {
  static const ProviderTable<GemmProvider> table{
      {Backend::cuda, "cublaslt", OPBENCH_CUDA_PROVIDER(make_cublaslt_provider)},
      {Backend::cpu, "openblas", [](int) { return make_openblas_provider(); }},
  };
  return table;
}

const ProviderTable<ExpertGemmProvider>& gemm_expert_providers() {
  static const ProviderTable<ExpertGemmProvider> table{
      {Backend::cuda, "cublas", OPBENCH_CUDA_PROVIDER(make_cublas_expert_provider)},
      {Backend::cpu, "openblas", [](int) { return make_openblas_expert_provider(); }},
  };
  return table;
}

}  // namespace

std::unique_ptr<GemmProvider> make_gemm_provider(Backend backend, int device) {
  return make_registered(gemm_providers(), backend, "", device);
}

std::unique_ptr<ExpertGemmProvider> make_gemm_expert_provider(Backend backend, int device) {
  return make_registered(gemm_expert_providers(), backend, "", device);
}

ProviderId GemmProviders::id_for(const GemmCase& c) const {
  if (c.experts && experts) return {experts->name(), experts->backend(), experts->device()};
  return {dense->name(), dense->backend(), dense->device()};
}

GemmCase GemmProviders::as_run(GemmCase c, std::string* note) const {
  if (!c.experts) c.problem = dense->as_run(c.problem, note);
  return c;
}

GemmResult run_gemm_case(GemmProviders& providers, GemmCase& c, GemmRunOptions run_options,
                         Fp8Accumulation fp8_accum) {
  run_options.fp8_fast_accum = fp8_fast_accumulation(fp8_accum, c.pass);
  const auto why = c.experts ? providers.experts->unsupported(c.problem.dtype, c.experts->impl)
                             : providers.dense->unsupported(c.problem.dtype);
  std::string layout_note;
  if (!why) c = providers.as_run(c, &layout_note);
  GemmResult r = guarded_result<GemmResult>(why, [&] {
    return c.experts ? providers.experts->run(c.experts->experts, c.experts->impl, run_options)
                     : providers.dense->run(c.problem, run_options);
  });
  if (r.status == Status::skipped) return r;
  std::string note = c.note;
  append_note(note, layout_note);
  append_note(note, r.note);
  if (r.check && !r.check->passed) {
    r.status = Status::failed;
    append_note(note, "check failed: " + r.check->detail);
  }
  if (r.status == Status::ok) append_note(note, noise_note(r.measurement, run_options.measure));
  r.note = note;
  return r;
}

std::string gemm_case_label(const GemmCase& c) {
  if (c.experts)
    return fmt::format("{} {} {} {} {} experts, {}..{} tokens {}", c.model, c.gemm, c.pass,
                       moe_impl_name(c.experts->impl), c.experts->experts.experts(),
                       c.experts->experts.min_tokens(), c.experts->experts.max_tokens(),
                       dtype_name(c.problem.dtype));
  return fmt::format("{} {}{}{} {} {}", c.model, c.gemm, c.pass.empty() ? "" : " ", c.pass,
                     c.problem.dims(), dtype_name(c.problem.dtype));
}

std::string gemm_progress_line(const GemmCase& c, const Record& row, const GemmResult& r) {
  std::string what = gemm_case_label(c);
  if (r.status != Status::ok) return fmt::format("{}  {}: {}", what, status_name(r.status), r.note);
  auto tflops = std::get<double>(*row.find("tflops"));
  auto pct = row.find("pct_peak_flops");
  std::string rate =
      fmt::format("{}  {}", time_text(r.measurement.stats.mean), flops_rate_text(tflops));
  if (pct && !std::holds_alternative<std::monostate>(*pct))
    rate += fmt::format(" ({:.0f}% of peak)", std::get<double>(*pct));
  return fmt::format("{}  {}", what, rate);
}

}  // namespace opbench
