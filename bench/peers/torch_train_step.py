#!/usr/bin/python3
"""Times real training steps of a configs/models.json model in PyTorch, on the CPU or a GPU.

The reality a step-time prediction (bench_step) is checked against: the model is built in
torch.nn from the entry's keys (random init, fixed seed, no dropout) and trained on random token
ids for --warmup untimed and --steps timed steps. One step is --grad-accum micro-batches of
--micro-batch x --seq-len tokens, each forward (embedding, L decoder layers, final norm, LM
head), next-token cross-entropy (mean) and backward, then torch.optim.AdamW (lr 1e-4,
weight_decay 0.1, foreach left at its default) step and zero_grad(set_to_none=True).

Model (Llama style, every choice from the entry's keys):
  decoder layer   x + attn(norm(x)), then x + mlp(norm(x)); pre-norm, as Llama and GPT
  norm            rmsnorm: x * rsqrt(mean(x^2) + 1e-5) * w (Hugging Face's LlamaRMSNorm, without
                  its upcast to fp32: in the parameters' dtype; eager, several kernels);
                  layernorm: torch.nn.LayerNorm (weight and bias)
  attention       q, k, v projections (biases with attention_bias), RoPE on q and k (theta
                  10000; not with learned_position_embeddings), k and v repeated to Hq heads when
                  Hkv < Hq (GQA, as Hugging Face's repeat_kv), scaled_dot_product_attention with
                  is_causal=True, output projection (bias with attention_out_bias). On torch >= 2.1
                  that is PyTorch's fused flash-attention CPU kernel; Debian 12's torch 1.13 has
                  only the private F._scaled_dot_product_attention with its unfused math path
                  (bmm, masked softmax, bmm). The summary says which ran ("attention")
  mlp             gated_mlp: down(silu(gate(x)) * up(x)) (SwiGLU); else down(gelu_tanh(up(x)));
                  biases with mlp_bias
  LM head         [V, H] without bias; tie_word_embeddings shares the embedding's tensor
  MoE layer       (n_routed_experts, num_experts_per_tok, moe_intermediate_size; every layer
                  from first_k_dense_replace on) as an eager framework without fused MoE kernels
                  runs it (Megatron's SequentialMLP, Hugging Face's loop over experts): router
                  [E, H] without bias, softmax in fp32, top-k (weights not renormalised); the
                  token copies sorted by expert and gathered into contiguous rows; each expert's
                  MLP (gate, up and down, as Mixtral's w1, w3, w2) on its rows; the outputs concatenated, scaled by
                  the routing weights and index_add_-ed into a zeroed [T, H]; plus the shared
                  experts' MLP (width n_shared_experts x moe_intermediate_size) on every token
MLA models are refused.

On a GPU (--device cuda; PyTorch 2.x with CUDA, one device): --precision bf16 (the default
there) puts the parameters in bf16, so their gradients and AdamW's moments are bf16 too and no
fp32 master copy exists: pure bf16 training, as torchtune's full fine-tuning recipes run with
dtype bf16 (what bench_step projects with --dtype bf16 --grad-dtype bf16 --optimizer-dtype
bf16); the norms and the loss then compute in bf16 too (Hugging Face's upcast both to fp32, and
torchtune its loss), as bench_step projects them. --precision autocast keeps fp32 parameters (the master weights, gradients and moments in
fp32) and runs the forward and the loss under torch.autocast(bf16), as Hugging Face's Trainer
with bf16=True and Lightning's "bf16-mixed" do: the embedding's output, the residual stream, the
norms and the loss stay fp32 there, the linear layers and attention run in bf16 on cast copies.
Attention is F.scaled_dot_product_attention(is_causal=True), a fused kernel on the GPU (flash
attention or cuDNN's; the summary says which). AdamW: --optimizer-impl fused
(torch.optim.AdamW(fused=True), one multi-tensor kernel), foreach (its multi-tensor elementwise
kernels, PyTorch's default for CUDA parameters) or single (a loop over the tensors). A step is
timed from torch.cuda.synchronize() to torch.cuda.synchronize(); its peak memory is
torch.cuda.max_memory_allocated() over the whole run (reset before the model is built, less what
was allocated before it): every tensor the job held at once, weights, gradients, AdamW's state,
activations and the cuBLAS and attention workspaces the caching allocator serves
("peak_mem_gib"; "peak_reserved_gib" is what the allocator reserved from the device).
Without a usable CUDA device --device cuda is one error line (exit 2).

--kineto-trace DIR: after the timed steps, one step the profiler discards and --kineto-steps
(default 1) recorded under torch.profiler with the CPU and CUDA activities and
record_shapes=True, each marked ProfilerStep#N, written to DIR/rank<r>.pt.trace.json.gz: what
build/trace/trace_convert and bench_gemm / bench_attention --trace-path read. A PyTorch without
Kineto (Debian 12's 1.13) is one error line.

Allocation: PyTorch on the CPU has no caching allocator, and glibc serves blocks over 32 MiB with
mmap and unmaps them at free, so every large activation would be paged in anew each step (a cost
a GPU run, with its caching allocator, does not pay). As bench/peers/torch_memops.py, the script
tells glibc (mallopt) to serve everything from the heap and keep it; --fresh-pages keeps glibc's
default; --mmap-tensors serves every block of 64 KiB or more with its own mmap, unmapped at free
(M_MMAP_THRESHOLD 64 KiB, which also stops glibc raising the threshold); --jemalloc runs the step
on jemalloc (LD_PRELOAD, pages never returned: MALLOC_CONF dirty_decay_ms:-1), a caching allocator
as GPU frameworks have one and PyTorch's CPU tuning guides recommend. The heap mode is not enough
for that: torch asks for 64-byte-aligned blocks (posix_memalign), a freed block of the same size
is then a few bytes too small for the next request, and glibc extends the heap instead, so the
optimizer's 131 MB temporaries of llama-cpu-s landed on fresh pages in most steps (about 400 ms
each at this VM's 10-15 us per page fault, against 8 ms on reused pages). The summary says which
("alloc": heap, fresh, mmap, jemalloc).

Threads: torch.set_num_threads(--threads), default the cores this process may run on
(os.sched_getaffinity) divided by the ranks. A step's time is wall time (time.perf_counter) from
its first forward to the end of zero_grad; the random ids are made before it. The script also
reads /proc/stat around the timed steps and says how much CPU time other processes (and the
hypervisor, "steal") took meanwhile ("other_cpu_pct", "steal_pct"; a warning above 10%).
OpenMP's threads suffer badly from sharing cores: on the 2-core development machine a
tiny-model step of 40 ms took 1 to 2 s with 2 threads while a compiler ran on one core; with 1
thread it lost 40 to 100%. There, even quiet, 1 thread ran steps faster and steadier than 2.

--ddp R: R ranks on this machine (torch.multiprocessing.spawn), DistributedDataParallel over gloo
(MASTER_ADDR 127.0.0.1, a free port; DDP's defaults: 25 MiB buckets, all-reduce overlapping the
backward; no_sync on all but the last micro-batch), each rank with --threads threads, its BLAS's
too (OPENBLAS_NUM_THREADS and OMP_NUM_THREADS, unless already set, as torchrun sets
OMP_NUM_THREADS=1 for its ranks: R OpenBLAS pools of every core oversubscribe the cores, and a
2-rank step of llama-cpu-xs on the 2-core machine took 499 ms, max-min 25% of it, against 427 ms
and 7%); global batch R x B x G sequences. A step's time is the slowest rank's (the per-step
times are all-reduced with MAX). Rank 0 prints.

--profile: one more step under torch.profiler (CPU activities; not in the timed steps), the self
CPU time of the training thread's operators grouped as below, as percentages of that step's wall
time (the profiled step is slower than the timed ones; both are printed):
  matmul/linear   aten::mm, addmm, bmm, baddbmm, matmul, linear and their autograd nodes
                  (MmBackward0 …), with the views they make; memory-moving ops inside them (the
                  copy_ that broadcasts a bias into addmm's output, a bias gradient's sum) are
                  memory-bound
  attention       everything inside scaled_dot_product_attention, and the backward nodes of the
                  forward ops it ran (matched by autograd sequence number): on 1.13 its bmm and
                  softmax, forward and backward
  optimizer       everything inside Optimizer.step and Optimizer.zero_grad, _foreach ops
  communication   c10d and gloo ops and DDP's reducer on the training thread (launching the
                  all-reduce, the copies into and out of its buckets)
  memory-bound    every other operator: norms, RoPE, activations, residual adds, cross-entropy,
                  embedding and its backward, the autograd engine's nodes, AccumulateGrad
  outside ops     the step's wall time not inside any operator: Python, the autograd engine
                  between nodes, and waiting (for DDP's all-reduce, too)
and, apart, how long gloo's collectives were in flight on their own threads (async events; they
overlap the rows above).

Peak memory (issue 27 item 4; bench_step's mem_peak_gib is checked against it): the process's
resident high-water mark (VmHWM in /proc/self/status) at the end, less its resident size (VmRSS)
just before the model is built, in GiB ("peak_mem_gib"; with --ddp, rank 0's; every rank holds the
same). It tracks the peak of live tensors because PyTorch on the CPU has no caching allocator of
its own: a tensor's memory is glibc's, and resident memory is what glibc holds. The warm-up and
timed steps are all inside it: the optimizer's states (allocated lazily by the first step) and
every step's activations, gradients (zero_grad(set_to_none=True) frees them) and temporaries.
How closely depends on the allocation mode. With the default (heap), freed blocks stay in the
heap and serve later tensors, so the high-water mark is the peak of live bytes plus the heap's
fragmentation: blocks freed between live ones that no later tensor fits. On llama-cpu-s at seq
512 that was 0.42 GiB over a 2.0 GiB peak (the first step's activations, freed below the
optimizer's states, leave holes). With --mmap-tensors every tensor of 64 KiB or more is its own
mapping, returned at free, so resident memory follows the live tensors to the page, plus about
0.03 GiB (smaller blocks, the libraries' buffers); that is the mode to check a prediction with
(steps run much slower: every tensor is paged in anew; llama-cpu-xs's step takes 20 s). At 1 MiB
llama-cpu-xs's activations (512 KiB each) stayed in the heap, and its peak read 0.58 GiB against
0.52 at 64 KiB. --fresh-pages (glibc's default: blocks
over a threshold that glibc raises up to 32 MiB are mapped) lies between.

Under scripts/capture.sh the script empties the capture's tables after the warm-up steps
(opbench_capture_reset, "capture_reset" in the JSON line), so the capture holds the timed steps'
calls (and the profiled step's, with --profile), not the first steps' slow ones.

Output: the settings, the timed steps, the median step time, the peak memory, the host cost of
one eager operator (a chain of 2000 scalar products on the device, forward and backward: what a
step whose kernels are shorter waits for); on the GPU with --kineto-trace also the host cost of a
kernel in this step (each phase's issue time, the fastest of three steps before any profiler,
over the kernels the profiled step launched in that phase: the model's own Python, views and
autograd bookkeeping between kernels included; a phase the device holds back, its launch queue
full, issues no faster than the device runs it, which leaves the projection's max of host and
device unchanged); then one line of JSON (the last line of stdout): model, params,
micro_batch, seq_len, grad_accum, threads, world_size, step_times_ms, median_ms, tokens_per_s,
peak_mem_gib, host_us_per_op_fwd and host_us_per_op_bwd (the step's own where measured,
host_us_from "step", else one operator's, "one operator"; host_us_one_op_fwd/bwd always the
latter; host_issue_ms and launches_per_step by phase) and a few more. Bad arguments or a bad models file: one `error:` line on
stderr, exit 2.

Usage: bench/peers/torch_train_step.py --model NAME [--model-config-path FILE] [--layers N]
         [--micro-batch B] [--seq-len S] [--grad-accum G] [--warmup W] [--steps N]
         [--threads T] [--ddp R] [--profile] [--fresh-pages | --mmap-tensors | --jemalloc]
         [--device cpu|cuda] [--precision fp32|bf16|autocast]
         [--optimizer-impl fused|foreach|single] [--kineto-trace DIR [--kineto-steps N]]
         [--execution-trace DIR] [--seed N]
         [--list-models]
"""
import argparse
import ctypes
import ctypes.util
import json
import os
import socket
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_INT = 2 ** 24

