// CUDA kernels of bench_memops: the embedding's lookup and its backward (memops/cuda_memops.cuh).
//
// The backward (issue 41 item 2): on an H200 it reached 33% of the roof: three memsets, and a
// scalar fp32 atomic per element into an R x C scratch that was read again. Now it is PyTorch's
// embedding_dense_backward's design: the tokens sorted by id (cub::DeviceRadixSort::SortPairs on
// (id, position) pairs, over only the bits the vocabulary needs: 17 for 128,256; stable, so each
// id's tokens stay in token order), every vocabulary row's segment of the sorted tokens found by a
// binary search (embedding_starts_kernel), then a warp per 32 vocabulary rows at one slice of 512
// bf16 or 256 fp32 columns, their 33 segment starts read in one load (embedding_group), sums each
// row's tokens' rows of dy in fp32 registers, in token order (the CPU loop's order: fp32 results
// equal to the bit), and writes the row once, zeros where no token points (embedding_rows_kernel):
// no memset, no atomics, deterministic, the table written once and dy read once. The sort's
// temporary storage is the case's workspace, allocated at set-up; the sort itself is part of the
// operator and of its time, as in PyTorch. Traffic: the table's gradient (V C s), dy (R C s) and
// the ids; the sort and the segment starts add a few bytes a token and 4 a vocabulary row.
// Target: at least 85% of the same run's device-to-device copy rate on an H100 or H200, and
// never below PyTorch's embedding backward on the same GPU. On an H200 (2026-11-28) this design
// with a warp per (row, slice) reached 69% (bf16) and 76% (fp32) of the copy at 8192 x 4096 over
// 128,256 ids, 0.44 and 0.69 of PyTorch's time. The groups of 32 rows are NOT YET RUN ON A GPU:
// compiled for sm_80, sm_90 and sm_100.
#include <cub/device/device_radix_sort.cuh>

#include "memops/cuda_memops_launch.cuh"
namespace opbench::cuda_memops {
namespace {

// ---- embedding --------------------------------------------------------------------------------

// A block per token copies its table row, in `Unit`s (uint4 when rows are whole 16-byte vectors).
template <class Unit>
__global__ void __launch_bounds__(kRowMaxThreads)
    embedding_fwd_kernel(const Unit* table, const std::int64_t* ids, Unit* y, std::int64_t rows,
                         int units, std::int64_t vocab) {
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const std::int64_t id = ids[row];
    if (id < 0 || id >= vocab) continue;
    const Unit* src = table + id * units;
    Unit* dst = y + row * units;
    for (int u = threadIdx.x; u < units; u += blockDim.x)
      dst[u] = src[u];
  }
}

// The tokens' sort keys (their ids, `vocab` for an id out of range) and positions.
__global__ void embedding_keys_kernel(const std::int64_t* ids, std::uint32_t* keys,
                                      std::uint32_t* positions, std::int64_t rows,
                                      std::int64_t vocab) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r < rows;
       r += stride) {
    keys[r] = embedding_sort_key(ids[r], vocab);
    positions[r] = static_cast<std::uint32_t>(r);
  }
}

// starts[v] = the first sorted token of row v, for v in [0, vocab].
__global__ void embedding_starts_kernel(const std::uint32_t* keys, std::uint32_t rows,
                                        std::uint32_t* starts, std::int64_t vocab) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t v = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       v <= vocab; v += stride)
    starts[v] = segment_begin(keys, rows, static_cast<std::uint32_t>(v));
}

// V elements of a row of dy as loaded: a 16-byte vector (V > 1) decoded only when added, so that
// the loads of a token's vectors are in flight together in 4 registers each; a scalar (V = 1) as
// its float.
template <int V, class S>
struct Held {
  uint4 raw;
  __device__ __forceinline__ void load(const S* p, std::int64_t i) { raw = load_raw(p, i); }
  __device__ __forceinline__ void add_to(float (&acc)[V]) const {
    float d[V];
    decode<V, S>(raw, d);
#pragma unroll
    for (int j = 0; j < V; ++j)
      acc[j] += d[j];
  }
};
template <class S>
struct Held<1, S> {
  float value;
  __device__ __forceinline__ void load(const S* p, std::int64_t i) {
    float d[1];
    cuda_memops::load<1>(p, i, d);
    value = d[0];
  }
  __device__ __forceinline__ void add_to(float (&acc)[1]) const { acc[0] += value; }
};

