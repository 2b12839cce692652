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

On a GPU (--device cuda, --dtype bf16|fp32; PyTorch with CUDA) more operators are covered, each
as PyTorch's own kernel for what bench_memops's operator computes (GPU_OPS below: rmsnorm is
F.rms_norm and its autograd backward, silu's backward aten::silu_backward, embedding's backward
aten::embedding_dense_backward over a table of --vocab rows, adamw torch.optim.AdamW(fused=True)
on fp32 state whatever --adamw says, the casts Tensor.to, the eager kernels their in-place or
out= calls). Where PyTorch runs an operator as several kernels (cross-entropy's four, SwiGLU's
two each way), it is timed so: the row compares our kernel with eager PyTorch, not with a fused
kernel of another library. Timing there as bench_memops times a GPU operator: inputs (and the
outputs PyTorch allocates, each kept until its set comes round again, so that the caching
allocator cannot hand the next call the block the last one wrote in L2) rotate over as many sets
of the row's own pass as make 4 times the device's L2 at least (an embedding lookup's table
shared, as ours), a warm-up of at least 3 calls and 0.2 s, then REPEATS calls each timed by a
pair of CUDA events on the current stream, the rotation going on from the warm-up
(gpu_samples_us). The line adds device=cuda.

Usage: bench/peers/torch_memops.py OP ROWS COLS [--pass fwd|bwd] [--repeats R] [--threads T]
         [--fresh-pages] [--adamw foreach|single] [--device cpu|cuda] [--dtype fp32|bf16]
         [--vocab V]
  OP on the CPU: layernorm, softmax, swiglu, cross_entropy, adamw; on cuda also rmsnorm,
  silu, gelu, embedding, add, mul, scale, sqrt, fill, copy, cast_to_bf16, cast_to_fp32,
  scale_inplace, axpy_inplace, addcdiv_inplace
"""
import argparse
import ctypes
import ctypes.util
import inspect
import os
import statistics
import sys

from peer_common import gpu_samples_us, host_samples_us

BACKWARD = {"layernorm", "softmax"}  # the ops whose bwd this peer times
OPS = ("layernorm", "softmax", "swiglu", "cross_entropy", "adamw")
GPU_OPS = OPS + ("rmsnorm", "silu", "gelu", "embedding", "add", "mul", "scale", "sqrt", "fill",
                 "copy", "cast_to_bf16", "cast_to_fp32", "scale_inplace", "axpy_inplace",
                 "addcdiv_inplace")
GPU_BACKWARD = BACKWARD | {"rmsnorm", "silu", "gelu", "swiglu", "embedding"}
F32, ID = 4, 8  # fp32 statistics and state; int64 targets
EAGER = {"mul": (2, 1), "scale": (1, 1), "sqrt": (1, 1), "fill": (0, 1), "copy": (1, 1),
         "scale_inplace": (1, 1), "axpy_inplace": (2, 1), "addcdiv_inplace": (3, 1),
         "add": (2, 1)}  # elements read and written per element


def keep_freed_memory() -> bool:
    """glibc: no mmap for large blocks (M_MMAP_MAX = 0), no trimming of the heap (M_TRIM_THRESHOLD
    as large as it goes), so a freed output's pages serve the next call's."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.mallopt(-4, 0) == 1 and libc.mallopt(-1, 2**31 - 1) == 1
    except (OSError, AttributeError):
        return False


def op_bytes(op, pas, rows, cols, s=4, vocab=0):
    """Read + write bytes of the operator with s-byte elements (memops/memop.cpp's formulas)."""
    n = rows * cols
    fwd = pas == "fwd"
    if op in EAGER:
        return sum(EAGER[op]) * n * s
    if op == "rmsnorm":
        if fwd:
            return n * s + cols * s + n * s + rows * F32
        return 2 * n * s + cols * s + rows * F32 + n * s + cols * s
    if op in ("silu", "gelu"):
        return 2 * n * s if fwd else 3 * n * s
    if op == "embedding":
        return rows * ID + n * s + (n * s if fwd else vocab * cols * s)
    if op == "cast_to_bf16":
        return 6 * n
    if op == "cast_to_fp32":
        return 6 * n
    if op == "layernorm":
        if fwd:
            return n * s + 2 * cols * s + n * s + 2 * rows * F32
        return 2 * n * s + cols * s + 2 * rows * F32 + n * s + 2 * cols * s
    if op == "softmax":
        return 2 * n * s if fwd else 3 * n * s
    if op == "swiglu":
        return 3 * n * s if fwd else 5 * n * s
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


