/* A CBLAS routine built on the Fortran one, as the reference CBLAS is: its cblas_sgemm calls
 * sgemm_ inside. nested_calls links it ahead of OpenBLAS, so under the capture one cblas_sgemm
 * call reaches the capture's sgemm_ hook from inside the cblas_sgemm hook: the reentrancy guard
 * must count it once, as cblas_sgemm. Row-major only (what nested_calls asks for). */
void sgemm_(const char*, const char*, const int*, const int*, const int*, const float*,
            const float*, const int*, const float*, const int*, const float*, float*, const int*);

void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float* a,
                 int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  (void)order; /* 101, row-major: C = op(A) op(B) is column-major Cᵀ = op(B)ᵀ op(A)ᵀ */
  const char* tra = tb == 111 ? "N" : "T";
  const char* trb = ta == 111 ? "N" : "T";
  sgemm_(tra, trb, &n, &m, &k, &alpha, b, &ldb, a, &lda, &beta, c, &ldc);
}
