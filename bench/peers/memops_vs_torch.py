#!/usr/bin/python3
"""bench_memops's rows beside PyTorch's own kernels for the same operators, as one Markdown table.

Reads bench_memops reports (CSV files, or folders of them; rows with status ok) and times, in this
one process, PyTorch's kernel for each row's operator, pass, shape and dtype through
bench/peers/torch_memops.py (on the GPU: its GPU_OPS with CUDA-event timing over operand sets past
the L2, as bench_memops times; on the CPU: its five fp32 operators, host timing). A row whose
operator PyTorch has no kernel for (rope, fp8_quantize, adamw_bf16, copies over a link) is left
out and counted. Both GB/s use bench_memops's io_bytes (the operator's bytes, whatever the
implementation moves). Columns: model, op, pass, rows x cols, dtype, provider, bench_memops GB/s,
its pct_of_copy (against the same run's device copy) and pct_peak_bw, torch GB/s, ratio
(bench_memops time / torch time: above 1, PyTorch's kernel is faster), and a verdict: "below
torch" when the ratio is above 1.05, "below 85% of copy" under issue 41's target.

Usage: bench/peers/memops_vs_torch.py REPORT... [--device cuda|cpu] [--repeats R] [--threads T]
Exit 0 with the table; 2 when no report or torch is there; 1 when no row could be compared.
"""
import argparse
import csv
import glob
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch_memops  # noqa: E402
from peer_common import host_samples_us  # noqa: E402

TARGET_PCT_OF_COPY = 85.0


def report_rows(paths):
    files = []
    for p in paths:
        files += sorted(glob.glob(os.path.join(p, "*.csv"))) if os.path.isdir(p) else [p]
    rows = []
    for f in files:
        try:
            with open(f, newline="") as fh:
                reader = csv.DictReader(fh)
                if not reader.fieldnames or "mem_bw_gbps" not in reader.fieldnames:
                    continue  # not a bench_memops report (plans, summaries)
                rows += [r for r in reader if r.get("status") == "ok"]
        except (OSError, UnicodeDecodeError, csv.Error) as e:
            print(f"error: {f}: not a readable bench_memops report "
                  f"({e.strerror if isinstance(e, OSError) and e.strerror else e})", file=sys.stderr)
            sys.exit(2)
    return rows


class NotCovered(Exception):
    """A row the peer has no PyTorch call for, and why (listed with the skipped rows)."""


def torch_us(torch, r, device, repeats, threads):
    """PyTorch's mean time for the row, or None when it has no kernel for it."""
    op, pas, dtype = r["op"], r["pass"], r["dtype"]
    rows, cols = int(r["rows"]), int(r["cols"])
    vocab = int(r["vocab"]) if r.get("vocab") else 0
    if device == "cuda":
        if op not in torch_memops.GPU_OPS or (pas == "bwd" and op not in torch_memops.GPU_BACKWARD):
            return None
        if op == "adamw":
            n = rows * cols
            rows, cols = 1, n
        if dtype not in ("fp32", "bf16") and op not in ("cast_to_bf16", "cast_to_fp32", "adamw"):
            raise NotCovered(f"{dtype}: the peer times fp32 and bf16")
        samples, _ = torch_memops.gpu_samples(
            torch, op, pas, rows, cols, dtype if dtype in ("fp32", "bf16") else "bf16", vocab,
            repeats)
        torch.cuda.empty_cache()
        return statistics.mean(samples)
    if op not in torch_memops.OPS or dtype != "fp32" or (pas == "bwd" and op not in torch_memops.BACKWARD):
        return None
    call = torch_memops.make_call(torch, op, pas, rows, cols, "foreach")
    with torch.no_grad() if op != "cross_entropy" else torch.enable_grad():
        return statistics.mean(host_samples_us(call, repeats))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("reports", nargs="+", help="bench_memops CSVs or report folders")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args()
    rows = report_rows(a.reports)
    if not rows:
        print(f"error: no ok bench_memops rows in {', '.join(a.reports)}", file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError as e:
        print(f"error: {sys.executable} cannot import torch ({e})", file=sys.stderr)
        return 2
    if a.device == "cuda" and not torch.cuda.is_available():
        print(f"error: --device cuda: this PyTorch ({torch.__version__}) has no usable CUDA device",
              file=sys.stderr)
        return 2
    if a.device == "cpu":
        torch.set_num_threads(a.threads)
    print("| model | op | pass | rows x cols | dtype | provider | GB/s | % of copy | % of peak "
          "| torch GB/s | ratio | verdict |")
    print("|---|---|---|---|---|---|---:|---:|---:|---:|---:|---|")
    compared, skipped, below, timed, refused = 0, {}, [], {}, {}
    for r in rows:
        # our kernels' and cuDNN's rows of one case share PyTorch's time (or its refusal)
        key = (r["op"], r["pass"], r["rows"], r["cols"], r["dtype"], r.get("vocab"))
        if key not in timed:
            try:
                timed[key] = torch_us(torch, r, a.device, a.repeats, a.threads)
            except NotCovered as e:
                timed[key] = None
                refused[key] = str(e)
            except Exception as e:  # one operator PyTorch refuses must not lose the others
                timed[key] = None
                refused[key] = f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:80]}"
        t = timed[key]
        if t is None:  # each row once, under its operator and, where PyTorch refused, why
            what = f"{r['op']} {r['pass']}" + (f" ({refused[key]})" if key in refused else "")
            skipped[what] = skipped.get(what, 0) + 1
            continue
        ours = float(r["time_us"])
        io = int(r["io_bytes"])
        ratio = ours / t
        pct_copy = r.get("pct_of_copy") or ""
        verdict = []
        if ratio > 1.05:
            verdict.append("below torch")
        if pct_copy and float(pct_copy) < TARGET_PCT_OF_COPY:
            same = r.get("pct_of_copy_same_bytes") or ""
            # a row too small for the run's copy to be its ceiling: say how a copy of its bytes fares
            verdict.append(f"below {TARGET_PCT_OF_COPY:.0f}% of copy"
                           + (f" ({float(same):.0f}% of a copy of its bytes)" if same else ""))
        if verdict:
            below.append(f"{r['model']} {r['op']} {r['pass']} {r['dtype']} ({r['provider']})")
        fmt = lambda v: f"{float(v):.1f}" if v else "-"  # noqa: E731
        print(f"| {r['model']} | {r['op']} | {r['pass']} | {r['rows']} x {r['cols']} | {r['dtype']} "
              f"| {r['provider']} | {float(r['mem_bw_gbps']):.1f} | {fmt(pct_copy)} "
              f"| {fmt(r.get('pct_peak_bw'))} | {io / t / 1e3:.1f} | {ratio:.3f} "
              f"| {', '.join(verdict) or 'ok'} |")
        compared += 1
    print(f"\n({compared} rows compared; ratio = bench_memops time / torch {torch.__version__} time "
          f"({a.device}); GB/s from bench_memops's io_bytes; the runs' copy rates: "
          + (", ".join(f"{float(v):.1f}" for v in sorted({r["copy_rate_gbps"] for r in rows
                                                          if r.get("copy_rate_gbps")})) or "-")
          + " GB/s)")
    if skipped:
        print("not compared (no PyTorch kernel here, or PyTorch refused the case: why in brackets): "
              + ", ".join(f"{k} x{v}" for k, v in sorted(skipped.items())))
    print(f"{len(below)} of {compared} rows below torch or under {TARGET_PCT_OF_COPY:.0f}% of the copy rate")
    return 0 if compared else 1


if __name__ == "__main__":
    sys.exit(main())
