#include "collectives/liveness.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <mpi.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>

#include "collectives/mpi_session.hpp"
#include "common/text.hpp"

namespace opbench {
namespace {

// Rank 0 asks (P), a rank answers (A) or says goodbye (B); a rank asks rank 0 for a probe (Q,
// then the wait in milliseconds) and rank 0 reports (R, then the count and the silent ranks); a
// rank ending the job says why (E, then the length and the text).
constexpr char kAsk = 'P', kAnswer = 'A', kGoodbye = 'B', kProbe = 'Q', kReport = 'R',
               kEnding = 'E';
constexpr double kRelaySlackS = 2;  // a rank waits this much longer than rank 0's own probe

// Rank 0's IPv4 addresses, loopback last: a rank on another node tries them in turn.
std::vector<std::string> own_addresses() {
  std::vector<std::string> out, loopback;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return {"127.0.0.1"};
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || !(a->ifa_flags & IFF_UP)) continue;
    char text[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof(text));
    ((a->ifa_flags & IFF_LOOPBACK) ? loopback : out).emplace_back(text);
  }
  freeifaddrs(list);
  out.insert(out.end(), loopback.begin(), loopback.end());
  return out;
}

// A connection to address:port within `timeout_s`, or -1.
int connect_within(const std::string& address, int port, double timeout_s) {
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<std::uint16_t>(port));
  if (inet_pton(AF_INET, address.c_str(), &to.sin_addr) != 1) return -1;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  int rc = connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to));
  if (rc != 0 && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int error = 0;
    socklen_t len = sizeof(error);
    if (poll(&p, 1, static_cast<int>(timeout_s * 1000)) == 1 &&
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) == 0 && error == 0)
      rc = 0;
  }
  if (rc != 0) {
    close(fd);
    return -1;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

bool send_bytes(int fd, const void* data, std::size_t n) {
  // A peer gone must not raise SIGPIPE.
  return fd >= 0 && send(fd, data, n, MSG_NOSIGNAL) == static_cast<ssize_t>(n);
}

bool send_byte(int fd, char c) {
  return send_bytes(fd, &c, 1);
}

}  // namespace

Liveness::Liveness(const MpiSession& session, std::function<void(const std::string&)> on_lost)
    : session_(session), on_lost_(std::move(on_lost)) {
  const int world = session.world_size(), rank = session.world_rank();
  if (world == 1) return;
  // Rank 0 listens and tells every rank where: "port;address,address,...".
  std::string where;
  if (rank == 0) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in any{};
    any.sin_family = AF_INET;
    any.sin_addr.s_addr = htonl(INADDR_ANY);
    socklen_t len = sizeof(any);
    if (listen_fd_ >= 0 && bind(listen_fd_, reinterpret_cast<sockaddr*>(&any), sizeof(any)) == 0 &&
        listen(listen_fd_, world) == 0 &&
        getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&any), &len) == 0)
      where = fmt::format("{};{}", ntohs(any.sin_port), join(own_addresses(), ","));
  }
  int size = static_cast<int>(where.size());
  MPI_Bcast(&size, 1, MPI_INT, 0, MPI_COMM_WORLD);
  where.resize(static_cast<std::size_t>(size));
  MPI_Bcast(where.data(), size, MPI_CHAR, 0, MPI_COMM_WORLD);
  // Every other rank connects (the handshake completes in rank 0's backlog) and says who it is.
  int connected = 0;
  if (rank != 0 && !where.empty()) {
    const auto semicolon = where.find(';');
    const int port = std::stoi(where.substr(0, semicolon));
    for (const auto& address : split(where.substr(semicolon + 1), ',')) {
      const int fd = connect_within(address, port, 1.0);
      if (fd < 0) continue;
      const std::int32_t me = rank;
      if (send(fd, &me, sizeof(me), MSG_NOSIGNAL) == sizeof(me)) {
        peer_fd_ = {fd};
        connected = 1;
      } else {
        close(fd);
      }
      break;
    }
  }
  int total = 0;
  MPI_Reduce(&connected, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    peer_fd_.assign(static_cast<std::size_t>(world), -1);
    answered_.assign(static_cast<std::size_t>(world), 0);
    said_goodbye_.assign(static_cast<std::size_t>(world), 0);
    for (int i = 0; i < total; ++i) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      // A connection that does not say which rank it is within 5 s (a stray one from elsewhere:
      // the port listens on every address) is dropped rather than waited for.
      timeval limit{5, 0}, none{0, 0};
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
      std::int32_t who = -1;
      if (recv(fd, &who, sizeof(who), MSG_WAITALL) == sizeof(who) && who > 0 && who < world &&
          peer_fd_[static_cast<std::size_t>(who)] < 0) {
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof(none));
        peer_fd_[static_cast<std::size_t>(who)] = fd;
      } else {
        close(fd);
      }
    }
    if (listen_fd_ >= 0) close(listen_fd_);
    listen_fd_ = -1;
  }
  if (pipe2(wake_pipe_, O_CLOEXEC) != 0) return;
  thread_ = std::thread([this, rank] { rank == 0 ? serve_rank0() : serve_peer(); });
}

