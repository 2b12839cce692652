#include "common/interrupt.hpp"

#include <csignal>

namespace opbench {
namespace {

volatile std::sig_atomic_t g_signal = 0;

extern "C" void on_signal(int sig) {
  if (g_signal != 0) {
    // A second SIGINT is a user who wants out now: stop at once. A repeated SIGTERM is not: the
    // launchers send it more than once for one stop (Slurm twice at a time limit, within
    // milliseconds; mpirun again a second after Slurm signalled every process of the job), and
    // their SIGKILL follows anyway. Dying on it would leave the running case without its row.
    if (sig == SIGTERM) return;
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_signal = sig;
}

}  // namespace

void install_interrupt_handlers() {
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
}

bool interrupted() {
  return g_signal != 0;
}
int interrupted_exit_code() {
  return 128 + static_cast<int>(g_signal);
}
const char* interrupted_signal_name() {
  switch (g_signal) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    default:
      return "";
  }
}

}  // namespace opbench