# configs/models.json's keys (docs/inputs.md): name -> (kind, required, upper bound)
KEYS = {
    "model": ("str", True, None),
    "seqlen": ("int", True, MAX_INT),
    "hidden_size": ("int", True, MAX_INT),
    "intermediate_size": ("int", True, MAX_INT),
    "num_attention_heads": ("int", True, 2 ** 16),
    "num_key_value_heads": ("int", True, 2 ** 16),
    "head_dim": ("int", False, MAX_INT),
    "vocab_size": ("int", True, 2 ** 30),
    "num_hidden_layers": ("int", True, 100000),
    "tie_word_embeddings": ("bool", False, None),
    "gated_mlp": ("bool", False, None),
    "attention_bias": ("bool", False, None),
    "attention_out_bias": ("bool", False, None),
    "mlp_bias": ("bool", False, None),
    "norm": ("norm", False, None),
    "learned_position_embeddings": ("bool", False, None),
    "source": ("str", False, None),
    # MoE
    "n_routed_experts": ("int", False, 65536),
    "num_experts_per_tok": ("int", False, 65536),
    "moe_intermediate_size": ("int", False, MAX_INT),
    "n_shared_experts": ("int0", False, MAX_INT),
    "first_k_dense_replace": ("int0", False, 100000),
    # MLA
    "q_lora_rank": ("int", False, MAX_INT),
    "kv_lora_rank": ("int", False, MAX_INT),
    "qk_nope_head_dim": ("int", False, MAX_INT),
    "qk_rope_head_dim": ("int", False, MAX_INT),
    "v_head_dim": ("int", False, MAX_INT),
}
MOE_KEYS = ("n_routed_experts", "num_experts_per_tok", "moe_intermediate_size")
MLA_KEYS = ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")

CATEGORIES = ("matmul/linear", "attention", "optimizer", "memory-bound", "communication")
MATMUL_OPS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addbmm",
              "aten::matmul", "aten::linear", "aten::_mkldnn_matmul", "aten::mkldnn_linear"}
MATMUL_NODES = {"MmBackward0", "AddmmBackward0", "BmmBackward0", "BaddbmmBackward0",
                "MatmulBackward0", "LinearBackward0", "MkldnnLinearBackward0"}
# inside a matmul op these count with it (no data moved); anything else there (the copy_ that
# broadcasts a bias into addmm's output or makes an input contiguous, the sum of a bias
# gradient) is memory-bound
VIEW_OPS = {"aten::t", "aten::transpose", "aten::view", "aten::reshape", "aten::_reshape_alias",
            "aten::_unsafe_view", "aten::expand", "aten::as_strided", "aten::resolve_conj",
            "aten::resolve_neg", "aten::select", "aten::empty", "aten::empty_strided",
            "aten::empty_like", "aten::detach", "detach", "aten::unsqueeze", "aten::squeeze",
            "aten::permute", "aten::slice", "aten::alias", "aten::numpy_T", "aten::matrix_H"}
NODE_PREFIX = "autograd::engine::evaluate_function: "


class UsageError(Exception):
    """One `error:` line, exit 2."""


def fail(message: str) -> None:
    raise UsageError(message)


def warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


class Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's usage + "prog: error:" becomes our one line
        fail(message)


def int_at_least(low):
    def parse(text):
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got '{text}'") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {value}")
        return value
    return parse


def keep_freed_memory() -> bool:
    """glibc: no mmap for large blocks (M_MMAP_MAX = 0), no trimming of the heap (M_TRIM_THRESHOLD
    as large as it goes), so a freed activation's pages serve the next one."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.mallopt(-4, 0) == 1 and libc.mallopt(-1, 2 ** 31 - 1) == 1
    except (OSError, AttributeError):
        return False


def mmap_large_blocks() -> bool:
    """glibc: every block of 64 KiB or more its own mmap, unmapped at free (M_MMAP_THRESHOLD; a
    fixed threshold also turns off glibc's raising of it), so resident memory follows the live
    tensors."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.mallopt(-3, 64 << 10) == 1
    except (OSError, AttributeError):
        return False


JEMALLOC = "libjemalloc.so.2"
JEMALLOC_CONF = "dirty_decay_ms:-1,muzzy_decay_ms:-1"


def preload_jemalloc(argv) -> None:
    """Runs this script again with jemalloc preloaded (after any library already preloaded, such
    as scripts/capture.sh's); returns only when it already is."""
    preload = os.environ.get("LD_PRELOAD", "")
    if JEMALLOC in preload.split():
        return
    found = ctypes.util.find_library("jemalloc")
    if not found:
        fail("--jemalloc: jemalloc is not installed (Debian's libjemalloc2; scripts/setup.sh "
             "installs it)")
    env = dict(os.environ, LD_PRELOAD=(preload + " " + JEMALLOC).strip(), MALLOC_CONF=JEMALLOC_CONF)
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, os.path.abspath(__file__), *argv], env)