// A warp per group of 32 vocabulary rows at one slice of embedding_slice_cols(V) columns
// (embedding_group), striding over the groups: lane l reads row l's segment, then for each row
// in turn the warp takes its bounds by shuffle and lane l sums the vectors l and l + 32 of the
// slice over the row's tokens, in sorted (token) order, in fp32, and writes them once. At least 4
// blocks an SM (32 warps; 64 registers at most): without that bound ptxas for sm_80 held the
// scalar 16-bit kernels at 32 registers and spilled (CUDA 13.0; 40 now, the vector ones 52-56).
template <int V, class S>
__global__ void __launch_bounds__(kElementwiseThreads, 4)
    embedding_rows_kernel(const S* dy, const std::uint32_t* positions, const std::uint32_t* starts,
                          S* dtable, std::int64_t vocab, int cols, std::int64_t slices) {
  constexpr int U = kEmbeddingUnroll;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * blockDim.x / kWarp;
  const std::int64_t groups = embedding_groups(vocab, slices);
  for (std::int64_t w = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
       w < groups; w += warps) {
    const EmbeddingGroup group = embedding_group(w, slices, V);
    const std::int64_t mine = group.first_row + lane;
    std::uint32_t begin = 0, end = 0;
    if (mine < vocab) begin = starts[mine], end = starts[mine + 1];
    int col[U];
    bool has[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      col[u] = static_cast<int>(group.first_col) + (u * kWarp + lane) * V;
      has[u] = col[u] + V <= cols;
    }
    const std::int64_t left = vocab - group.first_row;
    const int rows = left < kEmbeddingGroupRows ? static_cast<int>(left) : kEmbeddingGroupRows;
    for (int r = 0; r < rows; ++r) {  // the same r in every lane: the shuffles see the warp whole
      const std::uint32_t first = __shfl_sync(kFullMask, begin, r);
      const std::uint32_t last = __shfl_sync(kFullMask, end, r);
      float acc[U][V];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int j = 0; j < V; ++j)
          acc[u][j] = 0.0f;
      for (std::uint32_t p = first; p < last; ++p) {
        const std::int64_t token = positions[p];
        // both vectors' loads in flight at once, held as loaded (4 registers each, not V floats)
        Held<V, S> d[U];
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (has[u]) d[u].load(dy, token * cols + col[u]);
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (has[u]) d[u].add_to(acc[u]);
      }
      const std::int64_t v = group.first_row + r;
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (has[u]) store<V>(dtable, v * cols + col[u], acc[u]);
    }
  }
}

// The sorted keys and positions, and CUB's temporary storage, in one workspace.
struct EmbeddingSort {
  std::uint32_t *keys_in, *positions_in, *keys, *positions, *starts;
  void* temp;
  std::size_t temp_bytes;
};

// CUB's temporary storage for sorting `rows` keys of `bits` bits (a query: nothing runs).
std::size_t sort_temp_bytes(std::int64_t rows, int bits) {
  std::size_t bytes = 0;
  OPBENCH_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, bytes, static_cast<const std::uint32_t*>(nullptr),
      static_cast<std::uint32_t*>(nullptr), static_cast<const std::uint32_t*>(nullptr),
      static_cast<std::uint32_t*>(nullptr), static_cast<int>(rows), 0, bits));
  return bytes;
}

EmbeddingSort embedding_sort_of(void* workspace, std::int64_t rows, std::int64_t vocab) {
  const std::size_t temp = sort_temp_bytes(rows, embedding_key_bits(vocab));
  const EmbeddingSortLayout at =
      embedding_sort_layout(rows, vocab, static_cast<std::int64_t>(temp));
  auto* base = static_cast<unsigned char*>(workspace);
  auto words = [&](std::int64_t offset) { return reinterpret_cast<std::uint32_t*>(base + offset); };
  return {words(at.keys_in),
          words(at.positions_in),
          words(at.keys),
          words(at.positions),
          words(at.starts),
          base + at.temp,
          temp};
}

}  // namespace

void embedding_fwd(DType t, const void* table, const std::int64_t* ids, void* y, std::int64_t rows,
                   std::int64_t cols, std::int64_t vocab, const Launch& l) {
  checked_int(cols, "cols", "embedding");
  if (rows <= 0) return;
  with_storage(t, "embedding", [&](auto tag) {
    using S = decltype(tag);
    using Bits = typename Codec<S>::Bits;
    const std::int64_t row_bytes = cols * static_cast<std::int64_t>(sizeof(Bits));
    const bool wide = row_bytes % kVectorBytes == 0 && address_bits(table, y) % kVectorBytes == 0;
    const std::int64_t blocks = row_grid_blocks(rows);
    int units = 0, threads = 0;
    const cudaError_t pending = take_pending_cuda_error();
    if (wide) {
      units = static_cast<int>(row_bytes / kVectorBytes);
      threads = row_block_threads(units, 1);
      embedding_fwd_kernel<uint4><<<grid_of(blocks), threads, 0, l.stream>>>(
          static_cast<const uint4*>(table), ids, static_cast<uint4*>(y), rows, units, vocab);
    } else {
      units = static_cast<int>(cols);
      threads = row_block_threads(units, 1);
      embedding_fwd_kernel<Bits><<<grid_of(blocks), threads, 0, l.stream>>>(
          static_cast<const Bits*>(table), ids, static_cast<Bits*>(y), rows, units, vocab);
    }
    check_launch(pending, "embedding_fwd_kernel");
    if (l.shape)
      describe(l, fmt::format("embedding_fwd<{}>: {} blocks x {} threads (a block per token "
                              "copying its row in {}-byte units)",
                              Codec<S>::kName, blocks, threads,
                              wide ? kVectorBytes : static_cast<int>(sizeof(Bits))));
  });
}

