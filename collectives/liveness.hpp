#pragma once
// Who is still there, known without MPI: rank 0 keeps a TCP connection to every other rank,
// each side served by a thread of its own, so it works while the main threads are stuck inside
// a collective (MPI runs single-threaded; these threads never call it).
//
// - A rank whose connection closes without saying goodbye has ended (SIGKILL, a crash, its node
//   gone): rank 0 names it with its host at once and ends the job, instead of leaving the line
//   to mpirun ("exited on signal 9") or to a timeout.
// - When a timeout fires, rank 0 asks every rank to answer: a stopped process (SIGSTOP, a debugger)
//   or a node cut off does not, so the message names the culprits and their hosts rather than
//   the rank that noticed. Any other rank whose timeout fires first asks rank 0 to run that probe
//   and send it the answer; when rank 0 itself does not reply, rank 0 is the one named.
// A rank that cannot connect (a firewall between nodes) is just not watched; nothing fails.
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace opbench {

class MpiSession;

class Liveness {
 public:
  // Collective: every rank calls it, after MPI_Init. `on_lost` runs on rank 0's monitor thread
  // when a rank ends without goodbye, with the line to print; it must end the process.
  Liveness(const MpiSession& session, std::function<void(const std::string&)> on_lost);
  ~Liveness();  // says goodbye: a normal end is not a lost rank
  Liveness(const Liveness&) = delete;
  Liveness& operator=(const Liveness&) = delete;

  // The ranks that do not answer rank 0 within `wait_s`. Rank 0 asks every watched rank; another
  // rank asks rank 0 to, and gets {0} when rank 0 itself does not reply within `wait_s` + 2 s.
  // nullopt when this rank cannot ask (no connection to rank 0, or a world of one).
  std::optional<std::vector<int>> silent_ranks(double wait_s);
  // Ranks rank 0 watches (every other rank that connected).
  std::size_t watched() const;
  // Another rank, about to end the job (its timeout fired first): tells rank 0 why, so that rank 0
  // says it too and writes the running case's row with it, then waits up to 2 s for rank 0 to end.
  void report_end(const std::string& reason);

 private:
  void serve_rank0();  // rank 0: reads answers, goodbyes, probe requests and closed connections
  void serve_peer();   // other ranks: answers rank 0's questions, reads its probe reports
  std::vector<int> probe_from_rank0(double wait_s);  // rank 0: the probe itself
  void relay_probe(int asker, double wait_s);        // rank 0: a probe another rank asked for

  const MpiSession& session_;
  std::function<void(const std::string&)> on_lost_;
  int listen_fd_ = -1;
  std::vector<int> peer_fd_;  // rank 0: by rank (-1: not watched); others: [0] to rank 0
  std::vector<int> answered_;
  std::vector<char> said_goodbye_;
  int wake_pipe_[2] = {-1, -1};  // ends the serving thread
  std::mutex mutex_;
  std::condition_variable answers_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  std::mutex probe_mutex_;           // rank 0: one probe at a time (its watchdog, a relay)
  std::vector<std::thread> relays_;  // rank 0: probes asked for by other ranks
  std::mutex send_mutex_;            // other ranks: the serving and watchdog threads both send
  std::optional<std::vector<int>> report_;  // other ranks: rank 0's last probe report
  bool rank0_gone_ = false;                 // other ranks: rank 0 closed the connection
  bool rank0_silent_ = false;               // other ranks: rank 0 did not reply to a probe
};

}  // namespace opbench
