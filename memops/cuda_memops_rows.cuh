#pragma once
// A row held in registers by the block or blocks that own it (memops/cuda_memops.cuh,
// register_row_plan), for the row operators (softmax, cross-entropy, and the norms' forward:
// RMSNorm, the residual add + RMSNorm, LayerNorm): the part of a row a block holds (RowPart: its
// 16-byte vectors, and the row's unaligned head and tail elements; the weight rows of a norm read
// at the held columns), the reductions across a block and, on sm_90 and later, across a thread
// block cluster through distributed shared memory (RowReducer), and the kernels every such
// operator runs through: the whole row in one block or one cluster (fused_rows_kernel), or, for a
// row too long for that, in chunks of one block each, whose statistics a second kernel combines
// (chunk_stats_kernel, chunk_finish_kernel). An operator is a struct Op
// (memops/cuda_memops_softmax.cu, memops/cuda_memops_norms.cu) with
//   kHeld                      the row operands' worth of registers it holds at once (1 or 2)
//   registers(items, cluster)  the registers a thread of its fused_rows_kernel may use (see
//                              there), at most 64 (blocks of kRowMaxThreads)
//   kSplits                    whether it has the split; without, a row too long for a block or
//                              a cluster is left to the operator's own two-pass kernel
//   kStreams                   whether a row that takes a cluster is streamed through shared
//                              memory (streamed_rows_kernel) rather than held in registers
//   lead()                     the row operand whose address splits the rows (all agree)
//   fused(row, part, reducer)  the row, its statistics reduced over the block or cluster
// and, with kSplits:
//   Stats, empty(), merge()    a part's statistics and their combination
//   chunk_stats(row, part, reducer) -> Stats, chunk_finish(row, part, total)
// and, with kStreams:
//   streamed(row, part, slots, reducer)  as fused, from the lead operand's part in the thread's
//                                        shared-memory slots (RowPart::copy_async put it there)
// Included by the files of those operators alone.
#include <cooperative_groups.h>
#include <cuda_pipeline.h>

#include <string>
#include <type_traits>

#include "memops/cuda_memops_launch.cuh"
#include "memops/fast_math.hpp"

namespace opbench::cuda_memops {
namespace {

struct MaxFloat {
  __device__ float operator()(float a, float b) const { return ::fmaxf(a, b); }
};

// The part of row `row` a block holds: vectors [first, end) of the row's split, thread t the
// vectors first + t + i blockDim.x for i < ITEMS (a warp's loads of one i are contiguous), and,
// in the row's first block, thread e < head + tail the head or tail element e.
template <int V, int ITEMS>
struct RowPart {
  static constexpr int kV = V, kItems = ITEMS;
  std::int64_t base = 0;  // the row's first element
  RowSplit split;
  BlockVectors mine;
  bool edges = false;

  // Block `block` of the row's blocks, each `per_block` vectors.
  template <class S>
  __device__ static RowPart of(const S* lead, std::int64_t row, int cols, std::int64_t block,
                               std::int64_t per_block) {
    RowPart p;
    p.base = row * cols;
    p.split = row_split(reinterpret_cast<std::uintptr_t>(lead + p.base), cols,
                        static_cast<int>(sizeof(S)));
    p.mine = block_vectors(p.split, block, per_block);
    p.edges = block == 0;
    return p;
  }

  __device__ int vector(int i) const {
    return item_vector(mine.first, static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x), i);
  }
  __device__ bool has(int i) const { return vector(i) < mine.end; }
  // The column of vector i's first element (cols < 2^31: ints).
  __device__ int col(int i) const { return split.head + vector(i) * V; }
  __device__ bool has_edge() const {
    return edges && static_cast<int>(threadIdx.x) < split.head + split.tail;
  }
  __device__ int edge_col() const { return edge_column(split, V, static_cast<int>(threadIdx.x)); }

  // The thread's elements of p's row; those it does not hold are `fill` (a value that changes
  // no reduction: -inf for a max and e^x, 0 for a sum).
  template <class S>
  __device__ void load(const S* p, float (&a)[ITEMS][V], float& edge, float fill) const {
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      if (has(i)) {
        cuda_memops::load<V>(p, base + col(i), a[i]);
      } else {
#pragma unroll
        for (int j = 0; j < V; ++j)
          a[i][j] = fill;
      }
    }
    load_edge(p, edge, fill);
  }