namespace {
// Refuses a case the sort cannot take (before CUB is given a wrapped item count).
void check_embedding_sort_fits(std::int64_t rows, std::int64_t vocab) {
  if (!embedding_sort_fits(rows, vocab))
    throw run_failure(fmt::format(
        "embedding: {} tokens over a vocabulary of {} is beyond our kernel's sort (at most "
        "2^31 - 1 tokens, a vocabulary below 2^31 - 1: CUB's int item count, 32-bit keys)",
        rows, vocab));
}
}  // namespace

std::int64_t embedding_bwd_workspace_bytes(DType, std::int64_t rows, std::int64_t,
                                           std::int64_t vocab) {
  check_embedding_sort_fits(rows, vocab);
  const auto temp =
      static_cast<std::int64_t>(sort_temp_bytes(rows < 1 ? 1 : rows, embedding_key_bits(vocab)));
  return embedding_sort_layout(rows, vocab, temp).total;
}

void embedding_bwd(DType t, const void* dy, const std::int64_t* ids, void* dtable, void* workspace,
                   std::int64_t rows, std::int64_t cols, std::int64_t vocab, const Launch& l) {
  const int c = checked_int(cols, "cols", "embedding");
  check_embedding_sort_fits(rows, vocab);
  if (vocab <= 0 || cols <= 0) return;
  with_storage(t, "embedding", [&](auto tag) {
    using S = decltype(tag);
    constexpr int kV = vec_of<S>();
    cudaError_t pending = take_pending_cuda_error();
    const EmbeddingSort sort = embedding_sort_of(workspace, rows, vocab);
    const int bits = embedding_key_bits(vocab);
    const Grid g = elementwise_grid(rows, 1, l.sm_count);
    const Grid starts = elementwise_grid(vocab + 1, 1, l.sm_count);
    const int vec = row_vector_elements(kVectorBytes / kV, address_bits(dy, dtable), cols);
    const std::int64_t slices = embedding_slices(cols, vec);
    static const int resident_v = resident_blocks(embedding_rows_kernel<kV, S>);
    static const int resident_1 = resident_blocks(embedding_rows_kernel<1, S>);
    const Grid warps = elementwise_grid(embedding_groups(vocab, slices) * kWarp, 1, l.sm_count, 1,
                                        vec == kV ? resident_v : resident_1);
    const auto* dys = static_cast<const S*>(dy);
    auto* dt = static_cast<S*>(dtable);
    if (rows > 0) {
      embedding_keys_kernel<<<grid_of(g.blocks), g.threads, 0, l.stream>>>(
          ids, sort.keys_in, sort.positions_in, rows, vocab);
      check_launch(pending, "embedding_keys_kernel");
      std::size_t temp_bytes = sort.temp_bytes;
      OPBENCH_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
          sort.temp, temp_bytes, sort.keys_in, sort.keys, sort.positions_in, sort.positions,
          static_cast<int>(rows), 0, bits, l.stream));
      pending = take_pending_cuda_error();
    }
    embedding_starts_kernel<<<grid_of(starts.blocks), starts.threads, 0, l.stream>>>(
        sort.keys, static_cast<std::uint32_t>(rows), sort.starts, vocab);
    if (vec == kV)
      embedding_rows_kernel<kV><<<grid_of(warps.blocks), warps.threads, 0, l.stream>>>(
          dys, sort.positions, sort.starts, dt, vocab, c, slices);
    else
      embedding_rows_kernel<1><<<grid_of(warps.blocks), warps.threads, 0, l.stream>>>(
          dys, sort.positions, sort.starts, dt, vocab, c, slices);
    check_launch(pending, "embedding_rows_kernel");
    if (l.shape)
      describe(
          l, fmt::format("embedding_bwd<{}> x{}: the {} token ids sorted with their positions "
                         "(cub::DeviceRadixSort::SortPairs over {} bits, timed as part of the "
                         "operator, as PyTorch's embedding_dense_backward sorts), every vocabulary "
                         "row's tokens found by a binary search, then a warp per {} rows x {} "
                         "columns reads their segments in one load and sums each row's tokens' dy "
                         "in fp32 in token order, writing the row once, zero where no token "
                         "points: {} blocks x {} threads{}",
                         Codec<S>::kName, vec, rows, bits, kEmbeddingGroupRows,
                         embedding_slice_cols(vec), warps.blocks, warps.threads,
                         vec == 1 ? "; scalar: rows not 16-byte aligned" : ""));
  });
}

}  // namespace opbench::cuda_memops
