#!/usr/bin/python3
"""Times PyTorch on the CPU, fp32, on bench_memops's row operators and AdamW, each called the way
a training step calls it, on ROWS x COLS elements (n = ROWS * COLS):
  layernorm fwd      F.layer_norm(x, (COLS,), w, b) under no_grad: aten::native_layer_norm, which
                     writes y and the fp32 mean and rstd, as ours does
  layernorm bwd      torch.ops.aten.native_layer_norm_backward(dy, x, (COLS,), mean, rstd, w, b,
                     [True] * 3) -> dx, dw, db: the kernel autograd's NativeLayerNormBackward0 runs.
                     Not y.backward(dy, retain_graph=True): that also runs the autograd engine and,
                     from the second call on, accumulates into x.grad (an extra read and write of n
                     elements) unless the grads are reset, which costs more again
  softmax fwd        F.softmax(x, dim=-1) under no_grad: aten::_softmax
  softmax bwd        torch.ops.aten._softmax_backward_data(dy, y, -1, fp32): SoftmaxBackward0's
                     kernel, for the reasons above
  swiglu fwd         F.silu(g) * u under no_grad: two kernels in eager PyTorch (silu writes an
                     n-element temporary that mul reads back; 5n*4 bytes moved for our 3n*4)
  cross_entropy      loss and the logits' gradient, as our fused op computes them:
                     torch.autograd.grad(F.cross_entropy(logits, targets), logits), logits
                     [ROWS, COLS] and int64 targets, mean reduction as in training: the four
                     kernels autograd runs (_log_softmax, nll_loss_forward, nll_loss_backward,
                     _log_softmax_backward_data) and no accumulation into logits.grad
  adamw              torch.optim.AdamW([p], lr=1e-3, weight_decay=0.1, foreach=True, and fused=False
                     where the version has it) on one fp32 parameter of n elements with its
                     gradient set; times optimizer.step() after a warm-up that creates the moments.
                     --adamw single: the single-tensor loop, PyTorch's default for CPU parameters
Bytes are the operator's (memops/memop.cpp), not what PyTorch moves: GB/s = those bytes / time.

Timing: torch.set_num_threads(T) (default: every core, as bench_memops); a warm-up of at least
3 calls and 1 s (the first calls on new memory are slow here), then REPEATS calls each timed with
time.perf_counter_ns, repeated on the same inputs (no buffer rotation).
PyTorch allocates every output and temporary afresh, and glibc serves allocations over 32 MiB
with mmap and unmaps them at free, so each call would page its outputs in anew (about 14 ms per
64 MiB output here, more than most of these operators take), a cost bench_memops does not pay
(its outputs are allocated once). So before importing torch the script tells glibc (mallopt) to
serve everything from the heap and keep it: each output lands on memory already paged in, as with
a caching allocator. --fresh-pages keeps glibc's default and times the page faults too.
Prints one line: torch OP PASS ROWS COLS fp32 mean_us= median_us= bytes= gbps= samples= threads=
alloc=heap|fresh (gbps: bytes / mean).

Usage: bench/peers/torch_memops.py layernorm|softmax|swiglu|cross_entropy|adamw ROWS COLS
         [--pass fwd|bwd] [--repeats R] [--threads T] [--fresh-pages] [--adamw foreach|single]
"""
import argparse
import ctypes
import ctypes.util
import inspect
import os
import statistics
import sys

from peer_common import host_samples_us

BACKWARD = {"layernorm", "softmax"}  # the ops whose bwd this peer times
OPS = ("layernorm", "softmax", "swiglu", "cross_entropy", "adamw")
F32, ID = 4, 8  # fp32 statistics and state; int64 targets