  // ---- the part streamed through shared memory (streamed_rows_kernel) ----
  // A thread's slots: `slots` is its first, item i is slots[i * blockDim.x] (a warp's 16-byte
  // slots of one item are consecutive: conflict-free).

  // Starts the copies of the thread's vectors of p's row into its slots (cp.async through
  // CUDA's pipeline primitives: CUDA C++ Programming Guide, "Asynchronous Data Copies",
  // "Pipeline Primitives Interface"); the caller commits them and waits.
  template <class S>
  __device__ void copy_async(const S* p, uint4* slots) const {
    const auto* bits = reinterpret_cast<const typename Codec<S>::Bits*>(p);
#pragma unroll
    for (int i = 0; i < ITEMS; ++i)
      if (has(i))
        __pipeline_memcpy_async(slots + i * static_cast<int>(blockDim.x), bits + base + col(i),
                                sizeof(uint4));
  }

  // The thread's head or tail element of p's row, or `fill` when it has none.
  template <class S>
  __device__ void load_edge(const S* p, float& edge, float fill) const {
    edge = fill;
    if (has_edge()) {
      float e[1];
      cuda_memops::load<1>(p, base + edge_col(), e);
      edge = e[0];
    }
  }

  // Vector i of the thread's slots (vectors of S), as floats.
  template <class S>
  __device__ void slot(const uint4* slots, int i, float (&a)[V]) const {
    decode<V, S>(slots[i * static_cast<int>(blockDim.x)], a);
  }

  // acc = op(acc, element) over the elements of the thread's slots, from `init`: the row's max
  // and its sum of e^(x - max), with the edge's term in `init`.
  template <class S, class Op>
  __device__ float slots_fold(const uint4* slots, float init, Op op) const {
    float acc = init;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      if (!has(i)) continue;
      float a[V];
      slot<S>(slots, i, a);
#pragma unroll
      for (int j = 0; j < V; ++j)
        acc = op(acc, a[j]);
    }
    return acc;
  }

  // f(element, column) of the slots' elements and of the edge, stored into p's row.
  template <class S, class F>
  __device__ void store_slots(S* p, const uint4* slots, float edge, F f) const {
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      if (!has(i)) continue;
      float a[V];
      slot<S>(slots, i, a);
      const int c = col(i);
#pragma unroll
      for (int j = 0; j < V; ++j)
        a[j] = f(a[j], c + j);
      cuda_memops::store<V>(p, base + c, a);
    }
    if (has_edge()) {
      float e[1] = {f(edge, edge_col())};
      cuda_memops::store<1>(p, base + edge_col(), e);
    }
  }

  template <class S>
  __device__ void store(S* p, float (&a)[ITEMS][V], float edge) const {
#pragma unroll
    for (int i = 0; i < ITEMS; ++i)
      if (has(i)) cuda_memops::store<V>(p, base + col(i), a[i]);
    if (has_edge()) {
      float e[1] = {edge};
      cuda_memops::store<1>(p, base + edge_col(), e);
    }
  }

  // The sum of f(element) over the elements the thread holds (the slots it does not hold, and
  // their fill, left out: f need not map the fill to 0).
  template <class F>
  __device__ float held_sum(const float (&a)[ITEMS][V], float edge, F f) const {
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i)
      if (has(i))
