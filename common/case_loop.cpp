#include "common/case_loop.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "common/interrupt.hpp"
#include "common/long_case_notice.hpp"
#include "common/text.hpp"
#include "common/timer.hpp"

namespace opbench {

void CaseLoop::carry_earlier(ReportFiles& files, const FinishedCases& finished,
                             const Record& like) {
  for (auto& row : finished.records(like)) {
    files.carry(row);
    ++tally_.carried;
    rows_.push_back(std::move(row));
  }
}

bool CaseLoop::run(const std::string& label, double work, RowSink& files,
                   const std::optional<Record>& earlier,
                   const std::function<MeasuredRow()>& measure) {
  if (stop_()) return false;
  if (earlier) {
    tally_.add_earlier(*earlier);
    progress_.done(work, label + "  already in the report");
    return true;
  }
  progress_.start(label);
  CpuTimer case_clock;
  ScopedLongCaseNotice notice([&](double run_s, double case_s, int runs) {
    progress_.note(fmt::format(
        "note: {} will take at least {}: one run takes {}, and it runs {} times (warm-up and "
        "--min-samples; lower those for a quicker look)",
        label, human_duration(case_s), time_text(run_s * 1e6), runs));
  });
  MeasuredRow m;
  try {
    m = measure();
  } catch (const CaseInterrupted&) {
    // Cut short at a run boundary: its samples so far are not the measurement the stop rule
    // asks for, so no row is written; --resume runs the case again.
    progress_.note(fmt::format("interrupted during {}: the case is not recorded", label));
    return false;
  }
  m.row.extra()["harness"] = harness_.add_case(case_clock.elapsed_s(), m.measurement);
  add_row(files, m.row);
  harness_.result_written();
  const auto& samples = m.measurement.samples_us;
  double run_us = 0;
  for (double us : samples)
    run_us += us;
  progress_.done(work, m.progress, m.measurement.warmup_s + m.measurement.sampling_s,
                 samples.empty() ? -1 : run_us / static_cast<double>(samples.size()) * 1e-6);
  return true;
}

void CaseLoop::add_row(RowSink& files, const Record& row) {
  files.write(row);
  rows_.push_back(row);
  progress_.clear();
  if (table_) table_->print(row);
  tally_.add(row);
}

ReportSets::ReportSets(std::string dir, std::string prefix, const ReportOptions& report,
                       nlohmann::json run, std::string metric_prefix, CaseLoop& loop)
    : dir_(std::move(dir)),
      prefix_(std::move(prefix)),
      metric_prefix_(std::move(metric_prefix)),
      report_(report),
      run_(std::move(run)),
      loop_(loop) {}

ReportFiles& ReportSets::open(const std::string& key, const Record& like) {
  auto& f = files_[key];
  if (f) return *f;
  const auto base = (std::filesystem::path(dir_) / (prefix_ + "_" + file_safe(key))).string();
  // The CSV's header at once, from `like`: a run stopped in this report's first case leaves
  // the header, not an empty file.
  f = std::make_unique<ReportFiles>(base, report_.formats, run_, metric_prefix_, report_.resume,
                                    like.names());
  opened_.push_back(f.get());
  if (report_.resume) {
    auto& earlier = finished_.emplace(key, FinishedCases(base + ".csv")).first->second;
    loop_.carry_earlier(*f, earlier, like);
  }
  return *f;
}

std::optional<Record> ReportSets::earlier(const std::string& key, const Record& row) const {
  auto it = finished_.find(key);
  return it == finished_.end() ? std::nullopt : it->second.earlier(row);
}

std::vector<std::string> ReportSets::listing() const {
  std::vector<std::string> out;
  for (const ReportFiles* f : opened_)
    for (const auto& line : f->listing())
      out.push_back(line);
  return out;
}

}  // namespace opbench
