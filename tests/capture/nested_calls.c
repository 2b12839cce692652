/* 4 cblas_sgemm calls (row-major 20 x 30 x 10, NN) through libnested_blas.so's cblas_sgemm,
 * which calls sgemm_ inside: the capture must show 4 cblas_sgemm calls and no sgemm_ row. */
#include <stdio.h>

void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float* a,
                 int lda, const float* b, int ldb, float beta, float* c, int ldc);

int main(void) {
  static float a[200], b[300], c[600];
  for (int i = 0; i < 200; ++i)
    a[i] = (float)(i % 7);
  for (int i = 0; i < 300; ++i)
    b[i] = (float)(i % 5);
  double s = 0;
  for (int i = 0; i < 4; ++i) {
    cblas_sgemm(101, 111, 111, 20, 30, 10, 1.0f, a, 10, b, 30, 0.0f, c, 30);
    s += c[0] + c[599];
  }
  printf("checksum %.9g\n", s);
  return 0;
}