Liveness::~Liveness() {
  stopping_ = true;
  if (session_.world_rank() != 0 && !peer_fd_.empty()) {
    std::lock_guard send_lock(send_mutex_);
    send_byte(peer_fd_[0], kGoodbye);
  }
  if (wake_pipe_[1] >= 0 && write(wake_pipe_[1], "x", 1) != 1) {
    // the thread then waits for its peer to close; nothing else to do
  }
  if (thread_.joinable()) thread_.join();
  for (auto& relay : relays_)
    if (relay.joinable()) relay.join();
  for (int fd : peer_fd_)
    if (fd >= 0) close(fd);
  for (int fd : wake_pipe_)
    if (fd >= 0) close(fd);
}

std::size_t Liveness::watched() const {
  std::size_t n = 0;
  if (session_.world_rank() == 0)
    for (int fd : peer_fd_)
      n += fd >= 0;
  return n;
}

std::optional<std::vector<int>> Liveness::silent_ranks(double wait_s) {
  if (session_.world_rank() == 0) {
    if (watched() == 0) return std::nullopt;
    return probe_from_rank0(wait_s);
  }
  if (peer_fd_.empty()) return std::nullopt;
  std::unique_lock lock(mutex_);
  report_.reset();
  char request[1 + sizeof(std::int32_t)] = {kProbe};
  const auto wait_ms = static_cast<std::int32_t>(wait_s * 1000);
  std::memcpy(request + 1, &wait_ms, sizeof(wait_ms));
  bool sent = false;
  {
    std::lock_guard send_lock(send_mutex_);
    sent = send_bytes(peer_fd_[0], request, sizeof(request));
  }
  if (sent)
    answers_.wait_for(lock, std::chrono::duration<double>(wait_s + kRelaySlackS),
                      [&] { return report_.has_value(); });
  if (report_) return *report_;
  rank0_silent_ = true;
  return std::vector<int>{0};  // rank 0 did not reply: it is the one stopped or cut off
}

std::vector<int> Liveness::probe_from_rank0(double wait_s) {
  std::lock_guard one_probe(probe_mutex_);
  std::vector<int> asked;
  {
    std::lock_guard lock(mutex_);
    for (std::size_t r = 1; r < peer_fd_.size(); ++r) {
      answered_[r] = 0;
      if (peer_fd_[r] >= 0 && send_byte(peer_fd_[r], kAsk)) asked.push_back(static_cast<int>(r));
    }
  }
  std::unique_lock lock(mutex_);
  answers_.wait_for(lock, std::chrono::duration<double>(wait_s), [&] {
    for (int r : asked)
      if (!answered_[static_cast<std::size_t>(r)]) return false;
    return true;
  });
  std::vector<int> silent;
  for (int r : asked)
    if (!answered_[static_cast<std::size_t>(r)]) silent.push_back(r);
  return silent;
}

