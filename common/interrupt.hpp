#pragma once
// SIGINT and SIGTERM end a run at the next run of a case (measure() checks between warm-up runs
// and samples and throws CaseInterrupted; the case cut short is not recorded) or, in the
// collectives (bench_ccl, bench_fsdp), between cases: the handler only records the signal, and the
// run loops stop, close their reports (every finished row is already flushed, so the files stay
// well formed) and exit with 128 + the signal number. A collective case still running 0.5 s after
// the signal is ended from the runner's watchdog thread instead, with a failed `interrupted:` row
// (collectives/coll_runner). A second SIGINT ends the process at once; a repeated SIGTERM is
// ignored, as launchers repeat it for one stop (Slurm sends it twice at a time limit).
namespace opbench {

// Thrown by measure() when a signal cuts a case short, and caught by CaseLoop: the case's code
// unwinds without building a row from a partial measurement. Not an Error (nor a
// std::exception), so nothing turns it into a failed row on the way.
struct CaseInterrupted {};

void install_interrupt_handlers();
// In a process a launcher started (a rank under mpirun, its node daemon or srun): the launcher's
// end counts as an interrupt too. mpirun given a second SIGINT or SIGTERM within 5 s — `timeout`
// sends one to mpirun and another to its process group — exits at once without passing a signal
// on, and the ranks are SIGKILLed about a second later: a rank learns of it only by its parent's
// end, which interrupted() looks for. Also ignores SIGPIPE, so that writing to the stderr the
// launcher no longer reads fails instead of killing the process before it writes its reports.
void watch_launcher();
bool interrupted();                     // a signal came, or the watched launcher ended
int interrupted_exit_code();            // 130 for SIGINT, 143 for SIGTERM or the launcher's end
const char* interrupted_signal_name();  // "SIGINT", "SIGTERM"; "" before any signal
// What interrupted the run: "SIGINT", "SIGTERM", or "the end of its launcher (mpirun, pid 812)";
// "" before anything did.
const char* interruption();

}  // namespace opbench