def reset_capture() -> bool:
    """Under scripts/capture.sh: the capture's figures from here on only (the timed steps), not
    the warm-up's slow first calls. False when no capture library is loaded."""
    try:
        reset = ctypes.CDLL(None).opbench_capture_reset
    except AttributeError:
        return False
    reset()
    return True


def alloc_mode(args) -> str:
    if args.jemalloc:
        return "jemalloc"
    return "mmap" if args.mmap_tensors else "fresh" if args.fresh_pages else "heap"


# ---------------------------------------------------------------- configs/models.json

def default_models_path() -> str:
    env = os.environ.get("OPBENCH_CONFIG_DIR")
    if env and os.path.isfile(os.path.join(env, "models.json")):
        return os.path.join(env, "models.json")
    return os.path.normpath(os.path.join(HERE, "..", "..", "configs", "models.json"))


def describe(value) -> str:
    kind = {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "an object"}.get(type(value), type(value).__name__)
    return f"{kind} ({json.dumps(value)[:40]})"


def load_models(path: str) -> list:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}")
    except UnicodeDecodeError as e:
        fail(f"{path}: not UTF-8 text (byte {e.start}: {e.reason})")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        fail(f"{path}:{e.lineno}:{e.colno}: {e.msg}")
    if not isinstance(data, list):
        fail(f"{path}: expected a JSON list of models, got {describe(data)}")
    models, seen = [], {}
    for index, raw in enumerate(data):
        if not isinstance(raw, dict):
            fail(f"{path}: entry {index}: expected an object, got {describe(raw)}")
        name = raw.get("model")
        where = f"{path}: entry {index}" + (f' ("{name}")' if isinstance(name, str) else "")
        entry = {}
        for key, value in raw.items():
            if key.startswith("_") or value is None:
                continue
            if key not in KEYS:
                fail(f"{where}: unknown key '{key}'")
            kind, _, bound = KEYS[key]
            if kind == "str" and not isinstance(value, str):
                fail(f"{where}: key '{key}': expected a string, got {describe(value)}")
            if kind == "bool" and not isinstance(value, bool):
                fail(f"{where}: key '{key}': expected a boolean, got {describe(value)}")
            if kind == "norm" and value not in ("rmsnorm", "layernorm"):
                fail(f"{where}: key '{key}': expected \"rmsnorm\" or \"layernorm\", got "
                     f"{describe(value)}")
            if kind in ("int", "int0"):
                if isinstance(value, float) and value.is_integer():
                    value = int(value)
                if isinstance(value, bool) or not isinstance(value, int):
                    fail(f"{where}: key '{key}': expected an integer, got {describe(value)}")
                low = 0 if kind == "int0" else 1
                if not low <= value <= bound:
                    fail(f"{where}: key '{key}': {value} is outside {low}..{bound}")
            entry[key] = value
        for key, (_, required, _) in KEYS.items():
            if required and key not in entry:
                fail(f"{where}: missing key '{key}'")
        lower = entry["model"].lower()
        if lower in seen:
            fail(f"{where}: model '{entry['model']}' is already entry {seen[lower]}")
        seen[lower] = index
        for group, what in ((MOE_KEYS, "MoE"), (MLA_KEYS, "MLA")):
            given = [k for k in group if k in entry]
            if given and len(given) != len(group):
                missing = next(k for k in group if k not in entry)
                fail(f"{where}: missing key '{missing}' ({what} model: {given[0]} is given)")
        hq, hkv = entry["num_attention_heads"], entry["num_key_value_heads"]
        if hkv > hq or hq % hkv:
            fail(f"{where}: key 'num_key_value_heads': {hkv} must divide num_attention_heads "
                 f"({hq})")
        models.append(entry)
    if not models:
        fail(f"{path}: no models")
    return models


def mla(entry: dict):
    """'a model with MLA attention (…)' when the entry is one, else None."""
    if not any(k in entry for k in MLA_KEYS):
        return None
    return "a model with MLA attention (" + ", ".join(
        f"{k} {entry[k]}" for k in MLA_KEYS if k in entry) + ")"


class Shape:
    """The dense model's numbers, defaults applied."""

    def __init__(self, entry: dict, layers):
        self.name = entry["model"]
        self.seqlen = entry["seqlen"]
        self.H = entry["hidden_size"]
        self.I = entry["intermediate_size"]
        self.Hq = entry["num_attention_heads"]
        self.Hkv = entry["num_key_value_heads"]
        if "head_dim" in entry:
            self.d = entry["head_dim"]
        elif self.H % self.Hq == 0:
            self.d = self.H // self.Hq
        else:
            fail(f"model '{self.name}': hidden_size {self.H} is not a multiple of "
                 f"num_attention_heads {self.Hq}; give head_dim")
        self.V = entry["vocab_size"]
        self.L = layers if layers is not None else entry["num_hidden_layers"]
        self.L_file = entry["num_hidden_layers"]
        self.tied = entry.get("tie_word_embeddings", False)
        self.gated = entry.get("gated_mlp", True)
        self.qkv_bias = entry.get("attention_bias", False)
        self.out_bias = entry.get("attention_out_bias", False)
        self.mlp_bias = entry.get("mlp_bias", False)
        self.norm = entry.get("norm", "rmsnorm")
        self.learned_pos = entry.get("learned_position_embeddings", False)
        self.rope = not self.learned_pos
        if self.rope and self.d % 2:
            fail(f"model '{self.name}': RoPE needs an even head_dim, got {self.d}")
        # MoE (docs/inputs.md): E routed experts of width Ie, top-k of them a token, n_shared
        # experts' width on every token, the first first_k_dense_replace layers dense
        self.moe = all(k in entry for k in MOE_KEYS)
        self.E = entry.get("n_routed_experts", 0)
        self.top_k = entry.get("num_experts_per_tok", 0)
        self.Ie = entry.get("moe_intermediate_size", 0)
        self.n_shared = entry.get("n_shared_experts", 0)
        self.dense_layers = min(entry.get("first_k_dense_replace", 0), self.L) if self.moe else self.L
        if self.moe and self.top_k > self.E:
            fail(f"model '{self.name}': num_experts_per_tok {self.top_k} is above "
                 f"n_routed_experts {self.E}")

    def params(self) -> int:
        H, I, V, d, Hq, Hkv = self.H, self.I, self.V, self.d, self.Hq, self.Hkv
        norm = 2 * H if self.norm == "layernorm" else H
        attn = H * Hq * d + 2 * H * Hkv * d + Hq * d * H
        attn += (Hq * d + 2 * Hkv * d) * self.qkv_bias + H * self.out_bias
        mlp = (3 if self.gated else 2) * H * I + ((2 if self.gated else 1) * I + H) * self.mlp_bias
        # an MoE layer: the router, every routed expert and the shared experts, without biases
        width = 3 if self.gated else 2
        moe = self.E * H + (self.E + self.n_shared) * width * H * self.Ie
        root = V * H + norm + (0 if self.tied else V * H) + self.seqlen * H * self.learned_pos
        ffn = self.dense_layers * mlp + (self.L - self.dense_layers) * moe
        return self.L * (2 * norm + attn) + ffn + root

    def summary(self) -> str:
        heads = f"{self.Hq}/{self.Hkv} heads x {self.d}"
        return (f"{self.L} layers{'' if self.L == self.L_file else f' of {self.L_file}'}, "
                f"H {self.H}, I {self.I}, {heads}, V {self.V}, {self.norm}, "
                f"{'swiglu' if self.gated else 'gelu'} mlp, "
                f"{'rope' if self.rope else 'learned positions'}, "
                f"{'tied' if self.tied else 'untied'} lm head"
                + (f", {self.L - self.dense_layers} MoE layers of {self.E} experts x "
                   f"{self.Ie} (top-{self.top_k}, {self.n_shared} shared)" if self.moe else ""))


# ---------------------------------------------------------------- the model