void Liveness::serve_rank0() {
  while (!stopping_) {
    std::vector<pollfd> fds{{wake_pipe_[0], POLLIN, 0}};
    std::vector<int> rank_of{-1};
    {
      std::lock_guard lock(mutex_);
      for (std::size_t r = 1; r < peer_fd_.size(); ++r)
        if (peer_fd_[r] >= 0) {
          fds.push_back({peer_fd_[r], POLLIN, 0});
          rank_of.push_back(static_cast<int>(r));
        }
    }
    if (poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
    if (fds[0].revents) return;  // the destructor: the run is over
    for (std::size_t i = 1; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      const auto r = static_cast<std::size_t>(rank_of[i]);
      char c = 0;
      const ssize_t got = recv(fds[i].fd, &c, 1, 0);
      std::lock_guard lock(mutex_);
      if (got == 1 && c == kAnswer) {
        answered_[r] = 1;
        answers_.notify_all();
      } else if (got == 1 && c == kEnding) {
        std::int32_t n = 0;
        std::string reason;
        if (recv(fds[i].fd, &n, sizeof(n), MSG_WAITALL) == sizeof(n) && n > 0 && n < 65536) {
          reason.resize(static_cast<std::size_t>(n));
          if (recv(fds[i].fd, reason.data(), reason.size(), MSG_WAITALL) != n) reason.clear();
        }
        said_goodbye_[r] = 1;  // it ends on purpose: not a lost rank
        if (!reason.empty() && !stopping_) on_lost_(reason);
      } else if (got == 1 && c == kProbe) {
        // Another rank's timeout fired first: probe on a thread of its own (this one must go on
        // reading the answers) and send it the result.
        std::int32_t wait_ms = 0;
        if (recv(fds[i].fd, &wait_ms, sizeof(wait_ms), MSG_WAITALL) == sizeof(wait_ms) &&
            !stopping_)
          relays_.emplace_back([this, r, wait_ms] {
            relay_probe(static_cast<int>(r), std::clamp(wait_ms / 1000.0, 0.1, 60.0));
          });
      } else if (got == 1 && c == kGoodbye) {
        said_goodbye_[r] = 1;
      } else if (got <= 0) {
        close(peer_fd_[r]);
        peer_fd_[r] = -1;
        if (!said_goodbye_[r] && !stopping_)
          on_lost_(
              fmt::format("{} ended without finishing (killed, crashed, or its node went "
                          "down)",
                          session_.where(static_cast<int>(r))));
      }
    }
  }
}

void Liveness::relay_probe(int asker, double wait_s) {
  const std::vector<int> silent = probe_from_rank0(wait_s);
  std::vector<std::int32_t> message{static_cast<std::int32_t>(silent.size())};
  message.insert(message.end(), silent.begin(), silent.end());
  std::string bytes(1, kReport);
  bytes.append(reinterpret_cast<const char*>(message.data()),
               message.size() * sizeof(std::int32_t));
  std::lock_guard lock(mutex_);
  send_bytes(peer_fd_[static_cast<std::size_t>(asker)], bytes.data(), bytes.size());
}

void Liveness::report_end(const std::string& reason) {
  if (session_.world_rank() == 0 || peer_fd_.empty()) return;
  {
    std::lock_guard lock(mutex_);
    if (rank0_silent_) return;  // it would neither read it nor end
  }
  const auto n = static_cast<std::int32_t>(std::min<std::size_t>(reason.size(), 65535));
  std::string bytes(1, kEnding);
  bytes.append(reinterpret_cast<const char*>(&n), sizeof(n));
  bytes.append(reason, 0, static_cast<std::size_t>(n));
  {
    std::lock_guard send_lock(send_mutex_);
    if (!send_bytes(peer_fd_[0], bytes.data(), bytes.size())) return;
  }
  // Rank 0 ends the job on it; our own exit could otherwise take rank 0 down (mpirun) first.
  std::unique_lock lock(mutex_);
  answers_.wait_for(lock, std::chrono::seconds(2), [&] { return rank0_gone_; });
}

void Liveness::serve_peer() {
  if (peer_fd_.empty()) return;
  while (!stopping_) {
    pollfd fds[2] = {{wake_pipe_[0], POLLIN, 0}, {peer_fd_[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0 && errno != EINTR) return;
    if (fds[0].revents) return;
    if (!fds[1].revents) continue;
    char c = 0;
    if (recv(peer_fd_[0], &c, 1, 0) != 1) {  // rank 0 has gone: mpirun ends the job
      std::lock_guard lock(mutex_);
      rank0_gone_ = true;
      answers_.notify_all();
      return;
    }
    if (c == kAsk) {
      std::lock_guard send_lock(send_mutex_);
      send_byte(peer_fd_[0], kAnswer);
    } else if (c == kReport) {
      std::int32_t n = 0;
      if (recv(peer_fd_[0], &n, sizeof(n), MSG_WAITALL) != sizeof(n) || n < 0) return;
      std::vector<std::int32_t> ranks(static_cast<std::size_t>(n));
      if (n > 0 && recv(peer_fd_[0], ranks.data(), ranks.size() * sizeof(std::int32_t),
                        MSG_WAITALL) != static_cast<ssize_t>(ranks.size() * sizeof(std::int32_t)))
        return;
      std::lock_guard lock(mutex_);
      report_ = std::vector<int>(ranks.begin(), ranks.end());
      answers_.notify_all();
    }
  }
}

}  // namespace opbench