# What the operand sets of one row share (an embedding lookup's table), until its samples end.
_SHARED = {}


def make_gpu_call(torch, op, pas, rows, cols, dtype, vocab, seed):
    """One operand set on the GPU and PyTorch's call for the operator on it."""
    import torch.nn.functional as F

    dev = "cuda"
    g = torch.Generator(device=dev).manual_seed(seed)

    def randn(*shape, dt=dtype):
        return torch.randn(*shape, generator=g, device=dev, dtype=dt)

    fwd = pas == "fwd"
    n = rows * cols
    if op == "adamw":  # fp32 state, as bench_memops's adamw; one fused multi-tensor kernel
        p = torch.nn.Parameter(randn(n, dt=torch.float32))
        p.grad = randn(n, dt=torch.float32) * 1e-3
        opt = torch.optim.AdamW([p], lr=1e-3, weight_decay=0.1, fused=True)
        opt.step()  # creates the moments
        return opt.step
    if op == "cross_entropy":
        logits = randn(rows, cols).requires_grad_(True)
        targets = torch.randint(0, cols, (rows,), generator=g, device=dev)
        return lambda: torch.autograd.grad(F.cross_entropy(logits, targets), logits)
    if op == "embedding":
        ids = torch.randint(0, vocab, (rows,), generator=g, device=dev)
        if fwd:  # one table for every set, as bench_memops's: each set's ids read other rows
            key = ("table", vocab, cols, dtype)
            if key not in _SHARED:
                _SHARED[key] = randn(vocab, cols)
            table = _SHARED[key]
            return lambda: F.embedding(ids, table)
        dy = randn(rows, cols)
        return lambda: torch.ops.aten.embedding_dense_backward(dy, ids, vocab, -1, False)
    if op == "cast_to_bf16":
        x = randn(rows, cols, dt=torch.float32)
        return lambda: x.to(torch.bfloat16)
    if op == "cast_to_fp32":
        x = randn(rows, cols, dt=torch.bfloat16)
        return lambda: x.to(torch.float32)
    x = randn(rows, cols)
    if op == "layernorm" and not fwd:  # the kernel NativeLayerNormBackward0 runs, as on the CPU
        w, b = randn(cols), randn(cols)
        _, mean, rstd = torch.ops.aten.native_layer_norm(x, [cols], w, b, 1e-5)
        dy = randn(rows, cols)
        return lambda: torch.ops.aten.native_layer_norm_backward(
            dy, x, [cols], mean, rstd, w, b, [True, True, True])
    if op in ("rmsnorm", "silu", "gelu", "swiglu") and not fwd:
        # autograd's backward kernels for the forward's saved tensors: torch.autograd.grad with
        # the graph kept, as a training step runs them
        w = randn(cols).requires_grad_(op == "rmsnorm")
        xg = x.requires_grad_(True)
        if op == "rmsnorm":
            y, inputs = F.rms_norm(xg, (cols,), w, eps=1e-5), (xg, w)
        elif op == "swiglu":
            u = randn(rows, cols).requires_grad_(True)
            y, inputs = F.silu(xg) * u, (xg, u)
        else:
            y = F.silu(xg) if op == "silu" else F.gelu(xg, approximate="tanh")
            inputs = (xg,)
        dy = randn(rows, cols)
        if op == "silu":  # the one kernel autograd's SiluBackward0 runs, on a plain copy of x
            # (on x itself, which requires grad, every call would record a double-backward node)
            plain = x.detach()
            return lambda: torch.ops.aten.silu_backward(dy, plain)
        return lambda: torch.autograd.grad(y, inputs, dy, retain_graph=True)
    if op == "rmsnorm":
        w = randn(cols)
        return lambda: F.rms_norm(x, (cols,), w, eps=1e-5)
    if op == "layernorm":
        w, b = randn(cols), randn(cols)
        return lambda: F.layer_norm(x, (cols,), w, b, eps=1e-5)
    if op == "softmax":
        if fwd:
            return lambda: F.softmax(x, dim=-1)
        y, dy = F.softmax(x, dim=-1), randn(rows, cols)
        return lambda: torch.ops.aten._softmax_backward_data(dy, y, -1, dtype)
    if op == "silu":
        return lambda: F.silu(x)
    if op == "gelu":
        return lambda: F.gelu(x, approximate="tanh")
    if op == "swiglu":
        u = randn(rows, cols)
        return lambda: F.silu(x) * u
    y, z = randn(rows, cols), randn(rows, cols).abs() + 1.0
    out = torch.empty_like(x)
    calls = {"add": lambda: torch.add(x, y, out=out), "mul": lambda: torch.mul(x, y, out=out),
             "scale": lambda: torch.mul(x, 0.5, out=out), "sqrt": lambda: torch.sqrt(z, out=out),
             "fill": lambda: out.zero_(), "copy": lambda: out.copy_(x),
             "scale_inplace": lambda: x.mul_(0.999), "axpy_inplace": lambda: x.add_(y, alpha=1e-3),
             "addcdiv_inplace": lambda: x.addcdiv_(y, z, value=-1e-3)}
    return calls[op]


