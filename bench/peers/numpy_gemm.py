#!/usr/bin/python3
"""Times numpy's matmul (the same OpenBLAS as bench_gemm's CPU provider) the way bench_gemm
times a GEMM: warm-up, then samples until the relative standard error of the mean is under 1%
(or --max-time passes), reporting the mean. Operands are row-major like bench_gemm's: layout
NT means C = A · Bᵀ with B stored n x k (a transposed view, which numpy hands to BLAS as a
transpose flag, not a copy). Prints one line: numpy m n k layout dtype mean_us gflops samples.

Usage: bench/peers/numpy_gemm.py M N K [--layout NN|NT|TN|TT] [--dtype fp32|fp64]
"""
import statistics
import time

import numpy as np

from peer_common import gemm_arguments, sample_until_precise


def operands(m, n, k, layout, dtype):
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (k, m) if layout[0] == "T" else (m, k)).astype(dtype)
    b = rng.uniform(-1, 1, (n, k) if layout[1] == "T" else (k, n)).astype(dtype)
    return (a.T if layout[0] == "T" else a), (b.T if layout[1] == "T" else b)


def main() -> None:
    args = gemm_arguments(__doc__, ["fp32", "fp64"], max_time=2.0)
    dtype = np.float32 if args.dtype == "fp32" else np.float64
    a, b = operands(args.m, args.n, args.k, args.layout, dtype)
    c = np.empty((args.m, args.n), dtype=dtype)

    start = time.perf_counter()
    warmups = 0
    while warmups < 1 or time.perf_counter() - start < 0.05:
        np.matmul(a, b, out=c)
        warmups += 1

    def one() -> list:
        t0 = time.perf_counter()
        np.matmul(a, b, out=c)
        return [(time.perf_counter() - t0) * 1e6]

    samples = sample_until_precise(one, args.max_time, min_samples=5, min_time=0.2)
    mean_us = statistics.mean(samples)
    gflops = 2 * args.m * args.n * args.k / mean_us / 1e3
    print(f"numpy {args.m} {args.n} {args.k} {args.layout} {args.dtype} mean_us={mean_us:.1f} "
          f"gflops={gflops:.1f} samples={len(samples)}")


if __name__ == "__main__":
    main()
