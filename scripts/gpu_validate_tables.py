#!/usr/bin/python3
"""gpu_validate.sh's closing page: every step's tables and the verdict, in one Markdown file.

  gpu_validate_tables.py DIR MODE QUICK STEP...     writes DIR/tables.md and DIR/verdict.md,
                                                     prints the verdict; exit 0 when every step
                                                     passed, 1 otherwise
  gpu_validate_tables.py --environment BUILD_DIR     prints the environment table (a step)

MODE is gpu or cpu, QUICK 0 or 1, the STEPs in the order they ran; each left DIR/STEP.rc (its
exit code, or "skipped"), DIR/STEP.time, DIR/STEP.md (its stdout) and DIR/STEP.log (stderr).
"""
import csv
import glob
import os
import subprocess
import sys

TARGET_PCT_OF_COPY = 85.0
SECTIONS = (
    ("Environment", ("environment",)),
    ("Issue 41 item 2: memory-bound operators against the same run's copy rate, and beside "
     "PyTorch's kernels", ("memops_8b", "memops_70b", "memops_vocab", "memops_check",
                           "memops_vs_torch", "kernel_times")),
    ("Issue 41 item 3: bench_step against a real training step", ("step_vs_torch",)),
    ("Issue 41 item 4: the capture's cost on the step", ("capture_cost",)),
    ("Issue 43 item 8: a GPU step's profiler trace, converted and replayed",
     ("trace_record", "trace_convert", "trace_gemm", "trace_attention", "trace_summary",
      "trace_fixture")),
)


def read(path, default=""):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return default


def memops_rows(folder):
    rows = []
    for path in sorted(glob.glob(os.path.join(folder, "*.csv"))):
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames and "mem_bw_gbps" in reader.fieldnames:
                rows += list(reader)
    return rows


def under_copy(rows):
    """The rows under issue 41's share of the run's copy rate, and how many of those reach it
    against a copy of their own bytes (too small for the large copy to be their ceiling)."""
    below = [r for r in rows if r.get("pct_of_copy") and float(r["pct_of_copy"]) < TARGET_PCT_OF_COPY]
    sized = sum(1 for r in below if r.get("pct_of_copy_same_bytes")
                and float(r["pct_of_copy_same_bytes"]) >= TARGET_PCT_OF_COPY)
    return below, sized


def memops_table(rows):
    def num(v, digits=1):
        return f"{float(v):.{digits}f}" if v not in ("", None) else "-"
    out = ["| model | op | pass | rows x cols | dtype | provider | time us | GB/s | % of copy "
           "| % of a copy of its bytes | % of peak | status |",
           "|---|---|---|---|---|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        out.append(f"| {r['model']} | {r['op']} | {r['pass']} | {r['rows']} x {r['cols']} "
                   f"| {r['dtype']} | {r['provider']} | {num(r['time_us'])} | {num(r['mem_bw_gbps'])} "
                   f"| {num(r.get('pct_of_copy'))} | {num(r.get('pct_of_copy_same_bytes'))} "
                   f"| {num(r.get('pct_peak_bw'))} | {r['status']} |")
    rates = sorted({r["copy_rate_gbps"] for r in rows if r.get("copy_rate_gbps")})
    below, sized = under_copy(rows)
    out.append(f"\n{len(rows)} rows; copy rate {', '.join(num(v) for v in rates) or '-'} GB/s; "
               f"{len(below)} rows under {TARGET_PCT_OF_COPY:.0f}% of it (issue 41's target)"
               + (f", {sized} of them at {TARGET_PCT_OF_COPY:.0f}% or more of a copy of their "
                  "own bytes (their size, not the kernel, is short of the large copy)" if sized else ""))
    return "\n".join(out)


def check_table(rows):
    """memops_check's rows: which kernel and plan ran for each, and how far from the reference."""
    out = ["| op | pass | rows x cols | dtype | provider | kernel and plan (impl) | max abs err "
           "| tolerance | check, status |", "|---|---|---|---|---|---|---:|---:|---|"]
    for r in rows:
        impl = r.get("impl", "").replace("|", "/")
        out.append(f"| {r['op']} | {r['pass']} | {r['rows']} x {r['cols']} | {r['dtype']} "
                   f"| {r['provider']} | {impl} | {r.get('max_abs_err') or '-'} "
                   f"| {r.get('tolerance') or '-'} | {r.get('check') or '-'}, {r['status']} |")
    failed = sum(1 for r in rows if r.get("check") == "failed" or r["status"] == "failed")
    out.append(f"\n{len(rows)} rows checked against the fp64 reference; {failed} failed")
    return "\n".join(out)


