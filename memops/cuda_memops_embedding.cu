// CUDA kernels of bench_memops: the embedding's lookup and its backward scatter-add
// (memops/cuda_memops.cuh).
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

// fp32 tables: a block per token adds its dy row into the table's row with fp32 atomics (RED
// operations, the result unused).
template <int V>
__global__ void __launch_bounds__(kRowMaxThreads)
    embedding_scatter_fp32_kernel(const float* dy, const std::int64_t* ids, float* dtable,
                                  std::int64_t rows, int cols, std::int64_t vocab) {
  const int vectors = cols / V;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const std::int64_t id = ids[row];
    if (id < 0 || id >= vocab) continue;
    float* dst = dtable + id * cols;
    for (int c = threadIdx.x; c < vectors; c += blockDim.x) {
      float d[V];
      load<V>(dy, row * cols + c * V, d);
#pragma unroll
      for (int j = 0; j < V; ++j)
        atomicAdd(dst + c * V + j, d[j]);
    }
  }
}

// bf16 and fp16 tables, step 1: each vocabulary row used gets its lowest token index as owner
// (owner[] starts at 0xFFFFFFFF: none).
__global__ void embedding_claim_kernel(const std::int64_t* ids, unsigned* owner, std::int64_t rows,
                                       std::int64_t vocab) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r < rows;
       r += stride) {
    const std::int64_t id = ids[r];
    if (id >= 0 && id < vocab) atomicMin(owner + id, static_cast<unsigned>(r));
  }
}

// Step 2: every token adds its dy row, in fp32, into its owner's row of the scratch (zeroed).
template <int V, class S>
__global__ void __launch_bounds__(kRowMaxThreads)
    embedding_scatter_owner_kernel(const S* dy, const std::int64_t* ids, const unsigned* owner,
                                   float* scratch, std::int64_t rows, int cols,
                                   std::int64_t vocab) {
  const int vectors = cols / V;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const std::int64_t id = ids[row];
    if (id < 0 || id >= vocab) continue;
    float* dst = scratch + static_cast<std::int64_t>(owner[id]) * cols;
    for (int c = threadIdx.x; c < vectors; c += blockDim.x) {
      float d[V];
      load<V>(dy, row * cols + c * V, d);
#pragma unroll
      for (int j = 0; j < V; ++j)
        atomicAdd(dst + c * V + j, d[j]);
    }
  }
}

// Step 3: each owner rounds its row's fp32 sum once into the table.
template <int V, class S>
__global__ void __launch_bounds__(kRowMaxThreads)
    embedding_write_owner_kernel(const float* scratch, const std::int64_t* ids,
                                 const unsigned* owner, S* dtable, std::int64_t rows, int cols,
                                 std::int64_t vocab) {
  const int vectors = cols / V;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const std::int64_t id = ids[row];
    if (id < 0 || id >= vocab || owner[id] != static_cast<unsigned>(row)) continue;
    for (int c = threadIdx.x; c < vectors; c += blockDim.x) {
      float a[V];
      load<V>(scratch, row * cols + c * V, a);
      store<V>(dtable, id * cols + c * V, a);
    }
  }
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

std::int64_t embedding_bwd_workspace_bytes(DType t, std::int64_t rows, std::int64_t cols,
                                           std::int64_t vocab) {
  if (t == DType::fp32) return 0;
  const std::int64_t owner = (vocab * 4 + 255) / 256 * 256;
  return owner + rows * cols * 4;
}

