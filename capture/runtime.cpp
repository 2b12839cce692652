#include "capture/runtime.hpp"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <mutex>
#include <new>
#include <vector>

#include "capture/gpu_sampling.hpp"
#include "capture/output.hpp"

namespace opbench::capture {

thread_local int t_depth __attribute__((tls_model("initial-exec"))) = 0;

namespace {

enum State : int { kUninit = 0, kInitialising = 1, kOn = 2, kOff = 3 };

// The longest the exit write may hold a process's end (exit(), _exit, and the SIGTERM watcher
// alike). The tables' folder may be on a network filesystem, and one that stopped answering must
// not keep a finished job from ending.
constexpr int kExitWriteS = 5;

struct Runtime {
  std::atomic<int> state{kUninit};
  std::atomic<bool> said{false};
  // A failure at load time is said at the first intercepted call, so the processes of a job
  // that call nothing (the shell, mpirun) stay quiet.
  std::string pending_message;
  std::atomic<bool> message_pending{false};
  ShapeTable table;
  ProcessFacts facts;
  std::string dir;
  std::string base;  // capture-<host>-rank<r> or capture-<host>-pid<pid>
  double interval_s = 0;

  std::mutex write_mutex;  // one writer at a time (periodic thread, exit, tests)
  std::uint64_t written_generation = 0;

  std::mutex thread_mutex;  // the periodic writer's sleep
  std::condition_variable wake;
  bool stop = false;
  std::atomic<bool> writer_started{false};

  std::atomic<void (*)()> before_write[4] = {};
  std::atomic<bool> final_written{false};  // the exit write is done: _exit after exit() skips it
  sem_t exit_written;                      // posted by the exit write's own thread (at_exit)
  // The line that says the exit write was cut short, made with the files' names (name_files):
  // _exit's alarm handler may only write it out.
  char cut_line[1024] = {};
  std::size_t cut_line_size = 0;
  std::atomic<std::uint64_t> forks{0};

  // A forked child ended by SIGTERM (multiprocessing's Pool.terminate(), the way `with Pool()`
  // ends its workers) writes its tables first: the handler only posts `term`, which is safe in
  // a signal handler; a thread of ours writes, then ends the process by SIGTERM as it would have.
  sem_t term;
  std::atomic<bool> term_watch{false};

  int http_port = 0;  // OPBENCH_CAPTURE_PORT + the local rank; 0: no endpoint
};

// Made on first use and never destroyed: hooks can run during static destruction and exit.
Runtime& rt() {
  static Runtime* r = new Runtime();
  return *r;
}

std::string iso_now() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string short_host() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  std::string h = buf;
  const auto dot = h.find('.');
  return dot == std::string::npos ? h : h.substr(0, dot);
}

// The launcher's rank variables, in the order the issue and docs name them.
std::string launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "RANK"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') {
      char* end = nullptr;
      const long r = std::strtol(v, &end, 10);
      if (*end == '\0' && r >= 0) return std::to_string(r);
    }
  }
  return "";
}

std::string command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && text.back() == '\0')
    text.pop_back();
  for (char& c : text)
    if (c == '\0') c = ' ';
  return text;
}

void name_files(Runtime& r, bool forked_child) {
  // A forked child shares its parent's rank variables, so only its pid tells its files apart.
  r.base = "capture-" + r.facts.host + "-" +
           (r.facts.rank.empty() || forked_child ? "pid" + std::to_string(r.facts.pid)
                                                 : "rank" + r.facts.rank);
  const int n = std::snprintf(r.cut_line, sizeof r.cut_line,
                              "opbench-capture: the exit write to %s did not end within %d s (a "
                              "filesystem that does not answer?): the process ends without it, "
                              "and the tables there are the last periodic write's\n",
                              r.dir.c_str(), kExitWriteS);
  r.cut_line_size = std::min(static_cast<std::size_t>(std::max(n, 0)), sizeof r.cut_line - 1);
}

