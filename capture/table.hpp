#pragma once
// The per-shape table of one process: every intercepted call is folded into the entry of its key
// (API, dtype and shape), which keeps calls, total, min, max and a LogHistogram of the times.
// Callers on many threads record at once, so the table is split into shards, each with its own
// mutex: two threads contend only when their keys hash to the same shard.
#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "capture/histogram.hpp"
#include "common/coll_formulas.hpp"
#include "common/job_time.hpp"

namespace opbench::capture {

// What identifies a shape. The text fields point at string literals (API and dtype names are a
// fixed set), so building a key on every call allocates nothing; they compare by content.
struct CaptureKey {
  const char* api = "";  // the intercepted symbol: "sgemm_", "MPI_Allreduce", "cublasLtMatmul"
  // "gemm", "collective", "p2p"; a converted trace (trace/) adds "attention" and, for what it
  // does not replay, "memory_bound", "other" and "idle"
  const char* kind = "";
  const char* op = "";  // gemm: "gemm", "gemm_batched", "gemm_grouped"; collectives: "all_reduce"
  const char* dtype = "";  // opbench's dtype names: "fp32", "bf16", ...
  // GEMMs, in bench_gemm's row-major convention (common/blas_layout.hpp); 0 for collectives.
  std::int64_t m = 0, n = 0, k = 0, batch = 0;
  char transa = 0, transb = 0;  // 'N' or 'T'; 0 for collectives
  // Collectives: element count of the call, bytes as nccl-tests counts them, communicator size.
  std::int64_t count = 0, bytes = 0;
  int comm_size = 0;
  // How far apart the communicator's ranks are in the job's world: 1 consecutive, 8 for a group
  // of ranks 0, 8, 16, ... (bench_ccl replays the groups so, collectives/rank_groups.hpp); 0 where
  // the source cannot tell (an NCCL communicator, ranks not evenly spaced, an older trace).
  int comm_stride = 0;
  // NCCL: which communicator (capture/nccl_comms.hpp), the same number in every member's file,
  // so that the files read together give its members and so its stride; 0 where not known
  std::uint64_t comm_id = 0;
  const char* redop = "";  // "sum", ... for reductions; "" otherwise
  // Collectives: "in_place" (the send buffer is the result's: MPI_IN_PLACE, NCCL's sendbuff at
  // the rank's offset in recvbuff) or "out_of_place"; "" where a call has no such choice.
  const char* placement = "";
  // Attention (from a trace): bench_attention's shape; batch above is the batch size.
  std::int64_t heads_q = 0, heads_kv = 0, seq_q = 0, seq_kv = 0, head_dim_qk = 0, head_dim_v = 0;
  bool causal = false;

  bool operator==(const CaptureKey& o) const;
};

// A collective's key as MPI's and NCCL's hooks make it: its element count, the communicator's
// size and the bytes nccl-tests counts for it (common/coll_formulas.hpp).
CaptureKey collective_key(const char* api, const char* kind, const char* op_name, CollOp op,
                          const char* dtype, std::size_t type_bytes, std::int64_t count,
                          int comm_size, const char* redop);

struct CaptureKeyHash {
  std::size_t operator()(const CaptureKey& k) const;
};

// Why a call has no time. Each is counted apart, so that the note can say which, and a job whose
// GPU work is replayed from CUDA graphs is not shown a table that looks complete.
enum class Untimed : std::uint8_t {
  completion_unseen,  // nonblocking MPI: no Wait/Test reported its completion
  no_gpu_events,      // no CUDA driver, context or events to time it with
  graph_capture,      // made while its stream was captured into a CUDA graph: it runs at each
                      // replay of the graph, and no hook sees a replay
  capture_unknown,    // cuStreamIsCapturing failed: whether it runs now is unknown
  enqueued_later,     // an NCCL nonblocking communicator returned ncclInProgress: NCCL's own
                      // thread enqueues the kernel later, after the events were recorded
  in_flight_at_exit,  // its GPU work had not finished when the process ended (bounded wait)
  // (converted traces, trace/) an execution trace records shapes and counts, not times
  not_in_trace,
  // (converted traces) a GPU trace holds no kernel of this operator (it ran on the CPU, or its
  // kernels fell outside the trace)
  no_kernel,
  // a GPU call past its shape's first calls that the sampling left untimed (gpu_sampling.hpp)
  not_sampled,
  // an NCCL group over several communicators or streams (one process driving several GPUs):
  // a row for each communicator's part, which the group's one pair of events cannot time apart
  several_communicators,
  // the driver refused its timing events (a record, or a query with an error other than "not
  // ready"): a kernel fault that broke the context, or a cudaDeviceReset under them
  gpu_error,
  kinds
};
inline constexpr std::size_t kUntimedKinds = static_cast<std::size_t>(Untimed::kinds);
using UntimedCounts = std::array<std::uint64_t, kUntimedKinds>;

struct KeyStats {
  std::uint64_t calls = 0;        // every call of the key
  std::uint64_t timed_calls = 0;  // the calls with a time
  UntimedCounts untimed{};        // the others, by reason
  double total_ns = 0, min_ns = 0, max_ns = 0;
  LogHistogram histogram;

  void add_time(double ns);
};

// A key's figures as the output files show them (µs).
struct TableRow {
  CaptureKey key;
  std::uint64_t calls = 0, timed_calls = 0;
  UntimedCounts untimed{};
  double total_us = 0, avg_us = 0, min_us = 0, p50_us = 0, p99_us = 0, max_us = 0;
};

// A shape's time in the job (common/job_time.hpp).
inline double job_time_us(const TableRow& r) {
  return opbench::job_time_us(r.total_us, r.timed_calls,
                              r.untimed[static_cast<std::size_t>(Untimed::not_sampled)]);
}

class ShapeTable {
 public:
  static constexpr std::size_t kShards = 32;

  // One call of `key` that took `ns` nanoseconds.
  void record(const CaptureKey& key, double ns);
  // One call of `key` without a time, and why.
  void record_untimed(const CaptureKey& key, Untimed why);
  // Every key's row, largest time in the job (job_time_us) first.
  std::vector<TableRow> snapshot() const;
  // Changes since construction; the periodic writer skips a write when nothing changed.
  std::uint64_t generation() const;

  // Empties the table: what the job calls from now on starts its figures afresh.
  void clear();
  // fork: the parent holds every shard across fork(); the child empties the table.
  void lock_all();
  void unlock_all();
  void clear_after_fork();

 private:
  struct Shard {
    mutable std::mutex mutex;
    std::unordered_map<CaptureKey, KeyStats, CaptureKeyHash> entries;
    std::uint64_t changes = 0;
  };
  Shard shards_[kShards];
};

}  // namespace opbench::capture