def build_model(torch, shape: Shape):
    nn, F = torch.nn, torch.nn.functional

    if hasattr(F, "scaled_dot_product_attention"):  # torch >= 2.0
        def sdpa(q, k, v):
            # PyTorch's fused CPU path: with fp32 inputs, no mask and no dropout, torch >= 2.1
            # dispatches to its flash-attention CPU kernel
            # (aten::_scaled_dot_product_flash_attention[_for_cpu]); 2.0 to the math path
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    else:  # torch 1.13 (Debian 12's python3-torch): the private first version, unfused
        def sdpa(q, k, v):
            # the same call, PyTorch's own attention; on 1.13 the CPU has only the math path
            # (aten::_scaled_dot_product_attention_math: bmm, masked softmax, bmm)
            return F._scaled_dot_product_attention(q, k, v, None, 0.0, False, True)[0]

    class RMSNorm(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(n))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.weight

    def norm():
        return RMSNorm(shape.H) if shape.norm == "rmsnorm" else nn.LayerNorm(shape.H, eps=1e-5)

    def rotate_half(x):
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            s = shape
            self.q_proj = nn.Linear(s.H, s.Hq * s.d, bias=s.qkv_bias)
            self.k_proj = nn.Linear(s.H, s.Hkv * s.d, bias=s.qkv_bias)
            self.v_proj = nn.Linear(s.H, s.Hkv * s.d, bias=s.qkv_bias)
            self.o_proj = nn.Linear(s.Hq * s.d, s.H, bias=s.out_bias)

        def forward(self, x, cos, sin):
            B, S, _ = x.shape
            Hq, Hkv, d = shape.Hq, shape.Hkv, shape.d
            q = self.q_proj(x).view(B, S, Hq, d).transpose(1, 2)
            k = self.k_proj(x).view(B, S, Hkv, d).transpose(1, 2)
            v = self.v_proj(x).view(B, S, Hkv, d).transpose(1, 2)
            if cos is not None:
                q = q * cos + rotate_half(q) * sin
                k = k * cos + rotate_half(k) * sin
            if Hkv != Hq:  # GQA: every kv head serves Hq / Hkv query heads
                rep = Hq // Hkv
                k = k[:, :, None].expand(B, Hkv, rep, S, d).reshape(B, Hq, S, d)
                v = v[:, :, None].expand(B, Hkv, rep, S, d).reshape(B, Hq, S, d)
            o = sdpa(q, k, v)
            return self.o_proj(o.transpose(1, 2).reshape(B, S, Hq * d))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            s = shape
            if s.gated:
                self.gate_proj = nn.Linear(s.H, s.I, bias=s.mlp_bias)
            self.up_proj = nn.Linear(s.H, s.I, bias=s.mlp_bias)
            self.down_proj = nn.Linear(s.I, s.H, bias=s.mlp_bias)

        def forward(self, x):
            if shape.gated:
                return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))
            return self.down_proj(F.gelu(self.up_proj(x), approximate="tanh"))

    class Experts(nn.Module):
        """`count` experts' MLPs of width `width`, each as the dense MLP (Mixtral's w1, w3 and w2:
        gate, up and down, separate); count 1 is the shared experts' MLP."""

        def __init__(self, count, width):
            super().__init__()

            def linears(n_in, n_out):
                return nn.ModuleList(nn.Linear(n_in, n_out, bias=False) for _ in range(count))

            if shape.gated:
                self.gate = linears(shape.H, width)
            self.up = linears(shape.H, width)
            self.down = linears(width, shape.H)

        def mlp(self, e, x):
            if shape.gated:
                return self.down[e](F.silu(self.gate[e](x)) * self.up[e](x))
            return self.down[e](F.gelu(self.up[e](x), approximate="tanh"))

    class MoE(nn.Module):
        """A routed MoE layer as an eager framework runs it without fused kernels (Megatron's
        SequentialMLP, Hugging Face's loop over experts): the router's softmax in fp32 and top-k;
        the token copies sorted by expert and gathered (permute); each expert's MLP on its
        contiguous rows; their outputs concatenated, scaled by the routing weights and added
        back into the tokens' rows (unpermute); the shared experts on every token."""

        def __init__(self):
            super().__init__()
            s = shape
            self.router = nn.Linear(s.H, s.E, bias=False)
            self.experts = Experts(s.E, s.Ie)
            if s.n_shared:
                self.shared = Experts(1, s.n_shared * s.Ie)

        def forward(self, x):
            B, S, H = x.shape
            x = x.reshape(B * S, H)
            probs = F.softmax(self.router(x), dim=-1, dtype=torch.float32)
            weights, chosen = torch.topk(probs, shape.top_k, dim=-1)
            order = torch.sort(chosen.reshape(-1), stable=True)[1]  # the copies, by expert
            # the split needs the counts on the host: a device sync per MoE layer on a GPU, as in
            # every eager loop over experts (Hugging Face's, Megatron's SequentialMLP)
            counts = torch.bincount(chosen.reshape(-1), minlength=shape.E).tolist()
            token = order // shape.top_k
            routed = x[token]
            # split, not slices: split's backward is one cat, a slice's a zeroed [R, H] each
            outs = [self.experts.mlp(e, rows) for e, rows in enumerate(routed.split(counts))
                    if rows.shape[0]]
            y = torch.cat(outs) * weights.reshape(-1)[order].unsqueeze(-1).to(x.dtype)
            out = torch.zeros_like(x).index_add_(0, token, y)
            if shape.n_shared:
                out = out + self.shared.mlp(0, x)
            return out.view(B, S, H)

    class Layer(nn.Module):
        def __init__(self, index):
            super().__init__()
            self.input_norm = norm()
            self.attn = Attention()
            self.post_attention_norm = norm()
            self.mlp = MoE() if index >= shape.dense_layers else MLP()

        def forward(self, x, cos, sin):
            x = x + self.attn(self.input_norm(x), cos, sin)
            return x + self.mlp(self.post_attention_norm(x))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            s = shape
            self.embed = nn.Embedding(s.V, s.H)
            if s.learned_pos:
                self.pos_embed = nn.Embedding(s.seqlen, s.H)
            self.layers = nn.ModuleList(Layer(i) for i in range(s.L))
            self.norm = norm()
            self.lm_head = nn.Linear(s.H, s.V, bias=False)
            if s.tied:
                self.lm_head.weight = self.embed.weight

        def forward(self, ids):
            S, dev = ids.shape[1], ids.device
            x = self.embed(ids)
            cos = sin = None
            if shape.learned_pos:
                x = x + self.pos_embed(torch.arange(S, device=dev))
            else:  # the tables are inputs, not parameters; they cost a few kernels per step
                inv = 1.0 / 10000.0 ** (torch.arange(0, shape.d, 2, dtype=torch.float32,
                                                     device=dev) / shape.d)
                freqs = torch.outer(torch.arange(S, dtype=torch.float32, device=dev), inv)
                emb = torch.cat((freqs, freqs), dim=-1)
                # in the residual stream's dtype, as Hugging Face's rotary embedding returns them
                # (bf16 parameters: bf16; fp32, and autocast's fp32 embedding output: fp32)
                cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
            for layer in self.layers:
                x = layer(x, cos, sin)
            return self.lm_head(self.norm(x))

    model = Model()
    with torch.no_grad():  # Hugging Face's init: N(0, 0.02), zero biases, unit norms
        for module in model.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                module.weight.normal_(0.0, 0.02)
                if getattr(module, "bias", None) is not None:
                    module.bias.zero_()
    return model


def attention_path(torch, shape: Shape, device: str = "cpu", dtype=None) -> str:
    """Which kernel scaled_dot_product_attention runs here, for the step's device and dtype: a
    small call under the profiler (the operator's name says the backend)."""
    F = torch.nn.functional
    # 16 tokens on the CPU (its GEMMs are in the capture tests' expected counts), 128 on a GPU
    tokens = 16 if device == "cpu" else 128
    q = torch.randn(1, shape.Hq, tokens, shape.d, device=device, dtype=dtype or torch.float32)
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        if hasattr(F, "scaled_dot_product_attention"):
            F.scaled_dot_product_attention(q, q, q, is_causal=True)
        else:
            F._scaled_dot_product_attention(q, q, q, None, 0.0, False, True)
    names = " ".join(e.name for e in prof.events())
    if "cudnn_attention" in names:
        return "cudnn (fused)"
    if "flash" in names:
        return "flash (fused)"
    if "efficient" in names:
        return "memory-efficient (fused)"
    return "math (unfused)"


# ---------------------------------------------------------------- the profile's breakdown