// The prepared line on stderr (async-signal-safe).
void say_cut_short() {
  Runtime& r = rt();
  (void)!::write(STDERR_FILENO, r.cut_line, r.cut_line_size);
}

void before_fork() {
  Runtime& r = rt();
  r.write_mutex.lock();
  r.table.lock_all();
}
void after_fork_parent() {
  Runtime& r = rt();
  r.table.unlock_all();
  r.write_mutex.unlock();
  r.forks.fetch_add(1);
}

// The exit write, wherever the process ends (exit handler, _exit, the SIGTERM watcher): the
// before-write hooks (the GPU timer's drain), then the final tables. Calls made meanwhile are the
// capture's own and pass through.
void write_final() {
  Runtime& r = rt();
  CallScope scope;
  for (auto& fn : r.before_write)
    if (auto f = fn.load()) f();
  write_tables(true);
  r.final_written.store(true);
}

void on_sigterm(int) {
  sem_post(&rt().term);
}

// SIGTERM with the default action: the process ends by it, as it would have without us.
void end_by_sigterm() {
  struct sigaction action {};
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  kill(getpid(), SIGTERM);
}
void end_by_sigterm_on_alarm(int) {
  say_cut_short();
  end_by_sigterm();  // write, sigaction and kill are async-signal-safe
}

// A thread that takes no signals waits for on_sigterm, writes the tables, and ends the process
// by SIGTERM with the default action, as the signal would have. The write waits for the GPU's
// drain (about 1.1 s at most) and takes locks a program thread may hold: an alarm ends the
// process by SIGTERM after 5 s whatever the write is doing, so SIGTERM always ends it (the
// tables are then lost, as they were without the watcher).
void start_term_watch() {
  const int rc = start_quiet_thread([] {
    Runtime& w = rt();
    while (sem_wait(&w.term) != 0) {
    }
    struct sigaction action {};
    action.sa_handler = end_by_sigterm_on_alarm;
    sigemptyset(&action.sa_mask);
    sigaction(SIGALRM, &action, nullptr);
    alarm(kExitWriteS);
    write_final();
    end_by_sigterm();
  });
  if (rc == 0) return;
  // no thread to write with: leave SIGTERM as it was
  signal(SIGTERM, SIG_DFL);
}

// Whether SIGTERM still has its default action: anything else is the program's own (a handler
// a worker installs for its graceful shutdown, an ignored signal), which the capture leaves be.
bool sigterm_is_default() {
  struct sigaction current {};
  return sigaction(SIGTERM, nullptr, &current) == 0 && (current.sa_flags & SA_SIGINFO) == 0 &&
         current.sa_handler == SIG_DFL;
}

// In a forked child whose SIGTERM still has the default action (a program's own handler is
// left alone), SIGTERM is to go to on_sigterm; the handler and its watching thread come with the
// child's first recorded call (start_writer), since a child that records nothing has nothing to
// write, and only if the action is still the default then.
void watch_sigterm_in_child(Runtime& r) {
  // the parent's flag is no answer for this process: a grandchild of a child that watched would
  // otherwise take over the handler its parent installed since
  r.term_watch.store(false);
  struct sigaction current {};
  if (sigaction(SIGTERM, nullptr, &current) != 0 || (current.sa_flags & SA_SIGINFO) != 0) return;
  // a grandchild inherits its parent's on_sigterm but not the thread that answers it
  if (current.sa_handler == on_sigterm)
    signal(SIGTERM, SIG_DFL);
  else if (current.sa_handler != SIG_DFL)
    return;
  sem_init(&r.term, 0, 0);
  r.term_watch.store(true);
}
void after_fork_child() {
  // The child starts empty and writes its own files; the writer thread did not survive fork().
  Runtime& r = rt();
  r.table.clear_after_fork();
  new (&r.write_mutex) std::mutex();
  new (&r.thread_mutex) std::mutex();
  new (&r.wake) std::condition_variable();
  r.written_generation = 0;
  r.stop = false;
  r.writer_started.store(false);
  r.http_port = 0;  // the parent serves its port; a forked child does not
  r.facts.parent_pid = r.facts.pid;
  r.facts.pid = static_cast<long>(getpid());
  r.facts.started = iso_now();
  r.final_written.store(false);
  r.forks.store(0);
  name_files(r, true);
  watch_sigterm_in_child(r);
}

