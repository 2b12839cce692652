#include "common/case_loop.hpp"

#include "common/interrupt.hpp"
#include "common/timer.hpp"

namespace opbench {

void CaseLoop::carry_earlier(ReportFiles& files, const FinishedCases& finished,
                             const Record& like) {
  for (auto& row : finished.records(like)) {
    files.carry(row);
    tally_.add_earlier(row);
    rows_.push_back(std::move(row));
  }
}

bool CaseLoop::run(const std::string& label, double work, ReportFiles& files, bool already_done,
                   const std::function<MeasuredRow()>& measure) {
  if (interrupted()) return false;
  if (already_done) {
    progress_.done(work, label + "  already in the report");
    return true;
  }
  progress_.start(label);
  CpuTimer case_clock;
  MeasuredRow m = measure();
  m.row.extra()["harness"] = harness_.add_case(case_clock.elapsed_s(), m.measurement);
  files.write(m.row);
  harness_.result_written();
  rows_.push_back(m.row);
  progress_.clear();
  table_.print(m.row);
  tally_.add(m.row);
  progress_.done(work, m.progress);
  return true;
}

}  // namespace opbench
