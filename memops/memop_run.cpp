#include "memops/memop_run.hpp"

#include <fmt/format.h>

#include "common/case_loop.hpp"
#include "common/progress.hpp"
#include "common/provider_registry.hpp"
#include "common/text.hpp"

namespace opbench {
namespace {

// The memory-bound providers of each backend: our CUDA kernels and cuDNN's norms beside them on
// a GPU; the vectorised loops on the CPU.
const ProviderTable<MemopProvider>& memop_providers() {
  static const ProviderTable<MemopProvider> table{
      {Backend::cuda, "cuda", OPBENCH_CUDA_PROVIDER(make_cuda_memop_provider)},
      {Backend::cuda, "cudnn", OPBENCH_CUDA_PROVIDER(make_cudnn_norm_provider)},
      {Backend::cpu, "cpu", [](int) { return make_cpu_memop_provider(); }},
  };
  return table;
}

}  // namespace

std::unique_ptr<MemopProvider> make_memop_provider(Backend backend, const std::string& name,
                                                   int device) {
  return make_registered(memop_providers(), backend, name, device);
}

std::vector<std::unique_ptr<MemopProvider>> make_memop_providers(Backend backend,
                                                                 const std::string& names,
                                                                 int device) {
  std::vector<std::string> wanted =
      names.empty() ? provider_names(memop_providers(), backend) : split(names, ',');
  std::vector<std::unique_ptr<MemopProvider>> out;
  for (const auto& name : wanted)
    out.push_back(make_registered(memop_providers(), backend, to_lower(trim(name)), device));
  return out;
}

MemopResult run_memop_case(MemopProvider& provider, const MemopCase& c,
                           const MemopRunOptions& run) {
  MemopResult r =
      guarded_result<MemopResult>(provider.unsupported(c), [&] { return provider.run(c, run); });
  if (r.status == Status::skipped) return r;
  std::string note = c.note;
  append_note(note, r.note);
  if (r.check_passed && !*r.check_passed) {
    r.status = Status::failed;
    append_note(note, "check failed: " + r.check_detail);
  }
  if (r.status == Status::ok) append_note(note, noise_note(r.measurement, run.measure));
  r.note = note;
  return r;
}

std::string memop_progress_line(const std::string& label, const Record& row, const MemopResult& r) {
  if (r.status != Status::ok)
    return fmt::format("{}  {}: {}", label, status_name(r.status), r.note);
  std::string line = fmt::format("{}  {}  {}", label, time_text(r.measurement.stats.mean),
                                 bandwidth_text(std::get<double>(*row.find("mem_bw_gbps"))));
  auto pct = row.find("pct_peak_bw");
  if (pct && std::holds_alternative<double>(*pct))
    line += fmt::format(" ({:.0f}% of the roof)", std::get<double>(*pct));
  return line;
}

}  // namespace opbench