#pragma unroll
        for (int j = 0; j < V; ++j)
          s += f(a[i][j]);
    return has_edge() ? s + f(edge) : s;
  }

  // f(element, w[column], b[column]) on every element the thread holds, stored into y's row, a
  // vector at a time, for operators with weight rows (one value a column, the same for every
  // row): w and b (null: 0) read a 16-byte vector at a time, each vector's result stored before
  // the next vector's weights are read, so that a thread's registers hold the row and one vector
  // of each weight, not every vector's weights at once (ptxas -v, sm_90: LayerNorm's bf16 kernel
  // held 55 registers when all of the row's results were stored at the end). Only for rows that
  // start 16-byte aligned and are whole vectors (the callers check: norm_forward): no head or
  // tail, and w's vectors at the held columns aligned too.
  template <class S, class F>
  __device__ void store_with_weights(S* y, float (&a)[ITEMS][V], const S* w, const S* b,
                                     F f) const {
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      if (!has(i)) continue;
      float g[V], h[V];
      cuda_memops::load<V>(w, col(i), g);
#pragma unroll
      for (int j = 0; j < V; ++j)
        h[j] = 0.0f;
      if (b) cuda_memops::load<V>(b, col(i), h);
#pragma unroll
      for (int j = 0; j < V; ++j)
        f(a[i][j], g[j], h[j]);
      cuda_memops::store<V>(y, base + col(i), a[i]);
    }
  }

  // f(value, column) on every element slot of the thread, held or not (a slot not held keeps
  // its fill, and is never stored).
  template <class F>
  __device__ void each(float (&a)[ITEMS][V], float& edge, F f) const {
#pragma unroll
    for (int i = 0; i < ITEMS; ++i)
#pragma unroll
      for (int j = 0; j < V; ++j)
        f(a[i][j], col(i) + j);
    f(edge, edge_col());
  }
};

// The value of every block of this thread's cluster merged, in rank order (so every block gets
// the same bits): each block's thread 0 puts its value (the block's, from block_all_reduce) in
// its shared memory, the cluster waits, and lane k of every warp reads block k's through
// distributed shared memory (cooperative_groups' map_shared_rank, CUDA C++ Programming Guide,
// "Distributed Shared Memory"), then the warp merges them. Two slots used in turn: the slot of
// reduction k is written again at reduction k + 2, after every block has passed the cluster
// barrier of reduction k + 1, which it reaches after its reads of reduction k (the barrier's
// arrive orders them). Called the same number of times by every block of the cluster.
template <class Merge>
__device__ float cluster_all_reduce(float v, Merge merge, float identity, int slot) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  __shared__ float slots[2];
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0) slots[slot] = v;
  cluster.sync();
  const unsigned lane = threadIdx.x % kWarp;
  float r = lane < cluster.num_blocks() ? *cluster.map_shared_rank(&slots[slot], lane) : identity;
  return warp_all_reduce(r, merge);
#else
  (void)merge, (void)identity, (void)slot;
  __trap();  // never launched: the host plans clusters for compute capability 9 and later only
  return v;
#endif
}

// The whole cluster waits (before its blocks exit: none may leave while another reads its
// shared memory).
__device__ __forceinline__ void cluster_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cooperative_groups::this_cluster().sync();
#endif
}

// A row's reductions over the blocks that hold it: the block, then (kCluster) the cluster.
template <bool kCluster>
struct RowReducer {
  int slot = 0;
  template <class Merge>
  __device__ float all(float v, Merge merge, float identity) {
    v = block_all_reduce(v, merge, identity);
    if constexpr (kCluster) {
      v = cluster_all_reduce(v, merge, identity, slot);
      slot ^= 1;
    }
    return v;
  }
};

// One block (kCluster false) or one cluster of `cluster` blocks per row, rows striding; block
// `rank` of a cluster holds vectors [rank per_block, (rank + 1) per_block) of each row.
template <class Op, int V, int ITEMS, bool kCluster>
__device__ __forceinline__ void fused_rows(const Op& op, std::int64_t rows, int cols, int cluster,
                                           std::int64_t per_block) {
  RowReducer<kCluster> reducer;
  const std::int64_t rank = blockIdx.x % cluster;
  const std::int64_t step = gridDim.x / cluster;
  for (std::int64_t row = blockIdx.x / cluster; row < rows; row += step)
    op.fused(row, RowPart<V, ITEMS>::of(op.lead(), row, cols, rank, per_block), reducer);
  if constexpr (kCluster) cluster_wait();
}