def breakdown(events, wall_us: float) -> dict:
    """Self CPU time per category on the training thread (the one that runs the optimizer), and
    how long gloo's collectives were in flight on their own threads (asynchronous events)."""
    events = list(events)
    flights = [e for e in events if getattr(e, "is_async", False)]
    events = [e for e in events if not getattr(e, "is_async", False)]
    main = next((e.thread for e in events if e.name.startswith("Optimizer.step")), None)
    if main is None and events:
        per_thread = {}
        for e in events:
            per_thread[e.thread] = per_thread.get(e.thread, 0.0) + e.self_cpu_time_total
        main = max(per_thread, key=per_thread.get)
    events = [e for e in events if e.thread == main]

    def node_name(name):
        return name[len(NODE_PREFIX):] if name.startswith(NODE_PREFIX) else name

    def is_comm(name):
        low = name.lower()
        return (low.startswith(("gloo:", "nccl:", "c10d::", "torch.distributed"))
                or "allreduce" in low or "all_reduce" in low)

    def is_attention(name):
        low = name.lower()
        return "scaled_dot_product" in low or "flash_attention" in low or "scaleddotproduct" in low

    def ancestors(e):
        p = e.cpu_parent
        while p is not None:
            yield p
            p = p.cpu_parent

    # the sequence numbers of the autograd nodes that the attention call's forward ops create:
    # the backward nodes with those numbers (BmmBackward0 … of the math path, or the fused
    # kernel's own) are attention's backward
    attn_seq = set()
    for e in events:
        if e.sequence_nr >= 0 and e.name.startswith("aten::"):
            if is_attention(e.name) or any(is_attention(a.name) for a in ancestors(e)):
                attn_seq.add(e.sequence_nr)

    def backward_node(chain):
        """The autograd node (name, sequence number) an event runs under, if any."""
        for a in chain:
            n = node_name(a.name)
            if n != a.name or (not n.startswith("aten::") and "Backward" in n):
                seq = a.sequence_nr
                if seq < 0:  # the engine's wrapper: the node is its child
                    seq = next((c.sequence_nr for c in a.cpu_children
                                if c.name == n and c.sequence_nr >= 0), -1)
                return n, seq
        return None, -1

    def category(e):
        chain = [e, *ancestors(e)]
        names = [a.name for a in chain]
        if any(is_comm(n) for n in names):
            return "communication"
        if any(n.startswith("Optimizer.") or "_foreach" in n or "adam" in n.lower()
               for n in names):
            return "optimizer"
        if any(is_attention(n) for n in names):
            return "attention"
        node, seq = backward_node(chain)
        if node is not None and (seq in attn_seq or is_attention(node)):
            return "attention"
        if any(n in MATMUL_OPS for n in names) or node in MATMUL_NODES:
            own = node_name(e.name)
            if own in MATMUL_OPS or own in MATMUL_NODES or own in VIEW_OPS:
                return "matmul/linear"
        return "memory-bound"

    result = {c: 0.0 for c in CATEGORIES}
    top = {c: {} for c in CATEGORIES}
    for e in events:
        c = category(e)
        result[c] += e.self_cpu_time_total
        top[c][e.name] = top[c].get(e.name, 0.0) + e.self_cpu_time_total
    # collectives in flight: the union of the async events' intervals
    spans = sorted((e.time_range.start, e.time_range.end) for e in flights if is_comm(e.name))
    in_flight, end = 0.0, None
    for a, b in spans:
        if end is None or a > end:
            in_flight += b - a
            end = b
        elif b > end:
            in_flight += b - end
            end = b
    return {"main": result, "top": top, "in_flight_us": in_flight, "wall_us": wall_us}


def print_breakdown(b: dict, profiled_ms: float, median_ms: float) -> dict:
    wall = b["wall_us"]
    rows = dict(b["main"])
    rows["outside ops"] = max(wall - sum(rows.values()), 0.0)
    print(f"profile: one more step under torch.profiler, rank 0: {profiled_ms:.1f} ms "
          f"(timed median {median_ms:.1f} ms); self CPU time on the training thread")
    print(f"  {'category':<16}{'ms':>9}{'% of step':>11}   largest ops")
    pct = {}
    for name, us in rows.items():
        pct[name] = 100.0 * us / wall if wall else 0.0
        tops = sorted(b["top"].get(name, {}).items(), key=lambda kv: -kv[1])[:3]
        ops = ", ".join(f"{n} {100.0 * t / wall:.1f}%" for n, t in tops if t >= 0.05 * wall / 100)
        if name == "outside ops":
            ops = "Python, the autograd engine between ops, waiting (for collectives too)"
        print(f"  {name:<16}{us / 1e3:>9.1f}{pct[name]:>10.1f}%   {ops}")
    if b["in_flight_us"] > 0:
        us = b["in_flight_us"]
        pct["collectives_in_flight"] = 100.0 * us / wall if wall else 0.0
        print(f"  gloo collectives in flight on their own threads (overlapping the rows above): "
              f"{us / 1e3:.1f} ms, {pct['collectives_in_flight']:.1f}% of the step")
    return {k: round(v, 2) for k, v in pct.items()}


# ---------------------------------------------------------------- the run

def timed_steps(torch, args, ddp: bool, step, tokens, sync_device) -> tuple:
    """--warmup steps, then --steps timed ones: (their times in ms, the slowest rank's under DDP;
    the last loss; whether the capture was reset; the % of the machine's CPU time other processes
    and the hypervisor (steal) took meanwhile)."""
    if ddp:
        torch.distributed.barrier()
    for _ in range(args.warmup):
        step(tokens())
    times, loss = [], float("nan")
    if ddp:
        torch.distributed.barrier()
    capture_reset = reset_capture()
    before = cpu_sample()
    for _ in range(args.steps):
        batch = tokens()
        sync_device()
        t0 = time.perf_counter()
        loss = step(batch)
        sync_device()
        times.append((time.perf_counter() - t0) * 1e3)
        loss = float(loss)  # after the step's time is taken
    after = cpu_sample()
    own = after[3] - before[3]
    if ddp:
        t = torch.tensor(times, dtype=torch.float64)
        torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX)
        times = t.tolist()
        o = torch.tensor([own], dtype=torch.float64)
        torch.distributed.all_reduce(o)  # every rank's CPU time
        own = o.item()
    # how much of the machine other processes (and the hypervisor: steal) took meanwhile
    capacity = (after[0] - before[0]) * (os.cpu_count() or 1)
    other_pct = max(after[1] - before[1] - own, 0.0) / capacity * 100 if capacity else 0.0
    steal_pct = (after[2] - before[2]) / capacity * 100 if capacity else 0.0
    return times, loss, capture_reset, other_pct, steal_pct