void embedding_bwd(DType t, const void* dy, const std::int64_t* ids, void* dtable, void* workspace,
                   std::int64_t rows, std::int64_t cols, std::int64_t vocab, const Launch& l) {
  const int c = checked_int(cols, "cols", "embedding");
  if (rows > std::numeric_limits<unsigned>::max() - 1)
    throw run_failure(
        fmt::format("embedding: {} tokens is beyond our kernel's 32-bit owners", rows));
  with_storage(t, "embedding", [&](auto tag) {
    using S = decltype(tag);
    constexpr int kV = vec_of<S>();
    const auto table_bytes = static_cast<std::size_t>(vocab * cols) * sizeof(S);
    OPBENCH_CUDA_CHECK(cudaMemsetAsync(dtable, 0, table_bytes, l.stream));
    if (rows <= 0) return;
    const std::int64_t blocks = row_grid_blocks(rows);
    if constexpr (std::is_same_v<S, float>) {
      const int vec = row_vector_elements(4, address_bits(dy), cols);
      const int threads = row_block_threads(cols, vec);
      const auto* dys = static_cast<const float*>(dy);
      auto* dt = static_cast<float*>(dtable);
      const cudaError_t pending = take_pending_cuda_error();
      if (vec == kV)
        embedding_scatter_fp32_kernel<kV>
            <<<grid_of(blocks), threads, 0, l.stream>>>(dys, ids, dt, rows, c, vocab);
      else
        embedding_scatter_fp32_kernel<1>
            <<<grid_of(blocks), threads, 0, l.stream>>>(dys, ids, dt, rows, c, vocab);
      check_launch(pending, "embedding_scatter_fp32_kernel");
      if (l.shape)
        describe(l, fmt::format("memset of the table's gradient, then "
                                "embedding_scatter<fp32> x{}: {} blocks x {} threads (a block "
                                "per token, fp32 atomicAdd into the table)",
                                vec, blocks, threads));
    } else {
      auto* owner = static_cast<unsigned*>(workspace);
      float* scratch = reinterpret_cast<float*>(static_cast<unsigned char*>(workspace) +
                                                (vocab * 4 + 255) / 256 * 256);
      OPBENCH_CUDA_CHECK(
          cudaMemsetAsync(owner, 0xFF, static_cast<std::size_t>(vocab) * 4, l.stream));
      OPBENCH_CUDA_CHECK(cudaMemsetAsync(
          scratch, 0, static_cast<std::size_t>(rows * cols) * sizeof(float), l.stream));
      const Grid claim = elementwise_grid(rows, 1, l.sm_count);
      cudaError_t pending = take_pending_cuda_error();
      embedding_claim_kernel<<<grid_of(claim.blocks), claim.threads, 0, l.stream>>>(ids, owner,
                                                                                    rows, vocab);
      check_launch(pending, "embedding_claim_kernel");
      const int vec =
          row_vector_elements(kVectorBytes / kV, address_bits(dy, dtable, scratch), cols);
      const int threads = row_block_threads(cols, vec);
      const auto* dys = static_cast<const S*>(dy);
      auto* dt = static_cast<S*>(dtable);
      pending = take_pending_cuda_error();
      if (vec == kV) {
        embedding_scatter_owner_kernel<kV>
            <<<grid_of(blocks), threads, 0, l.stream>>>(dys, ids, owner, scratch, rows, c, vocab);
        check_launch(pending, "embedding_scatter_owner_kernel");
        embedding_write_owner_kernel<kV>
            <<<grid_of(blocks), threads, 0, l.stream>>>(scratch, ids, owner, dt, rows, c, vocab);
      } else {
        embedding_scatter_owner_kernel<1>
            <<<grid_of(blocks), threads, 0, l.stream>>>(dys, ids, owner, scratch, rows, c, vocab);
        check_launch(pending, "embedding_scatter_owner_kernel");
        embedding_write_owner_kernel<1>
            <<<grid_of(blocks), threads, 0, l.stream>>>(scratch, ids, owner, dt, rows, c, vocab);
      }
      check_launch(pending, "embedding_write_owner_kernel");
      if (l.shape)
        describe(l, fmt::format(
                        "memset of the table's gradient, embedding_claim: {} blocks x {} threads "
                        "(the lowest token of each id owns it), embedding_scatter_owner<{}> x{} "
                        "and embedding_write_owner: {} blocks x {} threads (a block per token; "
                        "fp32 atomicAdd into the owner's scratch row, rounded once into the "
                        "table)",
                        claim.blocks, claim.threads, Codec<S>::kName, vec, blocks, threads));
    }
  });
}

}  // namespace opbench::cuda_memops