// fused_rows as a kernel, with Op::registers(ITEMS, kCluster) registers a thread. A block holds
// one row at a time, so the rows in flight on an SM, and with them the bytes the memory is asked
// for, are the blocks resident there, which the registers a thread decide: an SM has 65,536, so
// 32 a thread let it run 2048 threads (its most), 40 1536, 64 1024. On an H200 (2026-11-28) the
// bf16 norms at 4096 columns (blocks of 256 threads) ran at 84% of the copy (RMSNorm, 37
// registers: 6 blocks an SM) and 61% (LayerNorm, 55: 4), where softmax's kernel at 32 ran at
// 96%. An Op's budget is the least ptxas (CUDA 13) fits without spilling on sm_80, sm_90 and
// sm_100, and the build fails on a spill (CMakeLists.txt: --warn-on-spills), so a budget too
// small cannot go unseen. A budget under 64 is __maxnreg__'s (CUDA C++ Programming Guide,
// "Maximum Number of Registers per Thread"; CUDA 12.4 and later); 64 keeps the launch bound of
// blocks of kRowMaxThreads, which ptxas fits differently (__maxnreg__(64) spilled cross-entropy's
// fp32 kernel of 8 vectors a thread, the launch bound does not).
#if defined(__CUDACC_VER_MAJOR__) && \
    (__CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 4))
#define OPBENCH_MAX_REGISTERS(n) __maxnreg__(n)
#else
#define OPBENCH_MAX_REGISTERS(n) __launch_bounds__(kRowMaxThreads)
#endif
template <class Op, int V, int ITEMS, bool kCluster,
          std::enable_if_t<(Op::registers(ITEMS, kCluster) >= 64), int> = 0>
__global__ void __launch_bounds__(kRowMaxThreads)
    fused_rows_kernel(Op op, std::int64_t rows, int cols, int cluster, std::int64_t per_block) {
  static_assert(Op::registers(ITEMS, kCluster) == 64, "a block of kRowMaxThreads: 64 at most");
  fused_rows<Op, V, ITEMS, kCluster>(op, rows, cols, cluster, per_block);
}
template <class Op, int V, int ITEMS, bool kCluster,
          std::enable_if_t<(Op::registers(ITEMS, kCluster) < 64), int> = 0>
__global__ void OPBENCH_MAX_REGISTERS(Op::registers(ITEMS, kCluster))
    fused_rows_kernel(Op op, std::int64_t rows, int cols, int cluster, std::int64_t per_block) {
  fused_rows<Op, V, ITEMS, kCluster>(op, rows, cols, cluster, per_block);
}

// As fused_rows_kernel with clusters, the lead operand's part of each row streamed through
// shared memory: two buffers of ITEMS x blockDim.x 16-byte slots (dynamic shared memory,
// streamed_slots_bytes), the next row's copies started before this row's reductions, so the
// memory keeps reading while the cluster reduces and writes. Launched persistent (one wave of
// the clusters an SM's shared memory lets be resident, striding over the rows): launched a
// cluster a row, as fused_rows_kernel is, a block would have no next row to read. A thread reads
// only the slots it copied, so its own wait (__pipeline_wait_prior) is all the synchronisation the
// data needs; the slots of a buffer are copied into again only after the thread has read them.
template <class Op, int V, int ITEMS>
__global__ void __launch_bounds__(kRowMaxThreads)
    streamed_rows_kernel(Op op, std::int64_t rows, int cols, int cluster, std::int64_t per_block) {
  extern __shared__ uint4 row_slots[];
  RowReducer<true> reducer;
  const std::int64_t rank = blockIdx.x % cluster;
  const std::int64_t step = gridDim.x / cluster;
  const int other = ITEMS * static_cast<int>(blockDim.x);  // slots from one buffer to the other
  auto part = [&](std::int64_t row) {
    return RowPart<V, ITEMS>::of(op.lead(), row, cols, rank, per_block);
  };
  std::int64_t row = blockIdx.x / cluster;
  uint4* mine = row_slots + threadIdx.x;  // this row's buffer
  if (row < rows) part(row).copy_async(op.lead(), mine);
  __pipeline_commit();
  for (int b = 0; row < rows; row += step, b ^= 1) {
    uint4* next = row_slots + threadIdx.x + (b == 0 ? other : 0);
    if (row + step < rows) part(row + step).copy_async(op.lead(), next);
    __pipeline_commit();       // (an empty group after the last row: the count stays uniform)
    __pipeline_wait_prior(1);  // every group but the newest: this row's
    // The wait is an asm without a memory clobber (cuda_pipeline_helpers.h): keep the compiler
    // from moving the slots' reads above it.
    asm volatile("" ::: "memory");
    op.streamed(row, part(row), mine, reducer);
    mine = next;
  }
  cluster_wait();
}

