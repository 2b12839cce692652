#pragma once
// Our CUDA kernels of the memory-bound operators (memops/memop.hpp), behind host-callable launch
// functions with plain C++ signatures (device addresses as pointers, the activations' storage
// type as a DType). The arithmetic is memops/memop_math.hpp's, the very functions the CPU loops
// run, so the host tests cover it; the launch shapes are decided by the pure functions below,
// which the host tests cover too.
//
// Kernels (every one in fp32 math, storing fp32, bf16 or fp16 where the operator takes them; the
// exponentials are the GPU's ex2.approx and rcp.approx, memops/fast_math.hpp; none has run on a
// GPU in this form yet, see each file's header):
//   softmax (both passes) and cross_entropy: the row read once and held in registers between its
//     reductions and its write (memops/cuda_memops_rows.cuh): a block per row, a thread block
//     cluster per row on sm_90 and later for rows past one block (vocabularies of 128,256 and
//     256,000), or chunks of a block whose statistics a second kernel combines (longer rows, or
//     no clusters); rows whose length is not a multiple of the vector read in 16-byte vectors
//     between an unaligned head and tail (row_split).
//   rmsnorm, add_rmsnorm, layernorm forward: the row read once and held in registers the same
//     way (a block per row, or a cluster on sm_90 and later), its statistics reduced from the
//     held elements, the weight rows read a 16-byte vector at a time at the held columns. Rows
//     one block cannot hold (past 16,384 elements; 32,768 for layernorm), or operands not
//     16-byte aligned, take the two-pass kernel: one block per row with a block reduction (warp
//     shuffles, then one value per warp through shared memory), the row read once for the
//     statistics and once more, from L1/L2, to write the result.
//   rmsnorm backward: persistent blocks, one wave, each owning a run of rows with w and its
//     share of dw in registers (cuda_memops_norms.cu says how; rows past 8192 columns, or
//     operands not 16-byte aligned, keep the block-per-row kernel); layernorm backward: one
//     block per row. Either keeps each block's dw (and db) in a partial row of an fp32
//     workspace, then a column reduction over the partials (Apex's cuComputePartGradGammaBeta /
//     cuComputeGradGammaBeta split the work the same way).
//   elementwise (memops/elementwise.hpp's kernels, adamw, casts, fp8 quantize): grid-stride
//     loops over 16-byte vectors, two a thread at a time (a single 128-bit load or store per
//     access, CUDA C++ Programming Guide, "Device Memory Accesses": an access compiles to one
//     instruction only for 1, 2, 4, 8 or 16 bytes naturally aligned; the stores go through
//     __stwb to keep them whole, see cuda_memops_launch.cuh), the tail of fewer than a vector,
//     and every access when an operand is not 16-byte aligned, element by element.
//   rope: one block per token, a thread per (head, vector of pairs).
//   embedding: a block per token copying its table row; the backward sorts the token ids and
//     sums each vocabulary row's tokens in a warp, writing every row of the gradient once.
#include <cuda_runtime_api.h>
#include <float.h>
#include <math.h>

#include <cstdint>
#include <string>

#include "common/dtype.hpp"
#include "common/host_device.hpp"
#include "common/uniform_value.hpp"
#include "memops/fast_math.hpp"
#include "memops/memop.hpp"
#include "memops/memop_inputs.hpp"
#include "memops/memop_math.hpp"

