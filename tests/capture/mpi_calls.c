/* A fixed sequence of MPI calls with known counts and sizes, for the capture's MPI test
 * (tests/integration/capture.cmake): every rank makes the same calls, so each rank's table must
 * hold exactly the counts listed in check_capture.py. It prints a checksum of the results, which
 * must be the same with and without the capture. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  float* f = calloc(4096, sizeof(float));
  float* g = calloc(4096 * 2, sizeof(float));
  double* d = calloc(1024, sizeof(double));
  int* ints = calloc(1024, sizeof(int));
  double checksum = 0;
  for (int i = 0; i < 4096; ++i)
    f[i] = (float)(rank + 1);
  /* all_reduce: 5 x 1024 floats (4096 bytes) in place and 1 out of place, 3 x 16 floats (64
   * bytes), 2 x 8 doubles max */
  for (int i = 0; i < 5; ++i)
    MPI_Allreduce(MPI_IN_PLACE, f, 1024, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(f, g, 1024, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  for (int i = 0; i < 3; ++i)
    MPI_Allreduce(MPI_IN_PLACE, f, 16, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  for (int i = 0; i < 2; ++i)
    MPI_Allreduce(MPI_IN_PLACE, d, 8, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  checksum += f[0] + f[1023] + d[0];
  /* all_gather: 2 x 256 ints per rank (bytes n x 256 x 4) */
  for (int i = 0; i < 2; ++i)
    MPI_Allgather(ints, 256, MPI_INT, ints + 256, 256, MPI_INT, MPI_COMM_WORLD);
  /* reduce_scatter_block: 4 x 512 floats per rank */
  for (int i = 0; i < 4; ++i)
    MPI_Reduce_scatter_block(f, g, 512, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  checksum += g[0];
  /* bcast: 4 x 100 doubles; reduce: 1 x 64 floats */
  for (int i = 0; i < 4; ++i)
    MPI_Bcast(d, 100, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Reduce(f, g, 64, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
  /* alltoall: 3 x 128 floats per peer */
  for (int i = 0; i < 3; ++i)
    MPI_Alltoall(f, 128, MPI_FLOAT, g, 128, MPI_FLOAT, MPI_COMM_WORLD);
  /* ring: 6 x (Isend + Irecv of 200 floats, Waitall), 2 x Sendrecv of 50 doubles */
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  for (int i = 0; i < 6; ++i) {
    MPI_Request reqs[2];
    MPI_Irecv(g, 200, MPI_FLOAT, prev, 7, MPI_COMM_WORLD, &reqs[0]);
    MPI_Isend(f, 200, MPI_FLOAT, next, 7, MPI_COMM_WORLD, &reqs[1]);
    MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
  }
  for (int i = 0; i < 2; ++i)
    MPI_Sendrecv(d, 50, MPI_DOUBLE, next, 9, d + 512, 50, MPI_DOUBLE, prev, 9, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
  /* nonblocking all_reduce: 2 x 2048 floats, completed by MPI_Wait; 1 by MPI_Test in a loop */
  for (int i = 0; i < 2; ++i) {
    MPI_Request r;
    MPI_Iallreduce(MPI_IN_PLACE, f, 2048, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
  {
    MPI_Request r;
    int done = 0;
    MPI_Iallreduce(MPI_IN_PLACE, f, 2048, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r);
    while (!done)
      MPI_Test(&r, &done, MPI_STATUS_IGNORE);
  }
  checksum += f[0] + g[0];
  /* a communicator of the same ranks in reverse order (the split's key): 1 x 32 floats in place;
   * its ranks are still consecutive */
  {
    MPI_Comm reversed;
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &reversed);
    MPI_Allreduce(MPI_IN_PLACE, f, 32, MPI_FLOAT, MPI_SUM, reversed);
    MPI_Comm_free(&reversed);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  printf("rank %d checksum %.6g\n", rank, checksum);
  free(f);
  free(g);
  free(d);
  free(ints);
  MPI_Finalize();
  return 0;
}