// The split, first kernel: block (chunk, row) reduces its chunk of the row to Op::Stats.
template <class Op, int V, int ITEMS>
__global__ void __launch_bounds__(kSplitThreads)
    chunk_stats_kernel(Op op, std::int64_t rows, int cols, std::int64_t chunk_vectors,
                       typename Op::Stats* stats) {
  RowReducer<false> reducer;
  for (std::int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    const auto part = RowPart<V, ITEMS>::of(op.lead(), row, cols, blockIdx.x, chunk_vectors);
    const typename Op::Stats s = op.chunk_stats(row, part, reducer);
    if (threadIdx.x == 0) stats[row * gridDim.x + blockIdx.x] = s;
  }
}

// The second: every block merges its row's chunks' statistics in chunk order (each gets the
// same bits) and writes its chunk of the row.
template <class Op, int V, int ITEMS>
__global__ void __launch_bounds__(kSplitThreads)
    chunk_finish_kernel(Op op, std::int64_t rows, int cols, std::int64_t chunk_vectors,
                        const typename Op::Stats* stats) {
  for (std::int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    typename Op::Stats total = Op::empty();
    for (unsigned k = 0; k < gridDim.x; ++k)
      total = Op::merge(total, stats[row * gridDim.x + k]);
    op.chunk_finish(row, RowPart<V, ITEMS>::of(op.lead(), row, cols, blockIdx.x, chunk_vectors),
                    total);
  }
}

// ---- host side ----------------------------------------------------------------------------------

// How many clusters of a launch of `kernel` as `config` says can be resident at once (0: it
// cannot be scheduled at all): the kernel's code was compiled for compute_90 or later (a build
// for older GPUs alone, run by a Hopper through its PTX, has the cluster kernels' trapping
// stand-ins), and a cluster's blocks fit one GPC's SMs at once. A failed query counts as 0.
template <class Kernel>
int resident_clusters(Kernel kernel, const cudaLaunchConfig_t& config) {
  cudaFuncAttributes attributes = {};
  int clusters = 0;
  if (cudaFuncGetAttributes(&attributes, kernel) != cudaSuccess ||
      cudaOccupancyMaxActiveClusters(&clusters, kernel, &config) != cudaSuccess) {
    cudaGetLastError();  // the query's own failure, taken so it is not reported as a launch's
    return 0;
  }
  return attributes.ptxVersion >= 90 ? clusters : 0;
}

// "; 32 registers a thread, 8 blocks an SM": `kernel`'s registers and the blocks of `threads`
// (with `shared` bytes of dynamic shared memory) an SM holds (blocks_per_sm), for the plan a row
// names: what bounds the rows in flight (fused_rows_kernel). "" where a query fails. Asked
// before the launch, so a failed query's error, taken here, is never a launch's.
template <class Kernel>
std::string occupancy_text(Kernel kernel, int threads, std::size_t shared) {
  cudaFuncAttributes attributes = {};
  if (cudaFuncGetAttributes(&attributes, kernel) != cudaSuccess) {
    cudaGetLastError();  // the query's own failure, taken so it is not reported as a launch's
    return "";
  }
  const int blocks = blocks_per_sm(kernel, threads, shared);
  if (blocks < 0) return "";
  return fmt::format("; {} registers a thread, {} block{} an SM", attributes.numRegs, blocks,
                     blocks == 1 ? "" : "s");
}

