"""The GEMMs of one training step of bench/peers/torch_train_step.py, worked out from bench_gemm's
derivation of the model (bench_gemm --dry-run), for the tests that compare what a real PyTorch
step ran (the capture library's sgemm_ calls, an execution trace's aten::mm and aten::bmm) with
what bench_gemm says the model runs.

linear_gemms: every linear layer's fprop, dgrad and wgrad with its calls per step, split as
torch.nn runs bench_gemm's fused layers (attn_qkv: q, k, v projections of Hq·d, Hkv·d, Hkv·d
outputs; mlp_gate_up: gate and up of I each).
math_attention: torch 1.13's unfused attention (bmm, masked softmax, bmm) per layer: forward
S = Q·Kᵀ (S x S x d, NT) and O = P·V (S x d x S, NN); backward dP = dO·Vᵀ (NT), dQ = dS·K (NN),
dV = Pᵀ·dO (S x d x S, TN) and dKᵀ = Qᵀ·dS (d x S x S, TN). Each is one bmm of batch B·Hq.
"""
import json
import os
import subprocess
from collections import Counter

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def model_entry(name):
    with open(os.path.join(ROOT, "configs", "models.json")) as f:
        return next(m for m in json.load(f) if m["model"] == name)


def derived_gemms(bench_gemm, model, seq_len):
    """bench_gemm's dry-run table: (gemm, pass, m, n, k, layout, calls) per row."""
    p = subprocess.run([bench_gemm, "--model", model, "--seq-len", str(seq_len), "--micro-batch",
                        "1", "--backend", "cpu", "--dtype", "fp32", "--dry-run"],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise RuntimeError(f"bench_gemm --dry-run failed: {p.stderr.strip()}")
    rows = []
    for line in p.stdout.splitlines():
        f = line.split()
        if len(f) >= 10 and f[0] == model and f[2] in ("fprop", "dgrad", "wgrad"):
            # model gemm pass [impl] batch m n k layout dtype calls gflop
            nums = f[3:]
            if not nums[0].isdigit():
                nums = nums[1:]
            _batch, m, n, k, layout, _dtype, calls = nums[:7]
            rows.append((f[1], f[2], int(m), int(n), int(k), layout, int(calls)))
    return rows


def linear_gemms(bench_gemm, model, seq_len, steps):
    """(m, n, k, layout) -> calls over `steps` steps, and the number of bench_gemm's rows."""
    e = model_entry(model)
    H, Hq, Hkv = e["hidden_size"], e["num_attention_heads"], e["num_key_value_heads"]
    d, I = e.get("head_dim", H // Hq), e["intermediate_size"]
    split = {"attn_qkv": [Hq * d, Hkv * d, Hkv * d], "mlp_gate_up": [I, I]}
    expected = Counter()
    derived = derived_gemms(bench_gemm, model, seq_len)
    for gemm, pas, m, n, k, layout, calls in derived:
        for part in split.get(gemm, [None]):
            mm, nn, kk = m, n, k
            if part is not None:  # N is n in fprop, k in dgrad, m in wgrad
                if pas == "fprop":
                    nn = part
                elif pas == "dgrad":
                    kk = part
                else:
                    mm = part
            expected[(mm, nn, kk, layout)] += calls * steps
    return expected, len(derived)


def math_attention(model, seq_len, steps):
    """(m, n, k, layout) -> bmm calls over `steps` steps (each of batch B·Hq), and Hq."""
    e = model_entry(model)
    Hq, L = e["num_attention_heads"], e["num_hidden_layers"]
    d, S = e.get("head_dim", e["hidden_size"] // Hq), seq_len
    per = L * steps
    return Counter({(S, S, d, "NT"): 2 * per, (S, d, S, "NN"): 2 * per, (S, d, S, "TN"): per,
                    (d, S, S, "TN"): per}), Hq
