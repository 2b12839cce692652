#include "capture/table.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <new>

namespace opbench::capture {

namespace {
bool same(const char* a, const char* b) {
  return a == b || std::strcmp(a, b) == 0;
}

std::size_t mix(std::size_t h, std::size_t v) {
  return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
}
std::size_t text_hash(const char* s) {
  std::size_t h = 1469598103934665603ULL;  // FNV-1a: the names are short
  for (; *s; ++s)
    h = (h ^ static_cast<unsigned char>(*s)) * 1099511628211ULL;
  return h;
}
// The nearest-rank quantile: the exact min or max when the rank is the first or the last (a
// p99 of fewer than 100 calls is the max), else the histogram's estimate within its bound.
template <class Clamp>
double quantile_us(const KeyStats& stats, double q, Clamp&& clamp) {
  const auto n = static_cast<double>(stats.timed_calls);
  const double rank = std::max(1.0, std::ceil(q * n));
  if (rank >= n) return stats.max_ns / 1e3;
  if (rank <= 1) return stats.min_ns / 1e3;
  return clamp(stats.histogram.quantile(q));
}
}  // namespace

CaptureKey collective_key(const char* api, const char* kind, const char* op_name, CollOp op,
                          const char* dtype, std::size_t type_bytes, std::int64_t count,
                          int comm_size, const char* redop) {
  const auto bytes = static_cast<std::int64_t>(
      algbw_bytes(op, exact_counts(op, count, comm_size), type_bytes, comm_size));
  return {.api = api,
          .kind = kind,
          .op = op_name,
          .dtype = dtype,
          .count = count,
          .bytes = bytes,
          .comm_size = comm_size,
          .redop = redop};
}

bool CaptureKey::operator==(const CaptureKey& o) const {
  return m == o.m && n == o.n && k == o.k && batch == o.batch && transa == o.transa &&
         transb == o.transb && count == o.count && bytes == o.bytes && comm_size == o.comm_size &&
         comm_stride == o.comm_stride && comm_id == o.comm_id && heads_q == o.heads_q &&
         heads_kv == o.heads_kv && seq_q == o.seq_q && seq_kv == o.seq_kv &&
         head_dim_qk == o.head_dim_qk && head_dim_v == o.head_dim_v && causal == o.causal &&
         same(api, o.api) && same(kind, o.kind) && same(op, o.op) && same(dtype, o.dtype) &&
         same(redop, o.redop) && same(placement, o.placement);
}

std::size_t CaptureKeyHash::operator()(const CaptureKey& k) const {
  std::size_t h = text_hash(k.api);
  for (std::int64_t v : {k.m, k.n, k.k, k.batch, k.count, k.bytes, k.heads_q, k.heads_kv, k.seq_q,
                         k.seq_kv, k.head_dim_qk, k.head_dim_v})
    h = mix(h, std::hash<std::int64_t>{}(v));
  h = mix(h, static_cast<std::size_t>(k.comm_size));
  h = mix(h, static_cast<std::size_t>(k.comm_stride));
  h = mix(h, std::hash<std::uint64_t>{}(k.comm_id));
  h = mix(h, (static_cast<std::size_t>(k.transa) << 8) | static_cast<unsigned char>(k.transb));
  h = mix(h, text_hash(k.dtype));
  h = mix(h, text_hash(k.op));
  h = mix(h, static_cast<std::size_t>(k.causal));
  h = mix(h, text_hash(k.redop));
  h = mix(h, text_hash(k.placement));
  return h;
}

void KeyStats::add_time(double ns) {
  if (timed_calls == 0 || ns < min_ns) min_ns = ns;
  if (timed_calls == 0 || ns > max_ns) max_ns = ns;
  ++timed_calls;
  total_ns += ns;
  histogram.add(ns);
}

void ShapeTable::record(const CaptureKey& key, double ns) {
  Shard& shard = shards_[CaptureKeyHash{}(key) % kShards];
  std::lock_guard<std::mutex> lock(shard.mutex);
  KeyStats& stats = shard.entries[key];
  ++stats.calls;
  stats.add_time(ns);
  ++shard.changes;
}

void ShapeTable::record_untimed(const CaptureKey& key, Untimed why) {
  Shard& shard = shards_[CaptureKeyHash{}(key) % kShards];
  std::lock_guard<std::mutex> lock(shard.mutex);
  KeyStats& stats = shard.entries[key];
  ++stats.calls;
  ++stats.untimed[static_cast<std::size_t>(why)];
  ++shard.changes;
}

std::vector<TableRow> ShapeTable::snapshot() const {
  std::vector<TableRow> rows;
  for (const Shard& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mutex);
    for (const auto& [key, stats] : shard.entries) {
      TableRow row;
      row.key = key;
      row.calls = stats.calls;
      row.timed_calls = stats.timed_calls;
      row.untimed = stats.untimed;
      if (stats.timed_calls > 0) {
        row.total_us = stats.total_ns / 1e3;
        row.avg_us = row.total_us / static_cast<double>(stats.timed_calls);
        row.min_us = stats.min_ns / 1e3;
        row.max_us = stats.max_ns / 1e3;
        // the exact extremes bound the bucket estimates (a bucket's middle can lie outside them)
        // (bounds copied: clang 14 cannot capture a structured binding)
        auto clamp = [lo = stats.min_ns, hi = stats.max_ns](double ns) {
          return std::clamp(ns, lo, hi) / 1e3;
        };
        row.p50_us = quantile_us(stats, 0.50, clamp);
        row.p99_us = quantile_us(stats, 0.99, clamp);
      }
      rows.push_back(row);
    }
  }
  // Largest time in the job first: with the GPU sampling (gpu_sampling.hpp) total_us sums a
  // shape's timed calls only, which would rank a shape called a few times above one called a
  // thousand times and timed one call in eight; the calls the sampling skipped count at the
  // timed ones' mean (job_time_us).
  std::sort(rows.begin(), rows.end(), [](const TableRow& a, const TableRow& b) {
    if (job_time_us(a) != job_time_us(b)) return job_time_us(a) > job_time_us(b);
    return a.calls > b.calls;
  });
  return rows;
}

std::uint64_t ShapeTable::generation() const {
  std::uint64_t sum = 0;
  for (const Shard& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mutex);
    sum += shard.changes;
  }
  return sum;
}

void ShapeTable::clear() {
  for (Shard& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mutex);
    shard.entries.clear();
    ++shard.changes;  // the periodic writer writes the emptied table too
  }
}

void ShapeTable::lock_all() {
  for (Shard& shard : shards_)
    shard.mutex.lock();
}

void ShapeTable::unlock_all() {
  for (Shard& shard : shards_)
    shard.mutex.unlock();
}

void ShapeTable::clear_after_fork() {
  // Only the forking thread exists in the child, and it held every mutex across fork(): the
  // mutexes are re-made rather than unlocked, which is what POSIX allows a child to do.
  for (Shard& shard : shards_) {
    new (&shard.mutex) std::mutex();
    shard.entries.clear();
    shard.changes = 0;
  }
}

}  // namespace opbench::capture