// Op's row kernels for `rows` rows of `cols` on storage S (V elements a vector): the plan
// (register_row_plan, clusters from compute capability 9), then the launch. `workspace` holds
// the split's statistics (row_stats_workspace_bytes). The description (for l.shape) names
// `kernel` and the plan. False, with nothing launched, where Op has no split and one block cannot
// hold the row.
template <class S, class Op>
bool launch_register_rows(const Op& op, std::int64_t rows, int cols, void* workspace,
                          const Launch& l, const char* kernel) {
  constexpr int kV = vec_of<S>();
  constexpr int kMost = max_row_items(kV, Op::kHeld);
  if constexpr (Op::kSplits)  // the workspace holds 8 bytes a chunk (split_stats_bytes)
    static_assert(sizeof(typename Op::Stats) <= 8, "a split's statistics outgrow the workspace");
  const std::int64_t vectors = cols / kV;  // the most any row's split has
  if constexpr (!Op::kSplits)              // held by one block, with or without clusters
    if (register_row_plan(vectors, kV, Op::kHeld, false).chunks > 0) return false;
  const cudaError_t pending = take_pending_cuda_error();
  bool streamed = false;  // a cluster's rows streamed through shared memory
  std::string occupancy;  // of the kernel launched, for the description (l.shape)
  // The plan's fused kernel (one block, or a cluster where it can be scheduled); false when the
  // plan splits the row or its cluster cannot be scheduled.
  auto fused = [&](const RegisterRowPlan& plan) {
    bool launched = false;
    auto with_items = [&](auto items) {
      constexpr int kI = decltype(items)::value;
      if constexpr (kI <= kMost) {
        if (plan.items != kI || plan.chunks > 0) return;
        if (plan.cluster == 1) {
          auto* k = fused_rows_kernel<Op, kV, kI, false>;
          if (l.shape) occupancy = occupancy_text(k, plan.threads, 0);
          k<<<grid_of(row_grid_blocks(rows)), plan.threads, 0, l.stream>>>(op, rows, cols, 1,
                                                                           vectors);
          launched = true;
          return;
        }
        const std::int64_t per_block = (vectors + plan.cluster - 1) / plan.cluster;
        const std::int64_t clusters =
            rows < kMaxGridBlocks / plan.cluster ? rows : kMaxGridBlocks / plan.cluster;
        cudaLaunchConfig_t config = {};
        config.gridDim = dim3(static_cast<unsigned>(clusters * plan.cluster));
        config.blockDim = dim3(static_cast<unsigned>(plan.threads));
        config.stream = l.stream;
        cudaLaunchAttribute attribute[1] = {};
        attribute[0].id = cudaLaunchAttributeClusterDimension;
        attribute[0].val.clusterDim.x = static_cast<unsigned>(plan.cluster);
        attribute[0].val.clusterDim.y = 1;
        attribute[0].val.clusterDim.z = 1;
        config.attrs = attribute;
        config.numAttrs = 1;
        if constexpr (Op::kStreams) {  // streamed, where its buffers fit beside the cluster
          auto* ks = streamed_rows_kernel<Op, kV, kI>;
          const std::int64_t bytes = streamed_slots_bytes(plan);
          // (refused past the device's shared memory a block may opt in to: 227 KiB on sm_90)
          if (cudaFuncSetAttribute(ks, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   static_cast<int>(bytes)) == cudaSuccess) {
            config.dynamicSmemBytes = static_cast<std::size_t>(bytes);
            // persistent: one wave of clusters striding over the rows, so that each block has
            // a next row to read while it reduces this one
            if (const int resident = resident_clusters(ks, config); resident > 0) {
              const std::int64_t waves = rows < resident ? rows : resident;
              config.gridDim = dim3(static_cast<unsigned>(waves * plan.cluster));
              if (l.shape)
                occupancy = occupancy_text(ks, plan.threads, static_cast<std::size_t>(bytes));
              const cudaError_t err =
                  cudaLaunchKernelEx(&config, ks, op, rows, cols, plan.cluster, per_block);
              if (err != cudaSuccess) {
                cudaGetLastError();
                throw run_failure(launch_failure_text(err, pending, kernel, __FILE__, __LINE__));
              }
              launched = streamed = true;
              return;
            }
            config.dynamicSmemBytes = 0;
          }
          cudaGetLastError();  // a refused attribute: the registers' kernel below
        }
        auto* k = fused_rows_kernel<Op, kV, kI, true>;
        if (resident_clusters(k, config) == 0) return;
        if (l.shape) occupancy = occupancy_text(k, plan.threads, 0);
        const cudaError_t err =
            cudaLaunchKernelEx(&config, k, op, rows, cols, plan.cluster, per_block);
        if (err != cudaSuccess) {
          cudaGetLastError();
          throw run_failure(launch_failure_text(err, pending, kernel, __FILE__, __LINE__));
        }
        launched = true;
      }
    };
    with_items(std::integral_constant<int, 1>{});
    with_items(std::integral_constant<int, 2>{});
    with_items(std::integral_constant<int, 4>{});
    with_items(std::integral_constant<int, 8>{});
    return launched;
  };
  RegisterRowPlan plan = register_row_plan(vectors, kV, Op::kHeld, l.cc_major >= 9);
  bool launched = fused(plan);
  if (!launched && plan.cluster > 1) {  // a cluster that cannot be scheduled: plan without
    plan = register_row_plan(vectors, kV, Op::kHeld, false);
    launched = fused(plan);
  }
  if (!launched) {  // the split
    if constexpr (Op::kSplits) {
      if (!workspace)
        throw std::logic_error(std::string(kernel) + ": a split row needs its workspace");
      auto* stats = static_cast<typename Op::Stats*>(workspace);
      const dim3 grid(static_cast<unsigned>(plan.chunks),
                      static_cast<unsigned>(rows < 65535 ? rows : 65535));
      auto* k = chunk_stats_kernel<Op, kV, kMost>;
      if (l.shape) occupancy = occupancy_text(k, kSplitThreads, 0);
      k<<<grid, kSplitThreads, 0, l.stream>>>(op, rows, cols, plan.chunk_vectors, stats);
      chunk_finish_kernel<Op, kV, kMost>
          <<<grid, kSplitThreads, 0, l.stream>>>(op, rows, cols, plan.chunk_vectors, stats);
    } else {
      throw std::logic_error(std::string(kernel) + ": a split row for an operator without one");
    }
  }
  check_launch(pending, kernel);
  if (l.shape) {
    const std::string_view k(kernel);
    const std::string name(k.substr(0, k.rfind("_kernel")));
    const std::string items =
        fmt::format("{} vector{} a thread", plan.items, plan.items == 1 ? "" : "s");
    std::string how;
    if (plan.chunks > 0)
      how = fmt::format(
          "split: {} chunks of {} vectors a row, a block of {} threads each, {}; chunk statistics "
          "through memory, then a second kernel reads the row again",
          plan.chunks, plan.chunk_vectors, kSplitThreads, items);
    else if (streamed)
      how = fmt::format(
          "the row streamed through shared memory: clusters of {} blocks x {} threads, {}, two "
          "rows' buffers of {} KiB a block (the next row read while this one is reduced), "
          "statistics through distributed shared memory",
          plan.cluster, plan.threads, items, streamed_slots_bytes(plan) / 2048);
    else if (plan.cluster > 1)
      how = fmt::format(
          "the row in registers: clusters of {} blocks x {} threads, {}, statistics through "
          "distributed shared memory",
          plan.cluster, plan.threads, items);
    else
      how = fmt::format("the row in registers: a block of {} threads, {}", plan.threads, items);
    describe(l, fmt::format("{}<{}> x{}: {}{} ({} rows{})", name, Codec<S>::kName, kV, how,
                            occupancy, rows,
                            cols % kV != 0 ? "; the unaligned head and tail of a row element by "
                                             "element"
                                           : ""));
  }
  return true;
}

// Bytes of the split's statistics for `held` operands: 8 a chunk of every row, as planned
// without clusters.
std::int64_t split_stats_bytes(std::int64_t rows, std::int64_t cols, int elem_bytes, int held) {
  const int vec = kVectorBytes / elem_bytes;
  const RegisterRowPlan plan = register_row_plan(cols / vec, vec, held, false);
  return plan.chunks > 0 ? rows * plan.chunks * 8 : 0;
}

}  // namespace
}  // namespace opbench::cuda_memops