// The exit write on a thread of its own, waited for kExitWriteS at most: past that the process
// ends without it (its tables stay as the periodic writer last left them), and says so. Not by
// an alarm, as _exit's write is: that would end a finished job by SIGALRM, not with its own exit
// status. The trade-off: exit() then goes on (other exit handlers, static destructors) while the
// write may still be running; it touches only the capture's own never-destroyed state and the
// files it writes.
void write_final_bounded() {
  Runtime& r = rt();
  sem_init(&r.exit_written, 0, 0);
  if (start_quiet_thread([] {
        write_final();
        sem_post(&rt().exit_written);
      }) != 0) {
    write_final();  // no thread to wait on: write as before
    return;
  }
  // on the monotonic clock: a step of the wall clock must not stretch the bound
  timespec deadline{};
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += kExitWriteS;
  while (sem_clockwait(&r.exit_written, CLOCK_MONOTONIC, &deadline) != 0) {
    if (errno == EINTR) continue;
    // _exit after exit() must not write again: the stuck write holds the lock it would wait on
    r.final_written.store(true);
    say_cut_short();
    return;
  }
}

void at_exit() {
  Runtime& r = rt();
  if (r.state.load() != kOn) return;
  {
    std::lock_guard<std::mutex> lock(r.thread_mutex);
    r.stop = true;
  }
  r.wake.notify_all();
  write_final_bounded();
}

void writer_loop() {
  Runtime& r = rt();
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(r.thread_mutex);
      r.wake.wait_for(lock, std::chrono::duration<double>(r.interval_s), [&] { return r.stop; });
      if (r.stop) return;
    }
    write_tables(false);
  }
}

std::string render_prom() {
  Runtime& r = rt();
  return prom_text(r.facts, r.table.snapshot());
}

// The local rank, for the endpoint's port: launchers' variables, 0 without one.
int local_rank() {
  for (const char* name :
       {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return std::atoi(v);
  }
  return 0;
}

// Opens libopbench_capture_http.so (beside this library) and serves /metrics. Failure is said
// once; the files are written all the same.
void start_http(Runtime& r) {
  Dl_info self{};
  dladdr(reinterpret_cast<void*>(&start_http), &self);
  std::string path = self.dli_fname ? self.dli_fname : "";
  path = path.substr(0, path.find_last_of('/') + 1) + "libopbench_capture_http.so";
  void* module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  using Serve = int (*)(int, std::string (*)(), char*, std::size_t);
  auto serve =
      module ? reinterpret_cast<Serve>(dlsym(module, "opbench_capture_http_serve")) : nullptr;
  if (serve == nullptr) {
    say_once("OPBENCH_CAPTURE_PORT: no /metrics endpoint (" + path + ": " +
             (module ? "no opbench_capture_http_serve" : dlerror()) + "); the files are written");
    return;
  }
  char error[256] = {};
  if (serve(r.http_port, render_prom, error, sizeof error) != 0)
    say_once(std::string("OPBENCH_CAPTURE_PORT: ") + error + "; the files are written");
}

void start_writer() {
  Runtime& r = rt();
  if (r.writer_started.exchange(true)) return;
  // The child may have installed its own SIGTERM handler since the fork: that one stays.
  if (r.term_watch.load() && sigterm_is_default()) {
    struct sigaction action {};
    action.sa_handler = on_sigterm;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, nullptr);
    start_term_watch();
  }
  if (r.http_port > 0) {  // the endpoint's thread takes no signals either
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    start_http(r);
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }
  if (r.interval_s <= 0) return;
  if (const int rc = start_quiet_thread(writer_loop); rc != 0)
    say_once(std::string("cannot start the periodic writer (") + std::strerror(rc) +
             "); tables are written at exit only");
}

