/* CPU BLAS callers for the capture's tests (check_capture.py), with counts fixed by the mode:
 *   threads T N  T threads, thread t runs N cblas_sgemm calls of m = 8 (t + 1), n = 24, k = 16
 *                row-major NN, and N sgemm_ calls of column-major m = 40, n = 8 (t + 1), k = 12 TN
 *   fork         3 cblas_dgemm 32x32x32 in the parent, fork; the child runs 2 of 16x16x16 and
 *                exits; the parent runs 1 more 32x32x32 after the child ended
 *   loop S       cblas_sgemm 64x64x64 calls for S seconds (the killed-job test kills it first)
 *   overhead N   N cblas_sgemm calls of 1 x 1 x 1, 5 rounds; prints the fastest round's ns per
 *                call (with and without the capture: the capture's own cost per call)
 *   hungexit DIR [term]
 *                fork; the child runs 1 cblas_dgemm 16x16x16, puts FIFOs without a reader where
 *                the capture's exit write in DIR puts its temporary files (a folder that stopped
 *                answering) and leaves by _exit(7), or with `term` waits for the parent's SIGTERM;
 *                the parent prints how the child ended and how long after its _exit or SIGTERM
 * Every mode prints a checksum of its results, the same with and without the capture, and an
 * exit code of 3 (a program's own code, which the capture must keep). */
#include <cblas.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void sgemm_(const char*, const char*, const int*, const int*, const int*, const float*,
            const float*, const int*, const float*, const int*, const float*, float*, const int*);

static float A[4096], B[4096];
static double sums[64];
static int calls_per_thread;

static void fill(void) {
  for (int i = 0; i < 4096; ++i) {
    A[i] = (float)((i * 7) % 13) / 13.0f;
    B[i] = (float)((i * 5) % 11) / 11.0f;
  }
}

static void* worker(void* arg) {
  const int t = (int)(long)arg;
  float C[4096];
  double s = 0;
  for (int i = 0; i < calls_per_thread; ++i) {
    const int m = 8 * (t + 1);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, 24, 16, 1.0f, A, 16, B, 24, 0.0f, C,
                24);
    s += C[0] + C[m * 24 - 1];
    const int cm = 40, cn = 8 * (t + 1), ck = 12, lda = 12, ldb = 12, ldc = 40;
    const float one = 1.0f, zero = 0.0f;
    sgemm_("T", "N", &cm, &cn, &ck, &one, A, &lda, B, &ldb, &zero, C, &ldc);
    s += C[0] + C[cm * cn - 1];
  }
  sums[t] = s;
  return NULL;
}

static double dgemm_sum(int n) {
  static double a[1024], b[1024], c[1024];
  for (int i = 0; i < n * n; ++i) {
    a[i] = (double)(i % 17);
    b[i] = (double)(i % 19);
  }
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a, n, b, n, 0.0, c, n);
  return c[0] + c[n * n - 1];
}

int main(int argc, char** argv) {
  fill();
  if (argc >= 4 && strcmp(argv[1], "threads") == 0) {
    const int threads = atoi(argv[2]);
    calls_per_thread = atoi(argv[3]);
    pthread_t tid[64];
    for (long t = 0; t < threads && t < 64; ++t)
      pthread_create(&tid[t], NULL, worker, (void*)t);
    double s = 0;
    for (int t = 0; t < threads && t < 64; ++t) {
      pthread_join(tid[t], NULL);
      s += sums[t];
    }
    printf("checksum %.9g\n", s);
    return 3;
  }
  if (argc >= 2 && strcmp(argv[1], "fork") == 0) {
    double s = 0;
    for (int i = 0; i < 3; ++i)
      s += dgemm_sum(32);
    fflush(stdout);
    const pid_t child = fork();
    if (child == 0) {
      double cs = dgemm_sum(16) + dgemm_sum(16);
      printf("child checksum %.9g\n", cs);
      exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    s += dgemm_sum(32);
    printf("parent checksum %.9g child pid %d\n", s, (int)child);
    return 3;
  }
  if (argc >= 3 && strcmp(argv[1], "loop") == 0) {
    const double seconds = atof(argv[2]);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    float C[4096];
    long n = 0;
    do {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 64, 64, 64, 1.0f, A, 64, B, 64, 0.0f,
                  C, 64);
      ++n;
      clock_gettime(CLOCK_MONOTONIC, &t1);
    } while ((double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec) < seconds);
    printf("calls %ld\n", n);
    return 3;
  }
  if (argc >= 3 && strcmp(argv[1], "hungexit") == 0) {
    const int by_term = argc >= 4 && strcmp(argv[3], "term") == 0;
    int ready[2];
    if (pipe(ready) != 0) return 2;
    fflush(stdout);
    const pid_t child = fork();
    if (child == 0) {
      const double cs = dgemm_sum(16);
      char host[256] = {0}, path[4096];
      gethostname(host, sizeof host - 1);
      char* dot = strchr(host, '.');
      if (dot) *dot = '\0';
      const char* exts[] = {"csv", "jsonl", "prom"};
      for (int i = 0; i < 3; ++i) {
        const int pid = (int)getpid();
        snprintf(path, sizeof path, "%s/.capture-%s-pid%d.%s.tmp%d", argv[2], host, pid, exts[i],
                 pid);
        mkfifo(path, 0600);
      }
      if (!by_term) _exit(cs != 0 ? 7 : 8);
      if (write(ready[1], "r", 1) != 1) _exit(9);
      for (;;)
        pause();
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (by_term) {
      char byte;
      if (read(ready[0], &byte, 1) != 1) return 2;
      clock_gettime(CLOCK_MONOTONIC, &t0);
      kill(child, SIGTERM);
    }
    int status = 0;
    waitpid(child, &status, 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("child %s %d after %.1f s\n", WIFEXITED(status) ? "status" : "signal",
           WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
           (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    return 3;
  }
  if (argc >= 3 && strcmp(argv[1], "overhead") == 0) {
    const long n = atol(argv[2]);
    double best = 1e30;
    float c = 0;
    for (int round = 0; round < 5; ++round) {
      struct timespec t0, t1;
      clock_gettime(CLOCK_MONOTONIC, &t0);
      for (long i = 0; i < n; ++i)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 1, 1, 1, 1.0f, A, 1, B, 1, 0.0f, &c,
                    1);
      clock_gettime(CLOCK_MONOTONIC, &t1);
      const double ns =
          ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / (double)n;
      if (ns < best) best = ns;
    }
    printf("ns_per_call %.1f checksum %.3g\n", best, (double)c);
    return 3;
  }
  fprintf(
      stderr,
      "usage: blas_calls threads T N | fork | loop SECONDS | overhead N | hungexit DIR [term]\n");
  return 2;
}