def run(rank: int, world: int, args, shape: Shape, port: int) -> None:
    if args.mmap_tensors:
        mmap_large_blocks()
    elif not args.fresh_pages and not args.jemalloc:
        keep_freed_memory()
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(args.threads)
    ddp = world > 1 or args.ddp is not None
    if ddp:
        import datetime
        import torch.distributed as dist
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(port)
        dist.init_process_group("gloo", rank=rank, world_size=world,
                                timeout=datetime.timedelta(minutes=10))

    cuda = args.device == "cuda"
    torch.manual_seed(args.seed)
    rss_before = proc_status_bytes("VmRSS")  # peak_mem_gib counts from here (the CPU)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
        gpu_before = torch.cuda.memory_allocated()
    # on the GPU the parameters are made and initialised there (the CPU's normal_ over billions
    # of elements takes longer than the steps)
    with (torch.device(args.device) if cuda else _null()):
        model = build_model(torch, shape)
    params = sum(p.numel() for p in model.parameters())
    if params != shape.params() and rank == 0:
        warn(f"built {params:,} parameters, the formula says {shape.params():,}")
    # bf16: parameters (so gradients and AdamW's moments) in bf16; autocast: fp32 parameters,
    # the forward and the loss under torch.autocast(bf16); fp32: fp32 throughout
    model = model.to(device=args.device,
                     dtype=torch.bfloat16 if args.precision == "bf16" else torch.float32)
    if ddp:
        # an expert no token of a micro-batch chose has no gradient there: DDP must look for it
        model = torch.nn.parallel.DistributedDataParallel(model, find_unused_parameters=shape.moe)
    opt_kwargs = {}
    if args.optimizer_impl == "fused":
        opt_kwargs["fused"] = True
    elif args.optimizer_impl is not None:
        opt_kwargs["foreach"] = args.optimizer_impl == "foreach"
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1, **opt_kwargs)
    adamw = optimizer_impl_used(opt)
    B, S, G, V = args.micro_batch, args.seq_len, args.grad_accum, shape.V
    gen = torch.Generator().manual_seed(args.seed + 1 + rank)

    def tokens():  # fresh random ids for each step's micro-batches, made outside the timing
        ids = torch.randint(0, V, (G, B, S + 1), generator=gen)
        return ids.to(args.device) if cuda else ids

    def forward_ctx():
        if args.precision == "autocast":
            return torch.autocast(device_type=args.device, dtype=torch.bfloat16)
        return _null()

    def sync_device():  # a step's time ends when its kernels have, not when they were queued
        if cuda:
            torch.cuda.synchronize()

    def micro_batch_loss(ids):  # the forward and the loss of one micro-batch
        with forward_ctx():
            logits = model(ids[:, :-1])
            return F.cross_entropy(logits.reshape(-1, V), ids[:, 1:].reshape(-1)) / G

    def step(batch):
        # the loss stays a tensor: .item() would sync the device inside the timed step, which a
        # training loop that logs every few steps does not
        total = 0.0
        for i, ids in enumerate(batch):
            sync = not ddp or i == G - 1  # DDP all-reduces on the last micro-batch only
            ctx = model.no_sync() if not sync else _null()
            with ctx:
                loss = micro_batch_loss(ids)
                loss.backward()
            total = total + loss.detach()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return total

    times, loss, capture_reset, other_pct, steal_pct = timed_steps(torch, args, ddp, step, tokens,
                                                                   sync_device)
    if cuda:  # every tensor of the job: weights, gradients, AdamW's state, activations
        peak_gpu = torch.cuda.max_memory_allocated() - gpu_before
        reserved_gpu = torch.cuda.max_memory_reserved()
    median = statistics.median(times)
    # before any profiler: a profiler once attached can leave CUPTI's callbacks in the launch path
    # (pytorch#144455: launches 10-20% slower after profiling), which this cost must not include
    host_fwd_us, host_bwd_us = host_op_us(torch, args.device, sync_device) if rank == 0 else (0, 0)
    alone_us = (host_fwd_us, host_bwd_us)

    def issue_ms(batch) -> dict:
        """The host's time (ms) to issue the forward, the backward and the optimizer of a step's
        first micro-batch: the device synchronized before it and after, not between (the host
        runs ahead of the device as in a step)."""
        ids = batch[0]
        sync_device()
        t0 = time.perf_counter()
        loss = micro_batch_loss(ids)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=True)
        t3 = time.perf_counter()
        sync_device()
        return {"forward": (t1 - t0) * 1e3, "backward": (t2 - t1) * 1e3,
                "optimizer": (t3 - t2) * 1e3}

    # On the GPU, the step's own host cost a kernel: each phase's issue time (the fastest of
    # three steps, before any profiler) over the kernels the Kineto trace below sees it launch
    issued = None
    if cuda and not ddp and args.kineto_trace and rank == 0:
        runs = [issue_ms(tokens()) for _ in range(3)]
        issued = {p: min(r[p] for r in runs) for p in runs[0]}

    profile_pct = None
    if args.profile:
        from torch.profiler import profile, ProfilerActivity
        if ddp:
            torch.distributed.barrier()
        batch = tokens()
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            sync_device()
            t0 = time.perf_counter()
            step(batch)
            sync_device()
            profiled_ms = (time.perf_counter() - t0) * 1e3
        if rank == 0:
            b = breakdown(prof.events(), profiled_ms * 1e3)
    if args.execution_trace:
        record_execution_trace(torch, args.execution_trace, rank, lambda: step(tokens()), ddp)
    launches = in_step_us = None
    host_from = "one operator"
    if args.kineto_trace:
        record_kineto_trace(torch, args.kineto_trace, rank, lambda: step(tokens()),
                            args.kineto_steps, cuda, ddp)
        if issued:
            import gzip
            with gzip.open(os.path.join(args.kineto_trace, f"rank{rank}.pt.trace.json.gz"),
                           "rt") as f:
                launches = launches_by_phase(json.load(f))
            in_step_us = kernel_host_us(issued, launches) if launches else None
            if in_step_us and "forward" in in_step_us and "backward" in in_step_us:
                host_fwd_us, host_bwd_us = in_step_us["forward"], in_step_us["backward"]
                host_from = "step"
    # the high-water mark before attention_path's own small tensors
    peak_mem = peak_gpu if cuda else proc_status_bytes("VmHWM") - rss_before
    attn = attention_path(torch, shape, args.device, torch.float32 if args.precision == "fp32"
                          else torch.bfloat16) if rank == 0 else None

    if rank == 0:
        n_tokens = world * B * G * S
        print(f"model {shape.name}: {shape.summary()}; {params:,} params")
        where = (f"on {torch.cuda.get_device_name()}" if cuda else
                 f"on the CPU, alloc {alloc_mode(args)}")
        print(f"{PRECISIONS[args.precision]} {where}, torch {torch.__version__}, attention "
              f"{attn}, adamw {adamw}")
        print(f"step: world {world} x micro_batch {B} x grad_accum {G} x seq_len {S} = "
              f"{n_tokens} tokens; {args.threads} threads per rank")
        print(f"{args.warmup} warm-up steps, {args.steps} timed (ms"
              f"{', slowest rank' if world > 1 else ''}): "
              + " ".join(f"{t:.1f}" for t in times))
        spread = (max(times) - min(times)) / median * 100 if median else 0.0
        print(f"median step time: {median:.1f} ms ({n_tokens / median * 1e3:,.0f} tokens/s; "
              f"max-min {spread:.1f}% of the median); last loss {loss:.3f}")
        if cuda:
            print(f"peak memory: {peak_mem / 2 ** 30:.3f} GiB (torch.cuda.max_memory_allocated "
                  f"less what was allocated before the model; the caching allocator reserved "
                  f"{reserved_gpu / 2 ** 30:.3f} GiB at most)")
        else:
            print(f"peak memory: {peak_mem / 2 ** 30:.3f} GiB (VmHWM less VmRSS before the model "
                  f"was built{', rank 0' if world > 1 else ''})")
        print(f"host cost of an eager operator: {alone_us[0]:.1f} us forward, {alone_us[1]:.1f} us "
              f"backward (a chain of {HOST_OPS} scalar products of 16 elements; a step whose "
              f"kernels are shorter waits for its host)")
        if issued and launches:
            phases = ", ".join(
                f"{p} {issued[p]:.1f} ms for {launches[p]:.0f} kernels"
                + (f" ({in_step_us[p]:.1f} us each)" if p in in_step_us else "")
                for p in ("forward", "backward", "optimizer"))
            print(f"host cost of a kernel in this step: {phases} (the host's time to issue each "
                  "phase, over the kernels the profiled step launched in it)")
        if other_pct + steal_pct > 10:  # even with a core to spare, a step ran up to 2x slower
            warn(f"other processes used {other_pct:.0f}% of the machine's CPU time during the "
                 f"timed steps (steal {steal_pct:.0f}%): these are not a quiet machine's times"
                 + ("; with every core busy, --threads 1 suffers less" if args.threads > 1
                    else ""))
        if args.profile:
            profile_pct = print_breakdown(b, profiled_ms, median)
        summary = {
            "model": shape.name, "params": params, "layers": shape.L,
            "micro_batch": B, "seq_len": S, "grad_accum": G,
            "threads": args.threads, "world_size": world,
            "step_times_ms": [round(t, 3) for t in times],
            "median_ms": round(median, 3),
            "tokens_per_s": round(n_tokens / median * 1e3, 1),
            "warmup": args.warmup, "loss": round(loss, 4),
            "dtype": "fp32" if args.precision == "fp32" else "bf16",
            "device": args.device, "precision": args.precision, "optimizer_impl": adamw,
            "attention": attn, "alloc": alloc_mode(args), "capture_reset": capture_reset,
            "torch": torch.__version__,
            "other_cpu_pct": round(other_pct, 1), "steal_pct": round(steal_pct, 1),
            "peak_mem_gib": round(peak_mem / 2 ** 30, 4),
            "host_us_per_op_fwd": host_fwd_us, "host_us_per_op_bwd": host_bwd_us,
            # where those come from: the step's own phases over their kernels ("step"), or one
            # operator alone (host_op_us), which leaves out the model's Python between kernels
            "host_us_from": host_from,
            "host_us_one_op_fwd": alone_us[0], "host_us_one_op_bwd": alone_us[1],
        }
        if issued:
            summary["host_issue_ms"] = {p: round(v, 3) for p, v in issued.items()}
        if launches:
            summary["launches_per_step"] = launches
        if cuda:
            summary["gpu"] = torch.cuda.get_device_name()
            summary["peak_reserved_gib"] = round(reserved_gpu / 2 ** 30, 4)
        if args.kineto_trace:
            summary["kineto_trace"] = os.path.join(args.kineto_trace, f"rank{rank}.pt.trace.json.gz")
        if profile_pct is not None:
            summary["profile_pct"] = profile_pct
            summary["profiled_step_ms"] = round(profiled_ms, 3)
        print(json.dumps(summary), flush=True)
    if ddp:
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()