def set_bytes(op, pas, rows, cols, s, vocab):
    """Bytes of one operand set of the row's own pass, for how many sets rotate past the L2 (an
    embedding lookup's: the ids, the rows it reads and its output; its table is shared, as
    bench_memops's is)."""
    if op == "adamw":
        return 16 * rows * cols
    return max(op_bytes(op, pas, rows, cols, s, vocab), 1)


def gpu_samples(torch, op, pas, rows, cols, dtype, vocab, repeats):
    """PyTorch's times (µs) for the operator on the GPU, as bench_memops times it: operand sets
    together at least 4 times the L2 (at most 64), taken in turn (gpu_samples_us). Returns the
    samples and the number of sets. dtype: "fp32" or "bf16"."""
    s = 4 if dtype == "fp32" else 2
    l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 << 20)
    sets = max(1, min(64, -(-4 * l2 // set_bytes(op, pas, rows, cols, s, vocab))))
    tdtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
    calls = [make_gpu_call(torch, op, pas, rows, cols, tdtype, vocab, i + 1)
             for i in range(sets)]
    grad = op == "cross_entropy" or (pas == "bwd" and op in GPU_BACKWARD)
    with torch.enable_grad() if grad else torch.no_grad():
        samples = gpu_samples_us(torch, calls, repeats)
    del calls
    _SHARED.clear()
    return samples, sets


def run_gpu(args) -> int:
    import torch

    if not torch.cuda.is_available():
        print(f"error: --device cuda: this PyTorch ({torch.__version__}) has no usable CUDA device",
              file=sys.stderr)
        return 2
    samples, sets = gpu_samples(torch, args.op, args.pas, args.rows, args.cols, args.dtype,
                                args.vocab, args.repeats)
    s = 4 if args.dtype == "fp32" else 2
    nbytes = op_bytes(args.op, args.pas, args.rows, args.cols, s, args.vocab)
    if args.op == "adamw":
        nbytes = 28 * args.rows * args.cols
    mean_us = statistics.mean(samples)
    print(f"torch {args.op} {args.pas} {args.rows} {args.cols} {args.dtype} mean_us={mean_us:.2f} "
          f"median_us={statistics.median(samples):.2f} bytes={nbytes} "
          f"gbps={nbytes / mean_us / 1e3:.2f} samples={len(samples)} sets={sets} device=cuda "
          f"gpu={torch.cuda.get_device_name().replace(' ', '_')} torch={torch.__version__}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("op", choices=GPU_OPS)
    parser.add_argument("rows", type=int)
    parser.add_argument("cols", type=int)
    parser.add_argument("--pass", dest="pas", default="fwd", choices=["fwd", "bwd"])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--fresh-pages", action="store_true",
                        help="keep glibc's default: every large output is paged in anew")
    parser.add_argument("--adamw", default="foreach", choices=["foreach", "single"])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--dtype", default="fp32", choices=["fp32", "bf16"],
                        help="cuda: the operands' dtype (the CPU times fp32)")
    parser.add_argument("--vocab", type=int, default=32768, help="embedding: the table's rows")
    args = parser.parse_args()
    if args.rows < 1 or args.cols < 1 or args.repeats < 1 or args.threads < 1:
        parser.error("ROWS, COLS, --repeats and --threads must be at least 1")
    if args.device == "cuda":
        if args.pas == "bwd" and args.op not in GPU_BACKWARD:
            print(f"error: {args.op} bwd is not covered (bwd: {', '.join(sorted(GPU_BACKWARD))})",
                  file=sys.stderr)
            return 2
        return run_gpu(args)
    if args.op not in OPS or args.dtype != "fp32":
        print(f"error: on the CPU this peer times {', '.join(OPS)} in fp32 ({args.op} "
              f"{args.dtype}: --device cuda)", file=sys.stderr)
        return 2
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
