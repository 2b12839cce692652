#include "common/interrupt.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <fstream>
#include <string>

namespace opbench {
namespace {

volatile std::sig_atomic_t g_signal = 0;
std::atomic<pid_t> g_launcher{0};  // the parent watch_launcher() saw; 0: none watched
std::atomic<bool> g_launcher_gone{false};
std::string g_launcher_end;  // the interruption() text, written once before g_launcher_gone

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

void watch_launcher() {
  std::signal(SIGPIPE, SIG_IGN);
  const pid_t parent = getppid();
  std::string name;
  std::ifstream(fmt::format("/proc/{}/comm", parent)) >> name;
  g_launcher_end =
      fmt::format("the end of its launcher ({}, pid {})", name.empty() ? "?" : name, parent);
  g_launcher = parent;
}

bool interrupted() {
  if (g_signal != 0 || g_launcher_gone) return true;
  // A process whose parent ends is adopted by another (init, a subreaper): one syscall, cheap
  // enough for the case loops and the watchdog's ten looks a second.
  const pid_t launcher = g_launcher;
  if (launcher != 0 && getppid() != launcher) g_launcher_gone = true;
  return g_launcher_gone;
}

int interrupted_exit_code() {
  return 128 + (g_signal != 0 ? static_cast<int>(g_signal) : SIGTERM);
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

const char* interruption() {
  if (g_signal != 0) return interrupted_signal_name();
  return g_launcher_gone ? g_launcher_end.c_str() : "";
}

}  // namespace opbench