HOST_OPS = 2000


def host_op_us(torch, device: str, sync_device, repeats: int = 3) -> tuple:
    """PyTorch's host cost of one eager operator on `device`, in us: a chain of HOST_OPS products
    of a 16-element tensor that requires grad by a scalar, timed forward (each a launch that
    autograd records) and backward (a MulBackward0 node and its kernel each), the device
    synchronized at both ends; the fastest of `repeats`. The kernels are tiny, so this is the
    dispatcher's, autograd's and the launch's cost: where a step's kernels are shorter, the
    device waits for the host (bench_step has no term for it)."""
    fwd = bwd = float("inf")
    for _ in range(repeats):
        x = torch.ones(16, device=device, requires_grad=True)
        sync_device()
        t0 = time.perf_counter()
        y = x
        for _ in range(HOST_OPS):
            y = y * 1.0001
        sync_device()
        t1 = time.perf_counter()
        y.sum().backward()
        sync_device()
        t2 = time.perf_counter()
        fwd = min(fwd, (t1 - t0) / HOST_OPS * 1e6)
        bwd = min(bwd, (t2 - t1) / HOST_OPS * 1e6)
    return round(fwd, 2), round(bwd, 2)


# A kernel launch in a Kineto trace: the host's call of the CUDA runtime or driver that carries
# the correlation id of a kernel (cudaLaunchKernel for ATen's kernels, cuLaunchKernelEx for
# cuBLAS's and cuDNN's); memsets and copies carry none of a kernel's.
LAUNCH_CATS = ("cuda_runtime", "cuda_driver")


def launches_by_phase(trace: dict):
    """The kernels each phase of a profiled step launched, a step's worth: every launch (above)
    inside a ProfilerStep# range, by when the host made it: the forward until the step's first
    autograd::engine::evaluate_function (the backward's first node), the backward until its
    Optimizer.step# range, the optimizer from there (as trace/step_phase.cpp splits a step).
    {"forward": n, "backward": n, "optimizer": n, "steps": s}; None without a step range."""
    events = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X" and "ts" in e]
    steps = [(e["ts"], e["ts"] + e.get("dur", 0)) for e in events
             if str(e.get("name", "")).startswith("ProfilerStep#")]
    if not steps:
        return None
    kernels = {e.get("args", {}).get("correlation") for e in events if e.get("cat") == "kernel"}
    kernels.discard(None)
    counts = {"forward": 0, "backward": 0, "optimizer": 0}
    for start, end in steps:
        inside = [e for e in events if start <= e["ts"] <= end]
        backward = min((e["ts"] for e in inside if str(e.get("name", "")).startswith(
            "autograd::engine::evaluate_function")), default=end)
        optimizer = min((e["ts"] for e in inside if str(e.get("name", "")).startswith(
            "Optimizer.step#")), default=end)
        for e in inside:
            if e.get("cat") in LAUNCH_CATS and e.get("args", {}).get("correlation") in kernels:
                phase = ("forward" if e["ts"] < min(backward, optimizer) else
                         "backward" if e["ts"] < optimizer else "optimizer")
                counts[phase] += 1
    return {k: v / len(steps) for k, v in counts.items()} | {"steps": len(steps)}


def kernel_host_us(issue_ms: dict, launches: dict) -> dict:
    """The host's cost of a kernel in the step's own code, µs a launch: the time the host took to
    issue the forward (the model and the loss), the backward (loss.backward()) or the optimizer
    (step and zero_grad) over the kernels that phase launched; a phase that launched none is
    left out. Beside one operator alone (host_op_us), it has what the model's own Python and
    ATen add between its kernels: nn.Module calls, views, reshapes, autograd's bookkeeping."""
    return {p: round(issue_ms[p] * 1e3 / launches[p], 2) for p in ("forward", "backward", "optimizer")
            if launches.get(p)}


PRECISIONS = {"fp32": "fp32", "bf16": "bf16 parameters, gradients and AdamW state",
              "autocast": "fp32 parameters under bf16 autocast"}


def optimizer_impl_used(opt) -> str:
    """The AdamW implementation the optimizer will run: fused, foreach, or single (the
    per-tensor loop), as torch.optim decides from its defaults and the parameters' device."""
    group = opt.param_groups[0]
    if group.get("fused"):
        return "fused"
    foreach = group.get("foreach")
    if foreach is None:  # torch >= 2.0 picks foreach for CUDA tensors, the loop on the CPU
        try:
            from torch.optim.optimizer import _default_to_fused_or_foreach
            params = [p for g in opt.param_groups for p in g["params"]]
            _, foreach = _default_to_fused_or_foreach(params, False, False)
        except (ImportError, TypeError):
            foreach = False
    return "foreach" if foreach else "single"


def record_kineto_trace(torch, folder: str, rank: int, one_step, steps: int, cuda: bool,
                        ddp: bool) -> None:
    """More steps (untimed) under torch.profiler with the CPU and (on the GPU) CUDA activities
    and record_shapes=True: one warm-up step the profiler discards, then `steps` recorded, each
    marked ProfilerStep#N, written gzip-compressed to FOLDER/rank<r>.pt.trace.json.gz (what
    trace_convert and bench_gemm --trace-path read)."""
    import gzip
    import shutil
    from torch.profiler import profile, schedule, ProfilerActivity
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"rank{rank}.pt.trace.json")
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    if ddp:
        torch.distributed.barrier()
    with profile(activities=activities, record_shapes=True,
                 schedule=schedule(wait=0, warmup=1, active=steps, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(path)) as prof:
        for _ in range(steps + 1):
            one_step()
            if cuda:
                torch.cuda.synchronize()
            prof.step()
    with open(path, "rb") as src, gzip.open(path + ".gz", "wb", compresslevel=6) as dst:
        shutil.copyfileobj(src, dst)
    os.remove(path)


def record_execution_trace(torch, folder: str, rank: int, one_step, ddp: bool) -> None:
    """One more step (untimed) under PyTorch's execution-trace observer: every operator's input
    shapes and types, written to FOLDER/rank<r>.et.json (torch 1.13 calls the observer
    ExecutionGraphObserver, torch >= 2.1 ExecutionTraceObserver)."""
    import torch.profiler as tp
    observer_class = getattr(tp, "ExecutionTraceObserver", None) or tp.ExecutionGraphObserver
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"rank{rank}.et.json")
    observer = observer_class()
    observer.register_callback(path)
    if ddp:
        torch.distributed.barrier()
    observer.start()
    one_step()
    observer.stop()
    observer.unregister_callback()


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def ddp_worker(rank, world, args, shape, port):
    run(rank, world, args, shape, port)


def cpu_sample():
    """(wall s, the machine's busy CPU s, its steal s, this process's CPU s): /proc/stat's cpu
    line (busy: user nice system irq softirq) and os.times (every thread of this process)."""
    busy = steal = 0.0
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        hz = os.sysconf("SC_CLK_TCK")
        busy = (v[0] + v[1] + v[2] + v[5] + v[6]) / hz
        steal = (v[7] if len(v) > 7 else 0) / hz
    except (OSError, ValueError, IndexError):
        pass
    t = os.times()
    return time.perf_counter(), busy, steal, t.user + t.system


