/* A plain MPI loop over all_reduce, all_gather or reduce_scatter (fp32, out of place), timed the
 * way bench_ccl times a case: 5 warm-up calls, then samples of: barrier, n calls back to back,
 * elapsed / n, mean over ranks; the mean over samples. Sizes as bench_ccl and nccl-tests count
 * them: all_reduce the buffer, all_gather the gathered result, reduce_scatter the input. The
 * yardstick that shows what bench_ccl's own machinery adds; built and run by the
 * bench/peers/ccl_vs_mpi_loop*.sh scripts.
 *
 * KEEP_PAGES 1 makes glibc's malloc keep its pages as bench_ccl's processes do
 * (common/host_allocator.hpp: M_MMAP_MAX 0, M_TRIM_THRESHOLD -1), before MPI starts; 0 leaves
 * glibc's defaults, where Open MPI's temporary buffers cost page faults every call.
 *   mpi_collective_loop OPS MIN_BYTES MAX_BYTES FACTOR [ITERS=20] [SAMPLES=5] [KEEP_PAGES=1]
 * prints "plain OP SIZE US" on rank 0 for each op (comma-separated) and size. */
#include <malloc.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One call of `op` on `bytes` (as bench_ccl counts them) over `ranks` ranks. */
static void call(const char* op, const float* send, float* recv, size_t bytes, int ranks) {
  const size_t all = bytes / sizeof(float), share = all / (size_t)ranks;
  if (strcmp(op, "all_reduce") == 0)
    MPI_Allreduce(send, recv, (int)all, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  else if (strcmp(op, "all_gather") == 0)
    MPI_Allgather(send, (int)share, MPI_FLOAT, recv, (int)share, MPI_FLOAT, MPI_COMM_WORLD);
  else
    MPI_Reduce_scatter_block(send, recv, (int)share, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s OPS MIN_BYTES MAX_BYTES FACTOR [ITERS] [SAMPLES] [KEEP_PAGES]\n", argv[0]);
    return 2;
  }
  const int keep = argc > 7 ? atoi(argv[7]) : 1;
  if (keep && (mallopt(M_MMAP_MAX, 0) != 1 || mallopt(M_TRIM_THRESHOLD, -1) != 1)) {
    fprintf(stderr, "mallopt refused to keep pages\n");
    return 1;
  }
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const size_t min_bytes = strtoull(argv[2], NULL, 10), max_bytes = strtoull(argv[3], NULL, 10);
  const size_t factor = strtoull(argv[4], NULL, 10);
  const int iters = argc > 5 ? atoi(argv[5]) : 20, samples = argc > 6 ? atoi(argv[6]) : 5;
  const int warmup = 5;
  char* ops = strdup(argv[1]);
  for (char* op = strtok(ops, ","); op; op = strtok(NULL, ",")) {
    for (size_t requested = min_bytes; requested <= max_bytes; requested *= factor) {
      /* whole elements per rank, as bench_ccl rounds a size */
      const size_t bytes = requested / (sizeof(float) * size) * sizeof(float) * size;
      /* page-aligned, as bench_ccl's host buffers are */
      float* send = aligned_alloc(4096, bytes);
      float* recv = aligned_alloc(4096, bytes);
      for (size_t i = 0; i < bytes / sizeof(float); ++i) send[i] = (float)((rank + i) % 7);
      memset(recv, 0, bytes);
      for (int i = 0; i < warmup; ++i) call(op, send, recv, bytes, size);
      double sum = 0;
      for (int s = 0; s < samples; ++s) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; ++i) call(op, send, recv, bytes, size);
        double us = (MPI_Wtime() - t0) / iters * 1e6, total = 0;
        MPI_Allreduce(&us, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        sum += total / size;
      }
      if (rank == 0) printf("plain %s %zu %.3f\n", op, bytes, sum / samples);
      free(send);
      free(recv);
      if (factor < 2) break;
    }
  }
  free(ops);
  MPI_Finalize();
  return 0;
}