def keep_freed_memory() -> bool:
    """glibc: no mmap for large blocks (M_MMAP_MAX = 0), no trimming of the heap (M_TRIM_THRESHOLD
    as large as it goes), so a freed output's pages serve the next call's."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.mallopt(-4, 0) == 1 and libc.mallopt(-1, 2**31 - 1) == 1
    except (OSError, AttributeError):
        return False


def op_bytes(op, pas, rows, cols):
    """Read + write bytes of the operator in fp32 (memops/memop.cpp's formulas)."""
    n, s = rows * cols, 4
    fwd = pas == "fwd"
    if op == "layernorm":
        if fwd:
            return n * s + 2 * cols * s + n * s + 2 * rows * F32
        return 2 * n * s + cols * s + 2 * rows * F32 + n * s + 2 * cols * s
    if op == "softmax":
        return 2 * n * s if fwd else 3 * n * s
    if op == "swiglu":
        return 3 * n * s
    if op == "cross_entropy":
        return n * s + rows * ID + n * s + rows * F32
    return 16 * n + 12 * n  # adamw


def make_call(torch, op, pas, rows, cols, adamw_impl):
    """The timed call, its inputs bound; everything it reads is created here."""
    import torch.nn.functional as F

    g = torch.Generator().manual_seed(1)

    def randn(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float32)

    if op == "adamw":
        p = torch.nn.Parameter(randn(rows * cols))
        p.grad = randn(rows * cols) * 1e-3
        kwargs = dict(lr=1e-3, weight_decay=0.1, foreach=adamw_impl == "foreach")
        if "fused" in inspect.signature(torch.optim.AdamW).parameters:
            kwargs["fused"] = False
        opt = torch.optim.AdamW([p], **kwargs)
        return opt.step
    if op == "cross_entropy":
        logits = randn(rows, cols).requires_grad_(True)
        targets = torch.randint(0, cols, (rows,), generator=g, dtype=torch.int64)
        return lambda: torch.autograd.grad(F.cross_entropy(logits, targets), logits)

    x = randn(rows, cols)
    if op == "swiglu":
        u = randn(rows, cols)
        return lambda: F.silu(x) * u
    if op == "softmax":
        if pas == "fwd":
            return lambda: F.softmax(x, dim=-1)
        y, dy = F.softmax(x, dim=-1), randn(rows, cols)
        return lambda: torch.ops.aten._softmax_backward_data(dy, y, -1, torch.float32)
    w, b = randn(cols), randn(cols)
    if pas == "fwd":
        return lambda: F.layer_norm(x, (cols,), w, b, eps=1e-5)
    _, mean, rstd = torch.ops.aten.native_layer_norm(x, [cols], w, b, 1e-5)
    dy = randn(rows, cols)
    return lambda: torch.ops.aten.native_layer_norm_backward(
        dy, x, [cols], mean, rstd, w, b, [True, True, True])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("op", choices=OPS)
    parser.add_argument("rows", type=int)
    parser.add_argument("cols", type=int)
    parser.add_argument("--pass", dest="pas", default="fwd", choices=["fwd", "bwd"])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--fresh-pages", action="store_true",
                        help="keep glibc's default: every large output is paged in anew")
    parser.add_argument("--adamw", default="foreach", choices=["foreach", "single"])
    args = parser.parse_args()
    if args.rows < 1 or args.cols < 1 or args.repeats < 1 or args.threads < 1:
        parser.error("ROWS, COLS, --repeats and --threads must be at least 1")
    if args.pas == "bwd" and args.op not in BACKWARD:
        print(f"error: {args.op} bwd is not covered (bwd: {', '.join(sorted(BACKWARD))}; "
              "cross_entropy's fwd is loss and gradient)", file=sys.stderr)
        return 2
    alloc = "fresh" if args.fresh_pages or not keep_freed_memory() else "heap"

    import torch

    torch.set_num_threads(args.threads)
    call = make_call(torch, args.op, args.pas, args.rows, args.cols, args.adamw)
    with torch.no_grad() if args.op != "cross_entropy" else torch.enable_grad():
        samples = host_samples_us(call, args.repeats)
    nbytes = op_bytes(args.op, args.pas, args.rows, args.cols)
    mean_us = statistics.mean(samples)
    print(f"torch {args.op} {args.pas} {args.rows} {args.cols} fp32 mean_us={mean_us:.1f} "
          f"median_us={statistics.median(samples):.1f} bytes={nbytes} "
          f"gbps={nbytes / mean_us / 1e3:.2f} samples={len(samples)} "
          f"threads={torch.get_num_threads()} alloc={alloc}"
          + (f" adamw={args.adamw}" if args.op == "adamw" else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