// A whole-number setting `name` of at least `least`, when set: `value` keeps its default
// otherwise; false (the capture off, said once) for anything else.
bool whole_setting(const char* name, std::uint64_t least, std::uint64_t& value) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return true;
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (*v < '0' || *v > '9' || *end != '\0' || errno != 0 || n < least || n > 1000000000ull) {
    fail(std::string(name) + " '" + v + "': expected a whole number from " + std::to_string(least) +
         " to 1000000000");
    return false;
  }
  value = n;
  return true;
}

bool initialise(Runtime& r) {
  r.facts.host = short_host();
  r.facts.rank = launcher_rank();
  r.facts.pid = static_cast<long>(getpid());
  r.facts.command = command_line();
  r.facts.started = iso_now();
  const char* dir = std::getenv("OPBENCH_CAPTURE_DIR");
  r.dir = (dir != nullptr && *dir != '\0') ? dir : ".";
  struct stat st {};
  if (::stat(r.dir.c_str(), &st) != 0) {
    fail("OPBENCH_CAPTURE_DIR '" + r.dir + "': " + std::strerror(errno));
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    fail("OPBENCH_CAPTURE_DIR '" + r.dir + "' is not a directory");
    return false;
  }
  if (::access(r.dir.c_str(), W_OK | X_OK) != 0) {
    fail("OPBENCH_CAPTURE_DIR '" + r.dir + "' is not writable: " + std::strerror(errno));
    return false;
  }
  r.interval_s = 10;
  if (const char* iv = std::getenv("OPBENCH_CAPTURE_INTERVAL"); iv != nullptr && *iv != '\0') {
    char* end = nullptr;
    const double s = std::strtod(iv, &end);
    if (end == iv || *end != '\0' || !(s >= 0) || s > 1e6) {
      fail(std::string("OPBENCH_CAPTURE_INTERVAL '") + iv +
           "': expected seconds between 0 (at exit only) and 1000000");
      return false;
    }
    r.interval_s = s;
  }
  GpuSampling sampling;
  if (!whole_setting("OPBENCH_CAPTURE_TIME_FIRST", 0, sampling.time_first) ||
      !whole_setting("OPBENCH_CAPTURE_SAMPLE", 1, sampling.one_in))
    return false;
  set_gpu_sampling(sampling);
  r.facts.gpu_time_first = sampling.time_first;
  r.facts.gpu_sample_one_in = sampling.one_in;
  if (const char* port = std::getenv("OPBENCH_CAPTURE_PORT"); port != nullptr && *port != '\0') {
    char* end = nullptr;
    const long p = std::strtol(port, &end, 10);
    if (*end != '\0' || p < 1 || p > 65535) {
      fail(std::string("OPBENCH_CAPTURE_PORT '") + port + "': expected a port number 1..65535");
      return false;
    }
    r.http_port = static_cast<int>(p) + local_rank();
  }
  name_files(r, false);
  pthread_atfork(before_fork, after_fork_parent, after_fork_child);
  std::atexit(at_exit);
  return true;
}

// Settings are read when the library is loaded, before the program starts its threads; a hook
// called earlier (from another library's constructor) initialises on the spot.
__attribute__((constructor)) void load_time_init() {
  enabled();
}

}  // namespace

int start_quiet_thread(void (*body)()) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_t thread;
  const int rc = pthread_create(
      &thread, nullptr,
      [](void* fn) -> void* {
        reinterpret_cast<void (*)()>(fn)();
        return nullptr;
      },
      reinterpret_cast<void*>(body));
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc == 0) pthread_detach(thread);
  return rc;
}