namespace opbench::cuda_memops {

// ---- launch shapes: pure functions of the sizes and addresses --------------------------------

inline constexpr int kVectorBytes = 16;  // one 128-bit load or store
inline constexpr int kElementwiseThreads = 256;
inline constexpr int kElementwiseBlocksPerSm = 8;  // 2048 resident threads per SM on sm_80..sm_100
inline constexpr int kElementwiseUnroll = 2;       // 16-byte vectors a thread loads at a time
inline constexpr int kRowMaxThreads = 1024;
inline constexpr int kRowVectorsPerThread = 4;  // vectors a thread of a row block takes, at least
inline constexpr int kNormBwdBlocksPerSm = 2;   // blocks (and partial rows) of a norm's backward
inline constexpr int kNormBwdMaxThreads = 512;  // its blocks: 128 registers a thread (5 operands)
inline constexpr std::int64_t kMaxGridBlocks = 2147483647;  // gridDim.x limit (2^31 - 1)

// Elements of `smallest_bytes` in one 16-byte access: the width every operand's loop steps by
// (an operand of wider elements takes two or four accesses per step). 1 when `addresses` (the
// OR of every operand's address) is not 16-byte aligned: the scalar loop then.
constexpr int vector_elements(int smallest_bytes, std::uintptr_t addresses) {
  return addresses % kVectorBytes == 0 ? kVectorBytes / smallest_bytes : 1;
}

// A row operator also needs every row to start 16-byte aligned: `cols` a multiple of the width.
constexpr int row_vector_elements(int smallest_bytes, std::uintptr_t addresses, std::int64_t cols) {
  const int v = vector_elements(smallest_bytes, addresses);
  return cols % v == 0 ? v : 1;
}

// Threads of a row operator's block: enough that each takes about kRowVectorsPerThread vectors
// of the row, in whole warps, from one warp up to `max_threads` (a long vocabulary row then
// gives each thread more).
constexpr int row_block_threads(std::int64_t cols, int vec, int max_threads = kRowMaxThreads) {
  const std::int64_t vectors = (cols + vec - 1) / vec;
  const std::int64_t wanted = (vectors + kRowVectorsPerThread - 1) / kRowVectorsPerThread;
  const std::int64_t warps = (wanted + 31) / 32;
  const std::int64_t threads = warps * 32;
  return static_cast<int>(threads < 32 ? 32 : threads > max_threads ? max_threads : threads);
}

// Blocks of a one-block-per-row kernel: one per row, up to CUDA's limit (blocks then stride).
constexpr std::int64_t row_grid_blocks(std::int64_t rows) {
  return rows < kMaxGridBlocks ? rows : kMaxGridBlocks;
}

// Blocks of a norm's backward: each keeps a partial row of dw (and db), so fewer than one per
// row: kNormBwdBlocksPerSm per SM (a full wave), never more than the rows.
constexpr std::int64_t norm_bwd_blocks(std::int64_t rows, int sm_count) {
  const std::int64_t wave =
      static_cast<std::int64_t>(sm_count < 1 ? 1 : sm_count) * kNormBwdBlocksPerSm;
  return rows < wave ? rows : wave;
}

// ---- a row held in registers (softmax, cross-entropy, the norms' forward; cuda_memops_rows.cuh)
// --

// A row of `cols` elements of `elem_bytes` starting at `row_address`, as its kernels read it:
// `head` elements up to the first 16-byte boundary, `vectors` whole 16-byte vectors, then `tail`
// elements. A row of bf16 whose length is not a multiple of 8 (GPT-2's vocabulary, 50,257) starts
// at another boundary every row: its head and tail (at most 7 elements each) are read one by one
// and the rest in vectors, where a split by alignment alone read the whole row element by element.
// row_address must be a multiple of elem_bytes.
struct RowSplit {
  int head = 0;
  std::int64_t vectors = 0;
  int tail = 0;
};
OPBENCH_HD constexpr RowSplit row_split(std::uintptr_t row_address, std::int64_t cols,
                                        int elem_bytes) {
  const int vec = kVectorBytes / elem_bytes;
  const std::int64_t to_boundary =
      static_cast<std::int64_t>((kVectorBytes - row_address % kVectorBytes) % kVectorBytes) /
      elem_bytes;
  const std::int64_t head = to_boundary < cols ? to_boundary : cols;
  const std::int64_t vectors = (cols - head) / vec;
  return {static_cast<int>(head), vectors, static_cast<int>(cols - head - vectors * vec)};
}

// Which of a row's elements a block's thread holds (memops/cuda_memops_rows.cuh): block `block`
// of the row's blocks (each `per_block` vectors) holds vectors [first, end) of the row's split;
// its thread t of `threads` holds the vectors first + t + i threads for i < items (a warp's
// loads of one i are contiguous), and the row's first block's thread e < head + tail the head
// or tail element e.
struct BlockVectors {
  int first = 0, end = 0;
};
OPBENCH_HD constexpr BlockVectors block_vectors(RowSplit s, std::int64_t block,
                                                std::int64_t per_block) {
  const std::int64_t first = block * per_block, end = first + per_block;
  return {static_cast<int>(first < s.vectors ? first : s.vectors),
          static_cast<int>(end < s.vectors ? end : s.vectors)};
}
OPBENCH_HD constexpr int item_vector(int first, int thread, int threads, int item) {
  return first + thread + item * threads;
}
OPBENCH_HD constexpr int edge_column(RowSplit s, int vec, int e) {
  return e < s.head ? e : s.head + static_cast<int>(s.vectors) * vec + (e - s.head);
}

// Whether two operands' rows split alike: their addresses agree modulo 16 (the rows of both are
// `cols` elements of the same size apart).
constexpr bool same_phase(std::uintptr_t a, std::uintptr_t b) {
  return a % kVectorBytes == b % kVectorBytes;
}

// How a kernel holds a row in registers: `threads` a block, each with `items` 16-byte vectors of
// each of `held` operands (and one head or tail element), `cluster` blocks a row (a thread block
// cluster, sm_90 and later: the blocks exchange their partial max and sum through distributed
// shared memory). A row too long for a cluster of kMaxClusterBlocks (or any row longer than a
// block where there are no clusters) is split: `chunks` blocks of `chunk_vectors` vectors each
// write their part's statistics to memory, and a second kernel combines them and writes the row
// (reading it again). Fewest blocks a row first, within 512 threads a block (two or more blocks
// an SM, whose reductions then overlap the other's loads), then within 1024; and at least two
// vectors a thread where the row has more than two a thread of a warp (kRowLeastItems): with one
// 16-byte vector a thread, bf16 rows of 4096 (Llama 3.1 8B's hidden size) ran at 71% of the
// device copy rate (RMSNorm forward) and 39% (LayerNorm: 46 registers, two blocks of 512 an
// SM) on an H200 (2026-11-28, scripts/gpu_validate.sh), where fp32 rows of the same length, two
// vectors a thread, ran at 93% and 88%.
struct RegisterRowPlan {
  int threads = 32;
  int items = 1;
  int cluster = 1;
  std::int64_t chunks = 0;  // > 0: the two-kernel split
  std::int64_t chunk_vectors = 0;
};
inline constexpr int kRowRegisterFloats = 32;  // a thread's share of the row, in floats, at most
inline constexpr int kMaxClusterBlocks = 8;    // the portable cluster size (CUDA C++ Guide)
inline constexpr int kSplitThreads = 512;
inline constexpr int kRowLeastItems = 2;  // vectors a thread, where the row has enough

// The largest `items` for `held` operands of `vec`-element vectors (a power of two).
constexpr int max_row_items(int vec, int held) {
  const int items = kRowRegisterFloats / (vec * held);
  return items >= 8 ? 8 : items >= 4 ? 4 : items >= 2 ? 2 : 1;
}

constexpr RegisterRowPlan register_row_plan(std::int64_t vectors, int vec, int held,
                                            bool clusters) {
  const int most = max_row_items(vec, held);
  const int least =
      vectors > std::int64_t{kRowLeastItems} * 32 && most >= kRowLeastItems ? kRowLeastItems : 1;
  for (int cap : {512, kRowMaxThreads})
    for (int cluster = 1; cluster <= (clusters ? kMaxClusterBlocks : 1); cluster *= 2)
      for (int items = least; items <= most; items *= 2) {
        const std::int64_t per_block = (vectors + cluster - 1) / cluster;
        const std::int64_t wanted = (per_block + items - 1) / items;
        const std::int64_t threads = wanted <= 32 ? 32 : (wanted + 31) / 32 * 32;
        if (threads <= cap) return {static_cast<int>(threads), items, cluster, 0, 0};
      }
  const std::int64_t chunk = static_cast<std::int64_t>(kSplitThreads) * most;
  return {kSplitThreads, most, 1, (vectors + chunk - 1) / chunk, chunk};
}

// The dynamic shared memory of streamed_rows_kernel (memops/cuda_memops_rows.cuh) for a plan with
// clusters: two rows' buffers of the block's 16-byte slots. A row that takes a cluster is
// streamed, not held in registers, where this fits the device: with the row in registers a
// thread's reductions left the memory idle, and on an H200 (2026-11-28) cross-entropy at the
// vocabularies of 50,257 to 256,000 ran at 42-51% of the copy rate in bf16 and 63-74% in fp32.
constexpr std::int64_t streamed_slots_bytes(const RegisterRowPlan& plan) {
  return 2 * std::int64_t{plan.threads} * plan.items * kVectorBytes;
}

// ---- the norms' backward, persistent (memops/cuda_memops_norms.cu) -----------------------------

// RMSNorm's and LayerNorm's: each of `blocks` blocks owns `rows_per_block` consecutive rows (the
// last ones fewer, or none), keeps w and its share of dw (and db) in registers across them and
// writes each once, into its partial row; a column reduction adds the partial rows. A thread
// holds `items` 16-byte vectors of a row (its w, its dw and db, the row's dy and x and, where
// they fit, the next row's, loaded while this one is reduced): the fewest threads a block, up to
// 1024, with one vector a thread, then two, and at most 8 elements a thread (two fp32 vectors,
// one of bf16 or fp16: 64 registers a thread hold no more without spilling). Blocks: up to 1024
// threads an SM, at most 8 an SM, one wave. threads 0: longer rows (bf16 past 8192 columns, fp32
// past 8192), which the block-per-row kernel takes.
struct NormBwdPlan {
  int threads = 0;
  int items = 0;
  std::int64_t blocks = 0;
  std::int64_t rows_per_block = 0;
};
inline constexpr int kNormBwdThreadsPerSm = 1024;
inline constexpr int kNormBwdMostBlocksPerSm = 8;
inline constexpr int kNormBwdMostElements = 8;  // a thread's share of a row, at most

constexpr NormBwdPlan norm_bwd_plan(std::int64_t rows, std::int64_t cols, int vec, int sm_count) {
  const std::int64_t vectors = cols / vec;
  for (int items = 1; items * vec <= kNormBwdMostElements; items *= 2) {
    const std::int64_t wanted = (vectors + items - 1) / items;
    const std::int64_t threads = wanted <= 32 ? 32 : (wanted + 31) / 32 * 32;
    if (threads > kRowMaxThreads) continue;
    std::int64_t per_sm = kNormBwdThreadsPerSm / threads;
    per_sm = per_sm < 1 ? 1 : per_sm > kNormBwdMostBlocksPerSm ? kNormBwdMostBlocksPerSm : per_sm;
    const std::int64_t wave = (sm_count < 1 ? 1 : sm_count) * per_sm;
    const std::int64_t blocks = rows < wave ? (rows < 1 ? 1 : rows) : wave;
    return {static_cast<int>(threads), items, blocks, (rows + blocks - 1) / blocks};
  }
  return {};
}

// Whether the persistent backward (norm_bwd_rows_kernel) loads the next row's dy and x while its
// block reduces this row, for `live_words` (norm_bwd_live_words: the words a thread holds with the
// next row loaded ahead) and `items` vectors a thread, on compute capability `cc_major`: where
// ptxas (CUDA 13) fits that in 64 registers (a 1024-thread SM's share) without spilling. Within
// 48 words every kernel fits. LayerNorm's 16-bit kernel of one vector a thread (56) fits on sm_80
// and sm_90 and spills 8 bytes on sm_100; its fp32 kernel of two vectors (56 too) spills 52 and
// more everywhere. Without the next row in flight the memory idles while a block reduces: on an
// H200 (2026-11-28) LayerNorm's bf16 backward ran at 59.8% of the copy, RMSNorm's (46 words,
// loaded ahead) at 78.7%, LayerNorm's fp32 (one vector, 36 words, loaded ahead) at 85%.
OPBENCH_HD constexpr bool norm_bwd_loads_ahead(int live_words, int items, int cc_major) {
  return live_words <= 48 || (items == 1 && live_words <= 56 && cc_major < 10);
}

// ---- the embedding's backward (memops/cuda_memops_embedding.cu) -------------------------------

// A token's sort key: its id, or `vocab` for an id outside [0, vocab) (sorted after every row's
// tokens and in no row's segment).
OPBENCH_HD constexpr std::uint32_t embedding_sort_key(std::int64_t id, std::int64_t vocab) {
  return static_cast<std::uint32_t>(id >= 0 && id < vocab ? id : vocab);
}

// Whether the backward's sort can take `rows` tokens over `vocab` rows: CUB's item count is an
// int, and a key (an id, or vocab as the sentinel) and a segment start are 32-bit.
constexpr bool embedding_sort_fits(std::int64_t rows, std::int64_t vocab) {
  return rows <= std::int64_t{0x7FFFFFFF} && vocab < std::int64_t{0x7FFFFFFF};
}

// The key bits the radix sort looks at: enough for 0 .. vocab (the sentinel): 17 for 128,256.
constexpr int embedding_key_bits(std::int64_t vocab) {
  int bits = 1;
  while (bits < 32 && (std::int64_t{1} << bits) <= vocab)
    ++bits;
  return bits;
}

// The first of the n sorted keys not below v (lower bound): row v's tokens are the sorted
// positions [segment_begin(v), segment_begin(v + 1)).
OPBENCH_HD constexpr std::uint32_t segment_begin(const std::uint32_t* keys, std::uint32_t n,
                                                 std::uint32_t v) {
  std::uint32_t lo = 0, hi = n;
  while (lo < hi) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    if (keys[mid] < v)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// The columns a warp writes of one vocabulary row: 32 lanes x kEmbeddingUnroll vectors of `vec`.
inline constexpr int kEmbeddingUnroll = 2;
OPBENCH_HD constexpr std::int64_t embedding_slice_cols(int vec) {
  return 32 * kEmbeddingUnroll * vec;
}
constexpr std::int64_t embedding_slices(std::int64_t cols, int vec) {
  return (cols + embedding_slice_cols(vec) - 1) / embedding_slice_cols(vec);
}

// The rows kernel's unit of work: a warp takes 32 consecutive vocabulary rows at one slice of
// columns. Lane l reads row (first_row + l)'s segment start and end, so a group's 33 starts are
// one coalesced load and the warp hands them out by shuffles: each row's stores then wait on no
// load of their own. With a warp per (row, slice), every 1 KB written waited first for a
// dependent round trip to L2, and at the H200's measured rate (85% of the copy on the bytes) a
// warp had about 1.3 µs an item: about one such trip under load. Most rows are nothing but those
// stores: 94% of them have no token at 8192 tokens over 128,256 ids.
inline constexpr int kEmbeddingGroupRows = 32;
struct EmbeddingGroup {
  std::int64_t first_row = 0, first_col = 0;
};
OPBENCH_HD constexpr EmbeddingGroup embedding_group(std::int64_t g, std::int64_t slices, int vec) {
  return {g / slices * kEmbeddingGroupRows, g % slices * embedding_slice_cols(vec)};
}
OPBENCH_HD constexpr std::int64_t embedding_groups(std::int64_t vocab, std::int64_t slices) {
  return (vocab + kEmbeddingGroupRows - 1) / kEmbeddingGroupRows * slices;
}

// Where each part of the embedding backward's workspace starts, in bytes, each 256-aligned:
// the keys and positions before and after the sort (rows each), the segment starts (vocab + 1),
// then the sort's temporary storage (`sort_bytes`, CUB's).
struct EmbeddingSortLayout {
  std::int64_t keys_in = 0, positions_in = 0, keys = 0, positions = 0, starts = 0, temp = 0;
  std::int64_t total = 0;
};
constexpr EmbeddingSortLayout embedding_sort_layout(std::int64_t rows, std::int64_t vocab,
                                                    std::int64_t sort_bytes) {
  auto up = [](std::int64_t b) { return (b + 255) / 256 * 256; };
  EmbeddingSortLayout l;
  const std::int64_t tokens = up(rows * 4);
  l.positions_in = tokens;
  l.keys = 2 * tokens;
  l.positions = 3 * tokens;
  l.starts = 4 * tokens;
  l.temp = l.starts + up((vocab + 1) * 4);
  l.total = l.temp + up(sort_bytes);
  return l;
}

struct Grid {
  std::int64_t blocks = 1;
  int threads = kElementwiseThreads;
};

// A grid-stride elementwise kernel over n elements in vectors of `vec`, `unroll` vectors a thread
// at a time: a thread per `unroll` vectors up to `blocks_per_sm` blocks per SM (at most
// kElementwiseBlocksPerSm: what the kernel's registers let an SM hold at once, so that the grid
// is one wave and no SM runs a last, part-filled one), after which threads loop. At least one
// block (the tail of n % vec elements is taken by the first threads).
constexpr Grid elementwise_grid(std::int64_t n, int vec, int sm_count, int unroll = 1,
                                int blocks_per_sm = kElementwiseBlocksPerSm) {
  const std::int64_t vectors = n / vec;
  const std::int64_t per_block = static_cast<std::int64_t>(kElementwiseThreads) * unroll;
  const std::int64_t wanted = (vectors + per_block - 1) / per_block;
  const int per_sm = blocks_per_sm < 1                         ? 1
                     : blocks_per_sm > kElementwiseBlocksPerSm ? kElementwiseBlocksPerSm
                                                               : blocks_per_sm;
  const std::int64_t cap = static_cast<std::int64_t>(sm_count < 1 ? 1 : sm_count) * per_sm;
  const std::int64_t blocks = wanted < cap ? wanted : cap;
  return {blocks < 1 ? 1 : blocks, kElementwiseThreads};
}

// ---- a thread's share of the row reductions (the kernels' code; host-tested) -------------------

// The online softmax normaliser of a part of a row: its max and the sum of e^(x - max), merged
// by rescaling to the larger max (Milakov and Gimelshein, "Online normalizer calculation for
// softmax", 2018). Our kernels for rows whose operands are not 16-byte aligned alike read the row
// once for both with it.
//
// -inf is a masked logit, as torch.softmax takes it: its term is exactly 0 (exp_or_zero(-inf) =
// 0), and a row of nothing but -inf has the max -inf and a sum of 0, whose softmax e^(x - max) /
// sum is NaN in every element (-inf - -inf is NaN), as torch.softmax gives. A part that has seen
// nothing but -inf yet must add 0 to the row, not NaN: its terms are taken against a max of 0
// then (fast_math::exp_origin), and a rescaling by e^(max - max) is 1 without the subtraction.
struct MaxSum {
  float max, sum;
};

OPBENCH_HD inline MaxSum empty_max_sum() {
  return {-INFINITY, 0.0f};
}

// e^(from - to) for from <= to, 1 when they are equal (-inf included).
OPBENCH_HD inline float rescale(float from, float to) {
  return from == to ? 1.0f : memop_math::exp_or_zero(from - to);
}

OPBENCH_HD inline MaxSum max_sum_merge(MaxSum a, MaxSum b) {
  const float m = ::fmaxf(a.max, b.max);
  return {m, a.sum * rescale(a.max, m) + b.sum * rescale(b.max, m)};
}

// N more elements of the row (a vector a thread loaded): the running sum is rescaled once if
// they raise the max.
template <int N>
OPBENCH_HD inline MaxSum max_sum_add(MaxSum acc, const float (&x)[N]) {
  float vm = x[0];
  for (int j = 1; j < N; ++j)
    vm = ::fmaxf(vm, x[j]);
  if (vm > acc.max) {
    acc.sum *= rescale(acc.max, vm);
    acc.max = vm;
  }
  const float shift = fast_math::exp_origin(acc.max);
  for (int j = 0; j < N; ++j)
    acc.sum += memop_math::exp_or_zero(x[j] - shift);
  return acc;
}

// The same merge with the GPU's exp (fast_math::rescale over primitives P): the row kernels'
// split combines its chunks' statistics with it, each chunk's sum taken against its own max
// (fast_math::exp_shifted), the row's written against the merged max.
OPBENCH_HD_TEMPLATE
template <class P>
OPBENCH_HD inline MaxSum fast_max_sum_merge(MaxSum a, MaxSum b) {
  const float m = ::fmaxf(a.max, b.max);
  return {m, a.sum * fast_math::rescale<P>(a.max, m) + b.sum * fast_math::rescale<P>(b.max, m)};
}

// Welford's statistics of N elements (a vector a thread loaded) from registers, two-pass: the
// kernels merge them into the thread's running statistics (Chan et al.) once per vector, not an
// update with a division per element. N = 1 is Welford's push.
template <int N>
OPBENCH_HD inline memop_math::Welford welford_of(const float (&x)[N]) {
  float sum = 0.0f;
  for (int j = 0; j < N; ++j)
    sum += x[j];
  const float mean = sum / static_cast<float>(N);  // N a power of two: exact
  float m2 = 0.0f;
  for (int j = 0; j < N; ++j) {
    const float d = x[j] - mean;
    m2 += d * d;
  }
  return {static_cast<float>(N), mean, m2};
}

// The first pass of the fused residual add + RMSNorm over N elements (a vector a thread loaded):
// x becomes h = x + r, which the kernel stores as the residual out, and the sum of h^2 is the
// thread's share of the row's sum of squares (the second pass recomputes h from x and r, in fp32,
// rather than reading back its rounding to the stored dtype).
template <int N>
OPBENCH_HD inline float residual_add_squares(float (&x)[N], const float (&r)[N]) {
  float squares = 0.0f;
  for (int j = 0; j < N; ++j) {
    x[j] = memop_math::residual_add(x[j], r[j]);
    squares += x[j] * x[j];
  }
  return squares;
}

// ---- launches -------------------------------------------------------------------------------

// Where a launch goes. `shape`, when set, receives what was launched ("rmsnorm_fwd<bf16> x8:
// 4096 blocks x 128 threads (a block per row)") for MemopResult.impl; left null while timing.
struct Launch {
  cudaStream_t stream = nullptr;
  int sm_count = 1;
  std::string* shape = nullptr;
  int cc_major = 0;  // the device's compute capability: thread block clusters from 9
};

// Every pointer is a device address; `t` is the storage type of the activations (fp32, bf16 or
// fp16; run_failure otherwise). Statistics, losses and the rope tables are fp32; ids and targets
// int64. Rows are row-major [rows, cols], cols below 2^31. Nothing here synchronizes.

// The pointers of an elementwise operator (memops/elementwise.hpp): out[0] is also the first
// value an in-place kernel reads (the operand it updates); `in` holds the other inputs, in the
// order of memop_operands. Unused entries stay null.
struct ElementwisePointers {
  const void* in[3] = {};
  void* out[2] = {};
};
// The elementwise kernel of `op` and `pass` over n elements (add, the activations, the eager
// kernels): the grid-stride kernel over 16-byte vectors.
void run_elementwise(DType t, MemOp op, MemPass pass, const ElementwisePointers& p, std::int64_t n,
                     const Launch& l);

void rmsnorm_fwd(DType t, const void* x, const void* w, void* y, float* rstd, std::int64_t rows,
                 std::int64_t cols, const Launch& l);
// h = x + residual (written), y = rmsnorm(h) w, rstd (memop_math::residual_add, rms_scale).
void add_rmsnorm_fwd(DType t, const void* x, const void* residual, const void* w, void* y, void* h,
                     float* rstd, std::int64_t rows, std::int64_t cols, const Launch& l);
// The fp32 workspace of rmsnorm_bwd and layernorm_bwd: a partial dw and db per block (for the
// persistent kernel's blocks or the block-per-row kernel's, whichever are more).
std::int64_t norm_bwd_workspace_floats(DType t, std::int64_t rows, std::int64_t cols, int sm_count);
void rmsnorm_bwd(DType t, const void* dy, const void* x, const void* w, const float* rstd, void* dx,
                 void* dw, float* workspace, std::int64_t rows, std::int64_t cols, const Launch& l);

void layernorm_fwd(DType t, const void* x, const void* w, const void* b, void* y, float* mean,
                   float* rstd, std::int64_t rows, std::int64_t cols, const Launch& l);
void layernorm_bwd(DType t, const void* dy, const void* x, const void* w, const float* mean,
                   const float* rstd, void* dx, void* dw, void* db, float* workspace,
                   std::int64_t rows, std::int64_t cols, const Launch& l);

// The workspace softmax (either pass) and cross-entropy need for rows split over blocks that
// combine their statistics through memory (register_row_plan's split, as planned without
// clusters: a cluster launch that cannot be scheduled falls back to it); 0 when no row is split.
std::int64_t row_stats_workspace_bytes(DType t, MemOp op, MemPass pass, std::int64_t rows,
                                       std::int64_t cols);

void softmax_fwd(DType t, const void* x, void* y, void* workspace, std::int64_t rows,
                 std::int64_t cols, const Launch& l);
void softmax_bwd(DType t, const void* y, const void* dy, void* dx, void* workspace,
                 std::int64_t rows, std::int64_t cols, const Launch& l);

// `vectors` heads of head_dim per row (q's then k's), the row's index its position; cos and sin
// are [rows, head_dim/2] (cpu_memops::rope_tables). backward: rotate by -theta.
void rope(DType t, const void* x, const float* cos, const float* sin, void* y, std::int64_t rows,
          std::int64_t vectors, std::int64_t head_dim, bool backward, const Launch& l);

// loss[r] = logsumexp(x_r) - x_r[target_r]; dlogits = (softmax(x) - onehot) / rows. A target
// outside [0, cols) gives a NaN loss (and no onehot) rather than a read out of bounds.
void cross_entropy(DType t, const void* logits, const std::int64_t* targets, void* dlogits,
                   float* loss, void* workspace, std::int64_t rows, std::int64_t cols,
                   const Launch& l);

// y[r] = table[ids[r]]; an id outside [0, vocab) leaves its row unwritten.
void embedding_fwd(DType t, const void* table, const std::int64_t* ids, void* y, std::int64_t rows,
                   std::int64_t cols, std::int64_t vocab, const Launch& l);
// The workspace embedding_bwd needs, set up once per case: the tokens' sort keys and positions,
// sorted, the vocabulary rows' segment starts, and cub::DeviceRadixSort's temporary storage
// (EmbeddingSortLayout). Asks CUB, so only where a GPU is.
std::int64_t embedding_bwd_workspace_bytes(DType t, std::int64_t rows, std::int64_t cols,
                                           std::int64_t vocab);
// dtable[v] = the sum of dy[r] over the tokens r with ids[r] = v, 0 for the rows no token
// points to, as PyTorch's embedding_dense_backward: the tokens sorted by id (a stable radix sort
// of (id, position) pairs), each row's segment of them found, and a warp per 32 vocabulary rows
// at one slice of columns (embedding_group) sums each row's tokens' dy in fp32, in token order,
// and writes the row once:
// deterministic, every row of the table written once, no memset and no atomics. Tokens with ids
// outside [0, vocab) are skipped. The sort is part of the operator (PyTorch's sorts too) and of
// its time.
void embedding_bwd(DType t, const void* dy, const std::int64_t* ids, void* dtable, void* workspace,
                   std::int64_t rows, std::int64_t cols, std::int64_t vocab, const Launch& l);

// One AdamW step, in place (fp32 parameters, gradient and moments).
void adamw(float* param, const float* grad, float* m, float* v, std::int64_t n,
           const memop_math::AdamWParams& params, const Launch& l);
// fp32 master parameters and moments in place, a bf16 gradient, the bf16 parameters written.
void adamw_bf16(float* param, const std::uint16_t* grad, float* m, float* v,
                std::uint16_t* param_bf16, std::int64_t n, const memop_math::AdamWParams& params,
                const Launch& l);

void cast_to_bf16(const float* x, std::uint16_t* y, std::int64_t n, const Launch& l);
void cast_to_fp32(const std::uint16_t* x, float* y, std::int64_t n, const Launch& l);

// y = e4m3(x * *scale) (saturating at 448) and *amax = max |x|, in one pass over x; amax is
// zeroed on the stream first (part of the operation).
void fp8_quantize(const std::uint16_t* x, const float* scale, std::uint8_t* y, float* amax,
                  std::int64_t n, const Launch& l);

// ---- input preparation (untimed) --------------------------------------------------------------

// x *= factor over n elements of t (fp32, bf16, fp16): the inputs' spread, a power of two (exact).
void scale_elements(DType t, void* x, std::int64_t n, float factor, cudaStream_t stream);
// v = memop_inputs::adamw_second_moment(m) over n fp32 elements: the CPU provider's very v.
void derive_second_moment(const float* m, float* v, std::int64_t n, cudaStream_t stream);

// ids[i] = memop_inputs::uniform_index(seed, set, i, range) for i < n.
void fill_indices(std::int64_t* ids, std::int64_t n, std::uint64_t seed, std::int64_t set,
                  std::int64_t range, cudaStream_t stream);

}  // namespace opbench::cuda_memops