def proc_status_bytes(key: str) -> int:
    """A memory line of /proc/self/status (VmRSS, VmHWM: kB) in bytes; 0 when unreadable."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def available_bytes() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def check_torch(args) -> None:
    """One error line when this PyTorch cannot do what the flags ask."""
    try:
        import torch
    except ImportError as e:
        fail(f"cannot import torch ({e})")
    if args.device == "cuda":
        if not torch.cuda.is_available():
            fail(f"--device cuda: this PyTorch ({torch.__version__}, {sys.executable}) has no "
                 "usable CUDA device (torch.cuda.is_available() is False)")
        if args.ddp is not None:
            fail("--ddp: with --device cpu only (gloo ranks on this machine's cores)")
    if args.kineto_trace and not (hasattr(torch.autograd, "kineto_available")
                                  and torch.autograd.kineto_available()):
        fail(f"--kineto-trace: this PyTorch ({torch.__version__}) was built without the Kineto "
             "profiler (torch.autograd.kineto_available() is False); --execution-trace records "
             "the shapes without it")
    if args.optimizer_impl == "fused":
        import inspect
        if "fused" not in inspect.signature(torch.optim.AdamW).parameters:
            fail(f"--optimizer-impl fused: torch.optim.AdamW of PyTorch {torch.__version__} has no "
                 "fused implementation")
        if args.device != "cuda" and tuple(int(x) for x in torch.__version__.split(".")[:2]
                                           if x.isdigit()) < (2, 4):
            fail(f"--optimizer-impl fused: PyTorch {torch.__version__} fuses AdamW on CUDA only")


def parse_args(argv):
    p = Parser(description=__doc__.splitlines()[0], add_help=True)
    p.add_argument("--model", help="a model of the file (case-insensitive); default: the file's "
                   "only model")
    p.add_argument("--model-config-path", metavar="FILE",
                   help="a models.json (default: configs/models.json)")
    p.add_argument("--list-models", action="store_true", help="print the file's models and exit")
    p.add_argument("--layers", type=int_at_least(1), help="decoder layers (default: the model's)")
    p.add_argument("--micro-batch", type=int_at_least(1), default=1,
                   help="sequences per micro-batch")
    p.add_argument("--seq-len", type=int_at_least(1), help="tokens per sequence (default: seqlen)")
    p.add_argument("--grad-accum", type=int_at_least(1), default=1, help="micro-batches per step")
    p.add_argument("--warmup", type=int_at_least(0), default=2, help="untimed steps (default 2)")
    p.add_argument("--steps", type=int_at_least(1), default=5, help="timed steps (default 5)")
    p.add_argument("--threads", type=int_at_least(1),
                   help="torch.set_num_threads per rank (default: the cores / ranks)")
    p.add_argument("--ddp", type=int_at_least(1), metavar="R",
                   help="R ranks with DistributedDataParallel over gloo")
    p.add_argument("--profile", action="store_true",
                   help="one more step under torch.profiler, with a breakdown")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="where the step runs (default cpu; cuda: the current GPU)")
    p.add_argument("--precision", choices=tuple(PRECISIONS),
                   help="fp32; bf16: bf16 parameters, gradients and AdamW state; autocast: fp32 "
                   "parameters, forward and loss under torch.autocast(bf16) (default: fp32 on the "
                   "CPU, bf16 on cuda)")
    p.add_argument("--optimizer-impl", choices=("fused", "foreach", "single"),
                   help="torch.optim.AdamW(fused=True), (foreach=True) or (foreach=False); "
                   "default: torch's own choice (foreach on CUDA, the loop on the CPU)")
    p.add_argument("--kineto-trace", metavar="DIR",
                   help="more steps under torch.profiler (CPU and CUDA activities, "
                   "record_shapes=True) written to DIR/rank<r>.pt.trace.json.gz")
    p.add_argument("--kineto-steps", type=int_at_least(1), default=1,
                   help="--kineto-trace: recorded steps after its one warm-up (default 1)")
    p.add_argument("--execution-trace", metavar="DIR",
                   help="one more step under PyTorch's execution-trace observer, written to "
                   "DIR/rank<r>.et.json (operators' shapes for bench_gemm --trace-path)")
    p.add_argument("--fresh-pages", action="store_true",
                   help="keep glibc's default: large activations are paged in anew each step")
    p.add_argument("--mmap-tensors", action="store_true",
                   help="serve every block of 64 KiB or more with its own mmap, unmapped at free: "
                   "peak_mem_gib then follows the live tensors (steps run slower)")
    p.add_argument("--jemalloc", action="store_true",
                   help="run on jemalloc, a caching allocator: no step pays page faults for "
                   "memory an earlier step freed")
    p.add_argument("--seed", type=int_at_least(0), default=0)
    return p.parse_args(argv)


def require_torch() -> None:
    """One line, not a traceback, when this python has no PyTorch."""
    try:
        import torch  # noqa: F401
    except ImportError:
        fail(f"this script needs PyTorch, which {sys.executable} cannot import: on Debian, "
             "python3-torch (scripts/setup.sh installs it) with /usr/bin/python3")


def main(argv) -> int:
    args = parse_args(argv)
    if sum((args.mmap_tensors, args.fresh_pages, args.jemalloc)) > 1:
        fail("--mmap-tensors, --fresh-pages and --jemalloc: give one allocation mode, not several")
    if args.precision is None:
        args.precision = "bf16" if args.device == "cuda" else "fp32"
    if args.device == "cuda" or args.kineto_trace or args.optimizer_impl:
        check_torch(args)
    if args.jemalloc:
        preload_jemalloc(argv)
    path = args.model_config_path or default_models_path()
    models = load_models(path)
    names = [m["model"] for m in models]
    if args.list_models:
        for m in models:
            print(m["model"] + ("  (MLA: refused here)" if mla(m) else ""))
        return 0
    require_torch()
    if args.model is None:
        if len(models) != 1:
            fail(f"--model is required ({path} has {', '.join(names)})")
        entry = models[0]
    else:
        found = [m for m in models if m["model"].lower() == args.model.lower()]
        if not found:
            fail(f"unknown model '{args.model}' in {path} (known: {', '.join(names)})")
        entry = found[0]
    kind = mla(entry)
    if kind:
        others = [m["model"] for m in models if not mla(m)]
        fail(f"model '{entry['model']}' is {kind}; this script builds multi-head and grouped-query "
             "attention only" + (f" ({', '.join(others)})" if others else ""))
    shape = Shape(entry, args.layers)

    if args.seq_len is None:
        args.seq_len = shape.seqlen
    if args.seq_len > shape.seqlen:
        if shape.learned_pos:
            fail(f"--seq-len {args.seq_len} is above the seqlen of model '{shape.name}' "
                 f"({shape.seqlen}), the length of its learned position table")
        warn(f"--seq-len {args.seq_len} is above the seqlen of model '{shape.name}' "
             f"({shape.seqlen}); timed anyway")
    if args.seq_len > MAX_INT:
        fail(f"--seq-len {args.seq_len} is above {MAX_INT}")

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cores = cores or 1
    world = args.ddp or 1
    if args.threads is None:
        args.threads = max(cores // world, 1)
    if world * args.threads > cores:
        warn(f"{world} rank(s) x {args.threads} threads oversubscribe the {cores} cores")

    # refuse what cannot fit: weights, gradients and AdamW's two moments, per rank (fp32: 16
    # bytes a parameter, bf16: 8; autocast adds the bf16 copies of the weights, 2)
    n = shape.params()
    per_param = {"fp32": 16, "bf16": 8, "autocast": 18}[args.precision]
    if args.device == "cuda":
        import torch
        total = torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory
        if per_param * n > total:
            fail(f"model '{shape.name}' ({n:,} params) needs {per_param * n / 2 ** 30:.1f} GiB for "
                 f"weights, gradients and AdamW state in {args.precision}; the GPU has "
                 f"{total / 2 ** 30:.1f} GiB (--layers or --precision bf16 shrink it)")
        run(0, 1, args, shape, 0)
        return 0
    state = 16 * n * world
    B, S, G = args.micro_batch, args.seq_len, args.grad_accum
    # rough activations kept for backward, per rank: a few [B,S,H]- and [B,S,I]-sized tensors a
    # layer, the math path's [B,Hq,S,S] scores (three), the logits and their gradient
    acts = 4 * B * S * (shape.L * (12 * shape.H + 4 * shape.I + 2 * shape.Hq * shape.d)
                        + 3 * shape.V)
    acts += 4 * 3 * B * shape.Hq * S * S
    avail = available_bytes()
    gib = 2 ** 30
    if avail and state > avail:
        fail(f"model '{shape.name}' ({n:,} params{f', {world} ranks' if world > 1 else ''}) needs "
             f"{state / gib:.1f} GiB for weights, gradients and AdamW state; {avail / gib:.1f} GiB "
             "available (shrink it with --layers or a smaller --model-config-path)")
    if avail and state + world * acts > avail:
        warn(f"this run may need about {(state + world * acts) / gib:.1f} GiB; "
             f"{avail / gib:.1f} GiB available")

    if world == 1 and args.ddp is None:
        run(0, 1, args, shape, 0)
        return 0
    import torch.multiprocessing as mp
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):  # the ranks' BLAS pools (above)
        os.environ.setdefault(var, str(args.threads))
    mp.spawn(ddp_worker, args=(world, args, shape, free_port()), nprocs=world, join=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
