#!/usr/bin/python3
"""Times numpy on bench_memops's elementwise operators, fp32, on ROWS x COLS elements:
  add           np.add(x, y, out=z)                  bytes 12n (x, y read; z written)
  copy          np.copyto(dst, src)                  bytes 8n
  cast_to_fp32  np.copyto(out32, in16), in16 fp16    bytes 6n
numpy has no bfloat16, so the cast is fp16 -> fp32 (--cast fp16, the default): the same 2 bytes
read and 4 written per element as bench_memops's cast_to_fp32 (bf16 -> fp32), but a different
conversion, which numpy (1.24 here) does element by element, slower than the memory. --cast bf16
does the real bf16 -> fp32 in one numpy call: bf16 bits held as uint16, widened and shifted into
the high half of each fp32, np.left_shift(in_u16, 16, out=out32.view(np.uint32),
dtype=np.uint32), bit-exact and the same bytes.

Timing: the outputs are allocated once (out=, no allocation in the timed call); a warm-up of at
least 3 calls and 1 s (the first calls on new memory are slow here), then REPEATS calls each
timed with time.perf_counter_ns, repeated on the same arrays (no buffer rotation as bench_memops
does: at 16M elements the arrays are 64 MiB each, and rotating 4 sets changed numpy's add by
about 5% here).
--threads T splits the rows into T contiguous blocks run at once from a thread pool (numpy
releases the GIL inside these loops), so the peer uses as many cores as bench_memops's CPU
provider (every core); --threads 1 is numpy's own single-threaded call.
Prints one line: numpy OP fwd ROWS COLS DTYPE mean_us= median_us= bytes= gbps= samples= threads=
(gbps: bytes / mean).

Usage: bench/peers/numpy_memops.py add|copy|cast_to_fp32 ROWS COLS [--repeats R] [--threads T]
                                   [--cast fp16|bf16] [--pass fwd]
"""
import argparse
import os
import statistics
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from peer_common import host_samples_us

OPS = ("add", "copy", "cast_to_fp32")


def operands(op, rows, cols, cast):
    """The inputs and output of one call, and the operator's bytes (memops/memop.cpp)."""
    rng = np.random.default_rng(1)
    n = rows * cols
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    if op == "add":
        y = rng.standard_normal((rows, cols), dtype=np.float32)
        return (x, y), np.empty_like(x), 12 * n, "fp32"
    if op == "copy":
        return (x,), np.empty_like(x), 8 * n, "fp32"
    out = np.empty((rows, cols), dtype=np.float32)
    if cast == "fp16":
        return (x.astype(np.float16),), out, 6 * n, "fp16->fp32"
    bf16_bits = (x.view(np.uint32) >> 16).astype(np.uint16)  # truncated to bf16
    return (bf16_bits,), out.view(np.uint32), 6 * n, "bf16->fp32"


def kernel(op, cast):
    if op == "add":
        return lambda ins, out: np.add(ins[0], ins[1], out=out)
    if op == "cast_to_fp32" and cast == "bf16":
        return lambda ins, out: np.left_shift(ins[0], 16, out=out, dtype=np.uint32)
    return lambda ins, out: np.copyto(out, ins[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("op", choices=OPS)
    parser.add_argument("rows", type=int)
    parser.add_argument("cols", type=int)
    parser.add_argument("--pass", dest="pas", default="fwd", choices=["fwd"],
                        help="only fwd: these operators have no backward")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                        help="row blocks run at once (default: every core, as bench_memops)")
    parser.add_argument("--cast", default="fp16", choices=["fp16", "bf16"],
                        help="cast_to_fp32: numpy's fp16 -> fp32, or bf16 bits shifted (see above)")
    args = parser.parse_args()
    if args.rows < 1 or args.cols < 1 or args.repeats < 1 or args.threads < 1:
        parser.error("ROWS, COLS, --repeats and --threads must be at least 1")
    ins, out, nbytes, dtype = operands(args.op, args.rows, args.cols, args.cast)
    run = kernel(args.op, args.cast)

    threads = min(args.threads, args.rows)
    if threads == 1:
        call = lambda: run(ins, out)  # noqa: E731
    else:
        bounds = [args.rows * t // threads for t in range(threads + 1)]
        blocks = [(tuple(a[lo:hi] for a in ins), out[lo:hi]) for lo, hi in zip(bounds, bounds[1:])]
        pool = ThreadPoolExecutor(max_workers=threads)

        def call():
            for f in [pool.submit(run, i, o) for i, o in blocks]:
                f.result()

    samples = host_samples_us(call, args.repeats)
    mean_us = statistics.mean(samples)
    print(f"numpy {args.op} fwd {args.rows} {args.cols} {dtype} mean_us={mean_us:.1f} "
          f"median_us={statistics.median(samples):.1f} bytes={nbytes} "
          f"gbps={nbytes / mean_us / 1e3:.2f} samples={len(samples)} threads={threads}")


if __name__ == "__main__":
    main()