bool enabled() {
  Runtime& r = rt();
  const int s = r.state.load(std::memory_order_acquire);
  if (s == kOn) return true;
  if (s == kOff) {
    if (r.message_pending.exchange(false)) say_once(r.pending_message);
    return false;
  }
  int expected = kUninit;
  if (!r.state.compare_exchange_strong(expected, kInitialising)) {
    // Another thread is initialising (its own calls meanwhile pass through, at depth 1): wait
    // for it, or this thread's first call would go uncounted.
    while (r.state.load(std::memory_order_acquire) == kInitialising)
      sched_yield();
    return r.state.load(std::memory_order_acquire) == kOn;
  }
  CallScope scope;  // anything initialisation calls passes through
  const bool ok = initialise(r);
  int now = kInitialising;  // fail() may have set kOff already
  r.state.compare_exchange_strong(now, ok ? kOn : kOff);
  return r.state.load() == kOn;
}

void record(const CaptureKey& key, double ns) {
  Runtime& r = rt();
  if (r.state.load(std::memory_order_relaxed) != kOn) return;
  r.table.record(key, ns);
  if (!r.writer_started.load(std::memory_order_relaxed)) start_writer();
}

void record_untimed(const CaptureKey& key, Untimed why) {
  Runtime& r = rt();
  if (r.state.load(std::memory_order_relaxed) != kOn) return;
  r.table.record_untimed(key, why);
  if (!r.writer_started.load(std::memory_order_relaxed)) start_writer();
}

std::uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

void say_once(const std::string& message) {
  if (rt().said.exchange(true)) return;
  const std::string line = "opbench-capture: " + message + "\n";
  // write(2), not stdio: the program may hold stderr's lock or have closed its FILE
  const ssize_t ignored = ::write(2, line.data(), line.size());
  (void)ignored;
}

void fail(const std::string& message) {
  Runtime& r = rt();
  const std::string line = message + "; capture off, every call passes through untouched";
  if (r.state.load() == kInitialising) {
    r.pending_message = line;
    r.message_pending.store(true);
  } else {
    say_once(line);
  }
  r.state.store(kOff);
}

void* resolve_symbol(const char* name) {
  Dl_info self{};
  dladdr(reinterpret_cast<void*>(&resolve_symbol), &self);
  auto ours = [&](void* p) {
    Dl_info info{};
    return dladdr(p, &info) != 0 && info.dli_fbase == self.dli_fbase;
  };
  if (void* p = dlsym(RTLD_NEXT, name); p != nullptr && !ours(p)) return p;
  // Not in the global scope: look in every loaded object (those opened with RTLD_LOCAL too). The
  // names are collected first; dlopen is not called inside dl_iterate_phdr's callback, which
  // holds the loader's lock.
  std::vector<std::string> objects;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0')
          static_cast<std::vector<std::string>*>(data)->push_back(info->dlpi_name);
        return 0;
      },
      &objects);
  for (const std::string& path : objects) {
    if (path == (self.dli_fname ? self.dli_fname : "")) continue;
    void* handle = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (handle == nullptr) continue;
    void* p = dlsym(handle, name);
    dlclose(handle);
    if (p != nullptr && !ours(p)) return p;
  }
  return nullptr;
}

void symbol_missing(const char* name) {
  const std::string line = std::string("opbench-capture: symbol lookup error: ") + name +
                           " is called but no loaded library defines it\n";
  const ssize_t ignored = ::write(2, line.data(), line.size());
  (void)ignored;
  _exit(127);
}

void at_exit_before_write(void (*fn)()) {
  for (auto& slot : rt().before_write) {
    void (*expected)() = nullptr;
    if (slot.load() == fn || slot.compare_exchange_strong(expected, fn)) return;
  }
}

