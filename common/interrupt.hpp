#pragma once
// SIGINT and SIGTERM end a run at the next run of a case (measure() checks between warm-up runs
// and samples; the case cut short is not recorded) or, in the collectives, between cases: the
// handler only records the signal, and the run loops stop, close their reports (every finished
// row is already flushed, so the files stay well formed) and exit with 128 + the signal number.
// A second signal ends the process at once.
namespace opbench {

void install_interrupt_handlers();
bool interrupted();
int interrupted_exit_code();  // 130 for SIGINT, 143 for SIGTERM

}  // namespace opbench