def verdict_of(out, name):
    rc = read(os.path.join(out, name + ".rc"), "missing").strip()
    seconds = read(os.path.join(out, name + ".time"), "0").strip()
    log = read(os.path.join(out, name + ".log"))
    lines = [l for l in log.strip().splitlines() if l.strip()]
    errors = [l for l in lines if l.startswith("error:")]
    if rc == "skipped":
        return "SKIPPED", seconds, lines[0] if lines else "time budget spent"
    if rc in ("124", "137"):
        return "TIMEOUT", seconds, f"ended at its time budget ({seconds} s)"
    misses = [l[len("target missed: "):] for l in lines if l.startswith("target missed: ")]
    if rc == "1" and misses:
        return "targets missed", seconds, "; ".join(misses)[:300]
    if rc != "0":
        return "FAILED", seconds, f"exit {rc}: " + (errors[0] if errors else lines[-1] if lines else "no output")[:240]
    folder = os.path.join(out, name)
    if name.startswith("memops_") and name != "memops_vs_torch" and os.path.isdir(folder):
        rows = memops_rows(folder)
        counts = {s: sum(1 for r in rows if r["status"] == s) for s in ("ok", "skipped", "failed")}
        note = f"{counts['ok']} ok, {counts['skipped']} skipped, {counts['failed']} failed"
        if counts["failed"] or not counts["ok"]:
            return "FAILED", seconds, note
        if name == "memops_check":
            unchecked = sum(1 for r in rows if r["status"] == "ok" and r.get("check") != "passed")
            if unchecked:
                return "FAILED", seconds, note + f"; {unchecked} ok rows without a passed check"
            return "passed", seconds, note + "; every result within its tolerance"
        below, sized = under_copy(rows)
        return "passed", seconds, (note + f"; {len(below)} under {TARGET_PCT_OF_COPY:.0f}% of the copy rate"
                                   + (f" ({sized} of them not under a copy of their own bytes)" if sized else ""))
    md = [l for l in read(os.path.join(out, name + ".md")).strip().splitlines() if l.strip()]
    if name == "environment":
        md = [l for l in md if l.startswith("| GPU ")] or md
    return "passed", seconds, (md[-1] if md else "")[:240]


def tables(out, mode, quick, steps):
    page = [f"# gpu_validate.sh ({mode}{', --quick' if quick == '1' else ''})", ""]
    for title, names in SECTIONS:
        ran = [n for n in names if n in steps]
        if not ran:
            continue
        page += [f"## {title}", ""]
        for name in ran:
            status, seconds, _ = verdict_of(out, name)
            page.append(f"### {name} ({status}, {seconds} s)\n")
            folder = os.path.join(out, name)
            if name == "memops_check" and os.path.isdir(folder):
                page.append(check_table(memops_rows(folder)))
            elif name.startswith("memops_") and name != "memops_vs_torch" and os.path.isdir(folder):
                page.append(memops_table(memops_rows(folder)))
            else:
                text = read(os.path.join(out, name + ".md")).strip()
                page.append(text if text else "(no output; " + name + ".log has its messages)")
            misses = [l for l in read(os.path.join(out, name + ".log")).splitlines()
                      if l.startswith("target missed: ") or l.startswith("error:")]
            if misses:
                page.append("\n" + "\n".join(f"- {m}" for m in misses[:12]))
            page.append("")
    return page


def main(argv):
    if len(argv) >= 2 and argv[0] == "--environment":
        return environment(argv[1])
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    out, mode, quick, steps = argv[0], argv[1], argv[2], argv[3:]
    rows = [(name, *verdict_of(out, name)) for name in steps]
    verdict = ["| step | status | seconds | note |", "|---|---|---:|---|"]
    verdict += [f"| {n} | {s} | {t} | {note.replace('|', '/')} |" for n, s, t, note in rows]
    failed = sum(1 for r in rows if r[1] != "passed")
    summary = f"{len(rows) - failed} of {len(rows)} steps passed; tables in {os.path.join(out, 'tables.md')}"
    page = tables(out, mode, quick, steps) + ["## Verdict", ""] + verdict + ["", summary, ""]
    with open(os.path.join(out, "tables.md"), "w") as f:
        f.write("\n".join(page))
    with open(os.path.join(out, "verdict.md"), "w") as f:
        f.write("# gpu_validate verdict\n\n" + "\n".join(verdict) + "\n\n" + summary + "\n")
    print("\n".join(verdict))
    print("\n" + summary)
    return 1 if failed else 0


def environment(build):
    """The machine, PyTorch and the binaries, as one table."""
    def sh(cmd):
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
            return (p.stdout.strip().splitlines() or [p.stderr.strip() or "-"])[0]
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"- ({e})"
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    try:
        import torch
        cuda = torch.version.cuda or "none"
        cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else "none"
        gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "none"
        tinfo = f"torch {torch.__version__}, CUDA {cuda}, cuDNN {cudnn}, device {gpu}"
    except Exception as e:  # the table must still be written
        tinfo = f"no torch ({type(e).__name__}: {e})"
    print("| what | value |\n|---|---|")
    print(f"| GPU | {sh(['nvidia-smi', '--query-gpu=name,memory.total,driver_version,clocks.max.sm', '--format=csv,noheader'])} |")
    print(f"| Python | {sys.executable} {sys.version.split()[0]}; {tinfo} |")
    print(f"| binaries | {build} ({sh([os.path.join(build, 'gemm', 'bench_gemm'), '--version'])}) |")
    print(f"| bundle | {read(os.path.join(root, '.gpu', 'REVISION'), 'none').strip()} |")
    print(f"| source | {sh(['git', '-C', root, 'rev-parse', '--short', 'HEAD'])} |")
    print(f"| CPU | {sh(['sh', '-c', 'nproc; true'])} cores |")
    try:
        subprocess.run(["nvidia-smi"], stdout=sys.stderr, stderr=subprocess.DEVNULL, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        print("nvidia-smi: not here", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