bool write_tables(bool final_write) {
  Runtime& r = rt();
  if (r.state.load() != kOn) return false;
  CallScope scope;
  std::lock_guard<std::mutex> lock(r.write_mutex);
  const std::uint64_t generation = r.table.generation();
  // A process that intercepted nothing (a shell, mpirun itself) writes no files.
  if (generation == 0) return true;
  if (!final_write && generation == r.written_generation) return true;
  const std::vector<TableRow> rows = r.table.snapshot();
  const std::string written = iso_now();
  r.facts.forked_children = r.forks.load();
  const std::pair<std::string, std::string> files[] = {
      {r.base + ".csv", csv_text(r.facts, rows)},
      {r.base + ".jsonl", jsonl_text(r.facts, rows, written, final_write)},
      {r.base + ".prom", prom_text(r.facts, rows)}};
  for (const auto& [name, text] : files) {
    if (!write_atomically(r.dir, name, text)) {
      say_once("cannot write " + r.dir + "/" + name + ": " + std::strerror(errno) +
               "; the capture's tables are lost, the program goes on");
      return false;
    }
  }
  r.written_generation = generation;
  return true;
}

}  // namespace opbench::capture

// The job's own call: its warm-up is over, and the figures should cover what follows only (the
// first steps' calls are slow: fresh pages, lazy initialisation, autotuning). A program reaches
// it with dlsym, or ctypes.CDLL(None) in Python; without the capture the symbol is absent and the
// job goes on. GPU calls still in flight may land after it.
OPBENCH_CAPTURE_EXPORT void opbench_capture_reset() {
  opbench::capture::Runtime& r = opbench::capture::rt();
  if (r.state.load() == opbench::capture::kOn) r.table.clear();
}

namespace opbench::capture {
namespace {

// The status the process gave _exit, for the alarm that cuts its write short.
volatile sig_atomic_t exit_status = 0;

// The alarm's handler: the prepared line, then the end _exit was asked for, with its status
// (not by SIGALRM). Both calls are async-signal-safe; exit_group is the system call under _exit,
// made directly so that it does not come back through the hook below.
void end_with_exit_status(int) {
  say_cut_short();
  ::syscall(SYS_exit_group, static_cast<int>(exit_status));
}

// A process that leaves through _exit (a forked child: Python's multiprocessing ends every
// child with os._exit, so no exit handler runs) writes its tables on the way, once. Not in a
// vfork child (its pid is not the capture's, it shares its parent's memory) and not after the
// exit handlers wrote them. The write takes locks and memory, and _exit may be called from a
// signal handler that interrupted a holder of either, or the tables' folder may stop answering:
// an alarm bounds the wait (no thread can be started from a signal handler, as the exit
// handler's bound does), so that at worst the tables are lost (as they were without this hook)
// and the process still ends, with the status it gave _exit. Everything before the write is
// async-signal-safe.
void write_before_exit(int status) {
  Runtime& r = rt();
  if (r.state.load() != kOn || r.final_written.load() || static_cast<long>(getpid()) != r.facts.pid)
    return;
  exit_status = status;
  struct sigaction action {};
  action.sa_handler = end_with_exit_status;
  sigemptyset(&action.sa_mask);
  sigaction(SIGALRM, &action, nullptr);
  // _exit called from a SIGALRM handler (or by a thread that blocks it) would never see the alarm
  sigset_t alarm_only;
  sigemptyset(&alarm_only);
  sigaddset(&alarm_only, SIGALRM);
  pthread_sigmask(SIG_UNBLOCK, &alarm_only, nullptr);
  alarm(kExitWriteS);
  write_final();
}

[[noreturn]] void real_exit(std::atomic<void*>& slot, const char* name, int status) {
  real_function<void (*)(int)>(slot, name)(status);
  __builtin_unreachable();
}

}  // namespace
}  // namespace opbench::capture

OPBENCH_CAPTURE_EXPORT void _exit(int status) {
  static std::atomic<void*> slot{nullptr};
  opbench::capture::write_before_exit(status);
  opbench::capture::real_exit(slot, "_exit", status);
}

OPBENCH_CAPTURE_EXPORT void _Exit(int status) {
  static std::atomic<void*> slot{nullptr};
  opbench::capture::write_before_exit(status);
  opbench::capture::real_exit(slot, "_Exit", status);
}
