/* A plain MPI_Allreduce loop, timed the way bench_ccl times a case (5 warm-up calls, then
 * samples of: barrier, n calls back to back, elapsed / n, mean over ranks; the mean over samples),
 * for sizes from 4 KiB to 1 MiB of fp32. The yardstick that shows what bench_ccl's own machinery
 * adds. Built and run by bench/peers/ccl_vs_mpi_loop.sh.
 *   mpi_allreduce_loop [ITERS=20] [SAMPLES=5] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int iters = argc > 1 ? atoi(argv[1]) : 20, samples = argc > 2 ? atoi(argv[2]) : 5;
  const int warmup = 5;
  for (size_t bytes = 4096; bytes <= (1u << 20); bytes *= 4) {
    size_t count = bytes / sizeof(float);
    /* page-aligned, as bench_ccl's host buffers are */
    float* send = aligned_alloc(4096, bytes);
    float* recv = aligned_alloc(4096, bytes);
    for (size_t i = 0; i < count; ++i) send[i] = (float)((rank + i) % 7);
    for (int i = 0; i < warmup; ++i) MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double sum = 0;
    for (int s = 0; s < samples; ++s) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      for (int i = 0; i < iters; ++i) MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      double us = (MPI_Wtime() - t0) / iters * 1e6, total = 0;
      MPI_Allreduce(&us, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      sum += total / size;
    }
    if (rank == 0) printf("plain %zu %.3f\n", bytes, sum / samples);
    free(send);
    free(recv);
  }
  MPI_Finalize();
  return 0;
}
