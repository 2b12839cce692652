#!/usr/bin/python3
"""Summary of a capture folder (scripts/capture.sh prints it when the command ends).

Reads every capture-*.csv in DIR (one per process, or per rank of a converted trace:
build/trace/trace_convert) and prints: the processes, the top shapes by total time over all
processes with their kind, calls, average and p99 (the largest p99 of any process), and how the
time splits by family: GEMM, attention, communication (collectives and point-to-point), and in a
converted trace what nothing replays (memory-bound operators, other, GPU idle), so that the
families of a trace sum to its whole traced time. Shares are of the captured (traced) time, not
of the job's wall time. Notes say where calls may be missing: forked children that left no file,
files that are a periodic write rather than the exit's, calls made inside CUDA-graph captures.

--replay REPORT_DIR...: the reports of bench_gemm, bench_attention or bench_ccl run with
--capture-path (or --trace-path) on the same job: each replayed shape's in-job and isolated time
and their ratio. --plot FILE.png: the time by family, and with --replay the ratios, as a chart.

Every row of every file must obey the capture's rules (the ones bench_gemm, bench_ccl and
bench_step --capture-path apply, docs/outputs.md#capture-files-libopbench_captureso): a file that
breaks one is refused with one `error:` line naming the file, the row and the column.

Usage: capture_summary.py DIR [--top N] [--replay REPORT_DIR...] [--plot FILE.png]
       (DIR before --replay, which takes every folder after it)
Exit 0; 2 when DIR holds no capture files or one of them breaks a rule.
"""
import argparse
import csv
import glob
import json
import math
import os
import re
import sys
from collections import Counter

# ---- The capture's rules: common/capture_rows.cpp's, in the same order and with the same
# messages. tests/integration/bad_capture_corpus.py gives both the files of
# tests/data/bad_capture/ and requires the same error line from each: change both, or neither.

COLUMNS = ("host", "rank", "pid", "api", "kind", "op", "dtype", "m", "n", "k", "batch", "layout",
           "flops", "bytes", "count", "comm_size", "redop", "calls", "timed_calls", "total_us",
           "avg_us", "min_us", "p50_us", "p99_us", "max_us", "note")
TIMES = ("total_us", "avg_us", "min_us", "p50_us", "p99_us", "max_us")
# opbench's dtype names and their element sizes (common/dtype.cpp), for the bytes rule
ELEMENT_BYTES = {"fp64": 8, "fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8_e4m3": 1,
                 "fp8_e5m2": 1, "int8": 1, "uint8": 1, "int32": 4, "int64": 8, "uint32": 4,
                 "uint64": 8}
INT64_MAX = 2**63 - 1
# `source` (absent from files written before it): the capture library's, or a converted trace's
SOURCES = ("capture", "trace:gpu", "trace:cpu", "trace:et")
UNREPLAYED_KINDS = ("memory_bound", "other", "idle", "")
ATTENTION_SHAPE = ("batch", "heads_q", "heads_kv", "seq_q", "seq_kv", "head_dim_qk", "head_dim_v")


class BadCapture(Exception):
    """A capture file that breaks a rule; the message names the file, the row and the column."""


def shown(text):
    """A cell as a message shows it: printable ASCII, '?' for any other byte, at most 40."""
    out = "".join(c if 0x20 <= ord(c) < 0x7f else "?" for c in text[:40])
    return out + "..." if len(text) > 40 else out


def read_csv(path):
    """The rows of an RFC 4180 file exactly as common/report.cpp's read_csv splits them (the csv
    module would end a line at a lone CR, which read_csv drops). Bytes are read as Latin-1, one
    character each, so a garbled line shows as the C++ readers show it."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode("latin-1")
    except OSError as e:
        raise BadCapture(f"{path}: cannot be read: {os.strerror(e.errno)}") from None
    rows, field, quoted, i = [[]], "", False, 0
    while i < len(text):
        c = text[i]
        i += 1
        if quoted:
            if c != '"':
                field += c
            elif i < len(text) and text[i] == '"':
                field += '"'
                i += 1
            else:
                quoted = False
        elif c == '"':
            quoted = True
        elif c == ",":
            rows[-1].append(field)
            field = ""
        elif c == "\n":
            rows[-1].append(field)
            field = ""
            rows.append([])
        elif c != "\r":
            field += c
    if field or rows[-1]:
        rows[-1].append(field)
    if not rows[-1]:
        rows.pop()
    return rows if text else []


def bytes_rule(api, op, dtype, comm_size):
    """(element size, ranks) of nccl-tests' bytes = count x element x ranks, or None where the
    count alone does not give them (see common/capture_rows.cpp)."""
    if api in ("MPI_Reduce_scatter", "ncclGroupEnd") or dtype not in ELEMENT_BYTES:
        return None
    element = ELEMENT_BYTES[dtype]
    if op in ("all_gather", "reduce_scatter", "all_to_all") and api != "MPI_Alltoallv":
        return element, comm_size
    if op in ("all_reduce", "broadcast", "reduce", "all_to_all", "send", "recv", "send_recv"):
        return element, 1
    return None


def is_name(text):
    return text != "" and all(c.isascii() and (c.isalnum() or c == "_") for c in text)


def decimal_syntax(t):
    """Plain decimal notation as the library writes it: digits, an optional fraction and
    exponent; no sign, inf, nan, underscores or spaces (float() would take those)."""
    i, n = 0, len(t)

    def digits():
        nonlocal i
        start = i
        while i < n and "0" <= t[i] <= "9":
            i += 1
        return i > start

    if not digits():
        return False
    if i < n and t[i] == ".":
        i += 1
        if not digits():
            return False
    if i < n and t[i] in "eE":
        i += 1
        if i < n and t[i] in "+-":
            i += 1
        if not digits():
            return False
    return i == n


class CheckedRow(dict):
    """A row of a capture file. Only the columns every file has are checked up front; a trace's
    attention columns are needed only by an attention row, so a file without them fails there,
    with the line C++'s rules give (common/capture_rows.cpp), not a KeyError."""

    def __init__(self, where):
        super().__init__()
        self.where = where

    def __missing__(self, column):
        raise BadCapture(f"{self.where} {column}: missing (the header has no such column)")


def check_row(row, where):
    def fail(column, what):
        raise BadCapture(f"{where} {column}: {what}")

    def whole(column):
        t = row[column]
        if t != "" and all("0" <= c <= "9" for c in t) and int(t) <= INT64_MAX:
            return int(t)
        fail(column, f"expected a whole number >= 0, got '{shown(t)}'")

    def name(column):
        if not is_name(row[column]):
            fail(column, f"expected a name (letters, digits and _), got '{shown(row[column])}'")

    def text(column):
        t = row[column]
        if t == "" or any(ord(c) < 0x20 or ord(c) == 0x7f for c in t):
            fail(column, f"expected text without control characters, got '{shown(t)}'")

    def time_us(column):
        t = row[column]
        if t == "":
            return None
        v = float(t) if decimal_syntax(t) else -1.0
        if not (v >= 0 and math.isfinite(v)):
            fail(column, f"expected a finite number >= 0, got '{shown(t)}'")
        return v

    if row["rank"] != "":
        whole("rank")
    whole("pid")
    source = row.get("source", "capture")
    if source not in SOURCES:
        fail("source", f"'{shown(source)}' is not capture, trace:gpu, trace:cpu or trace:et")
    traced = source != "capture"
    if traced:
        text("api")
    else:
        name("api")
    kind = row["kind"]
    unreplayed = traced and kind in UNREPLAYED_KINDS
    if kind not in ("gemm", "collective", "p2p") and not (traced and kind == "attention") \
            and not unreplayed:
        fail("kind", f"'{shown(kind)}' is not gemm, attention, collective, p2p, memory_bound, "
                     "other or idle" if traced else f"'{shown(kind)}' is not gemm, collective or p2p")
    if not unreplayed:
        name("op")
        name("dtype")
    count = size = comm_size = 0
    if unreplayed:
        pass
    elif kind == "attention":
        for c in ATTENTION_SHAPE:
            whole(c)
        if row["causal"] not in ("true", "false"):
            fail("causal", f"'{shown(row['causal'])}' is not true or false")
    elif kind == "gemm":
        for c in ("m", "n", "k", "batch"):
            whole(c)
        if row["layout"] not in ("NN", "NT", "TN", "TT"):
            fail("layout", f"'{shown(row['layout'])}' is not NN, NT, TN or TT")
    else:
        size = whole("bytes")
        count = whole("count")
        comm_size = whole("comm_size")
        if row.get("comm_stride", "") != "" and whole("comm_stride") == 0:
            fail("comm_stride", "0, but a stride is at least 1 (empty where it is not known)")
        comm_id = row.get("comm_id", "")
        if comm_id != "" and (len(comm_id) != 16 or any(c not in "0123456789abcdef" for c in comm_id)):
            fail("comm_id", f"expected 16 hex digits (or empty), got '{shown(comm_id)}'")
        if row["redop"] != "":
            name("redop")
        if row.get("placement", "") not in ("", "in_place", "out_of_place"):
            fail("placement", f"'{shown(row['placement'])}' is not in_place or out_of_place")
    calls, timed = whole("calls"), whole("timed_calls")
    for c in TIMES:
        time_us(c)
    if timed > calls:
        fail("timed_calls", f"{timed} exceeds calls ({calls})")
    if timed > 0 and row["total_us"] == "":
        fail("total_us", f"empty, but timed_calls is {timed}")
    graph = 0
    if "graph_capture_calls" in row:
        graph = whole("graph_capture_calls")
        if graph > calls - timed:
            fail("graph_capture_calls", f"{graph} exceeds the untimed calls ({calls - timed})")
    if "not_sampled_calls" in row:
        skipped = whole("not_sampled_calls")
        if skipped > calls - timed - graph:
            fail("not_sampled_calls", f"{skipped} exceeds the untimed calls less those in graph "
                 f"captures ({calls - timed - graph})")
        if skipped > 0 and timed == 0:
            fail("not_sampled_calls", f"{skipped}, but no call was timed")
    if kind not in ("collective", "p2p"):
        return
    rule = bytes_rule(row["api"], row["op"], row["dtype"], comm_size)
    if rule is None:
        return
    element, ranks = rule
    expected = count * element * ranks
    if expected != size:
        on = "" if ranks == 1 else f" on {ranks} ranks"
        fail("bytes", f"{size}, but count {count} of {row['dtype']} ({element} B each){on} "
                      f"makes {expected} for {row['api']}")


def check_table(path, table):
    if not table:
        raise BadCapture(f"{path}: empty file")
    header = table[0]
    for c in COLUMNS:
        if c not in header:
            raise BadCapture(f"{path}: no column '{c}': not a capture file")
    rows = []
    for r, cells in enumerate(table[1:], start=1):
        where = f"{path} row {r}"
        if len(cells) < len(header):
            raise BadCapture(f"{where} {header[len(cells)]}: missing (the row has {len(cells)} of "
                             f"the header's {len(header)} fields: a truncated or garbled line)")
        if len(cells) > len(header):
            raise BadCapture(f"{where}: {len(cells)} fields, but the header has {len(header)} (a "
                             "garbled line)")
        row = CheckedRow(where)
        for name, cell in zip(header, cells):
            row.setdefault(name, cell)
        check_row(row, where)
        rows.append(row)
    return rows


def read_capture_file(path):
    if os.path.isdir(path):
        raise BadCapture(f"{path}: a folder, not a capture file")
    if os.path.exists(path) and not os.path.isfile(path):
        raise BadCapture(f"{path}: not a regular file, not a capture file")
    return check_table(path, read_csv(path))


# A converted trace's idle rows split by the step's phase: "(GPU 0 idle, backward)"
# (docs/architecture.md#profiler-traces).
IDLE_PHASE = re.compile(r"\(GPU \S+ idle, (forward|backward|optimizer)\)")

FAMILIES = (("gemm", ("gemm",)), ("attention", ("attention",)),
            ("communication", ("collective", "p2p")), ("memory-bound", ("memory_bound",)),
            ("other", ("other",)), ("GPU idle", ("idle",)))


def strides_by_comm_id(tables):
    """The rank stride of each NCCL communicator whose members' tables are all here, by comm_id:
    the ranks of the tables that hold it, where every member's is read and they are evenly
    spaced. common/capture_tables.cpp's strides_by_comm_id, which bench_ccl --capture-path
    replays by; change both, or neither."""
    seen = {}  # comm_id -> [comm_size, set of ranks, complete]
    for rows in tables:
        for row in rows:
            cid = row.get("comm_id", "")
            if cid == "" or row["kind"] not in ("collective", "p2p"):
                continue
            m = seen.setdefault(cid, [0, set(), True])
            m[0] = int(row["comm_size"])
            if row["rank"] == "":
                m[2] = False
            else:
                m[1].add(int(row["rank"]))
    out = {}
    for cid, (size, ranks, complete) in seen.items():
        ranks = sorted(ranks)
        if not complete or len(ranks) != size:
            continue
        steps = {b - a for a, b in zip(ranks, ranks[1:])}
        if len(ranks) == 1:
            out[cid] = "1"
        elif len(steps) == 1:
            out[cid] = str(steps.pop())
    return out


def shape_of(row):
    kind = row["kind"]
    if kind == "gemm":
        dims = f'{row["m"]}x{row["n"]}x{row["k"]}'
        if row["batch"] not in ("", "1"):
            dims = f'b{row["batch"]} {dims}'
        return f'{dims} {row["layout"]}'
    if kind == "attention":
        return (f'b{row["batch"]} s{row["seq_q"]}/{row["seq_kv"]} h{row["heads_q"]}/'
                f'{row["heads_kv"]} d{row["head_dim_qk"]}/{row["head_dim_v"]}'
                + (" causal" if row["causal"] == "true" else ""))
    if kind in ("collective", "p2p"):
        text = f'{row["bytes"]} B (count {row["count"]}, comm {row["comm_size"]}'
        if row.get("comm_stride", "") not in ("", "1"):
            text += f', ranks {row["comm_stride"]} apart'
        return text + (f', {row["redop"]})' if row["redop"] else ")")
    return ""


def num(text):
    return float(text) if text not in ("", None) else 0.0


def job_time_us(row):
    """A capture row's time in the job: its timed calls' total, and the calls the GPU sampling
    left untimed at their mean (common/job_time.hpp; files without the column: 0)."""
    skipped, timed = int(row.get("not_sampled_calls") or 0), int(row.get("timed_calls") or 0)
    total = num(row.get("total_us"))
    return total + total / timed * skipped if skipped and timed else total


def run_facts(csv_path):
    """The process's facts from the .jsonl beside a capture file (empty when it has no rows)."""
    try:
        with open(csv_path[:-len(".csv")] + ".jsonl") as f:
            line = f.readline()
        return json.loads(line).get("run", {}) if line.strip() else {}
    except (OSError, ValueError):
        return {}


def plural(n, word, words=None):
    return f"{n} {word if n == 1 else words or word + 's'}"


def process_notes(files, tables):
    """What the processes' files say of the calls they may have lost: forked children that left
    no file, files that are not their process's exit write."""
    facts = [run_facts(path) for path in files]
    notes = []
    children = Counter(f.get("parent_pid") for f in facts if f.get("parent_pid"))
    for f in facts:
        forked = f.get("forked_children", 0)
        kept = children.get(f.get("pid"), 0)
        if forked > kept:
            notes.append(f"pid {f.get('pid')} forked {plural(forked, 'child', 'children')}; {kept} left a file: "
                         "the others made no intercepted call, exec'd another program, or were "
                         "killed (SIGKILL) before their first write")
    unfinished = [os.path.basename(p) for p, f in zip(files, facts)
                  if f and not f.get("final", True) and not f.get("source", "").startswith("trace")]
    if unfinished:
        notes.append(f"{plural(len(unfinished), 'file')} hold a periodic write, not the exit's "
                     f"({', '.join(unfinished[:3])}{', ...' if len(unfinished) > 3 else ''}): the "
                     "process still runs, or was killed; calls after that write are missing")
    sampled_out = sum(int(r.get("not_sampled_calls") or 0) for rows in tables for r in rows)
    if sampled_out:
        setting = next((f["gpu_sampling"] for f in facts if f.get("gpu_sampling")), {})
        how = (f"each shape's first {setting['time_first']} calls timed, then one in "
               f"{setting['one_in']}; " if setting else "")
        notes.append(f"{plural(sampled_out, 'GPU call')} were left untimed by the sampling ({how}"
                     "OPBENCH_CAPTURE_SAMPLE=1 times every call): they are counted, and each "
                     "shape's total counts them at its timed calls' mean")
    graph = sum(int(r.get("graph_capture_calls") or 0) for rows in tables for r in rows)
    if graph:
        notes.append(f"{plural(graph, 'GPU call')} were made inside CUDA-graph captures: they run "
                     "at every replay of their graph, which no hook sees, so the job ran them more "
                     "often than the table counts")
    # the capture's other untimed calls (a converted trace's are untimed by nature: not counted)
    other = sum(int(r["calls"]) - int(r["timed_calls"]) - int(r.get("graph_capture_calls") or 0)
                - int(r.get("not_sampled_calls") or 0)
                for rows in tables for r in rows if r.get("source", "capture") == "capture")
    if other > 0:
        notes.append(f"{plural(other, 'call')} have no time for another reason (an NCCL "
                     "nonblocking communicator's ncclInProgress, a group over several "
                     "communicators, GPU work still running at exit, an MPI request never seen "
                     "to complete): the capture files' note column says which, shape by shape")
    return notes


def replay_rows(dirs):
    """The ok rows of bench_gemm, bench_attention and bench_ccl reports with an in_job_us
    (--capture-path / --trace-path replays): (family, what, calls, in-job us, alone us, ratio).
    The ratio is None on a row run in another dtype than the job's (bench_attention on the CPU:
    its note says "no in_job_ratio"); a failed or skipped row is left out, as it has no time
    alone to set beside the job's."""
    out = []
    for d in dirs:
        reports = sorted(glob.glob(os.path.join(glob.escape(d), "*.csv")))
        if not reports:  # a mistyped folder would read as "0 shapes", exit 0
            raise BadCapture(f"--replay {d}: {'no CSV report in it' if os.path.isdir(d) else 'no such folder'}")
        for path in reports:
            try:
                out += replay_report_rows(path)
            except (OSError, UnicodeDecodeError, csv.Error) as e:
                raise BadCapture(f"--replay {path}: not a readable report "
                                 f"({e.strerror if isinstance(e, OSError) and e.strerror else e})")
    return out


def replay_report_rows(path):
    """replay_rows()'s tuples of one report; BadCapture names the row and column a cell breaks."""
    out = []
    with open(path, newline="") as f:
        for index, r in enumerate(csv.DictReader(f), start=1):
            if not r.get("in_job_us") or r.get("status", "ok") != "ok":
                continue
            if None in r or any(v is None for v in r.values()):
                raise BadCapture(f"{path} row {index}: not as many fields as the header")

            def cell(column, parse=float, needed=True):
                text = r.get(column)
                if text is None or text == "":
                    if needed:
                        raise BadCapture(f"{path} row {index} {column}: missing on a replayed ok row")
                    return None
                try:
                    return parse(text)
                except ValueError:
                    raise BadCapture(f"{path} row {index} {column}: '{shown(text)}' is not a number")

            def text(*columns):
                missing = [c for c in columns if c not in r]
                if missing:
                    raise BadCapture(f"{path} row {index}: no column {missing[0]}")
                return [r[c] for c in columns]

            if "gemm" in r and "m" in r:
                gemm, m, n, k, ta, tb, dtype = text("gemm", "m", "n", "k", "transa", "transb", "dtype")
                what, family = f"{gemm} {m}x{n}x{k} {ta}{tb} {dtype}", "gemm"
            elif "num_head_q" in r:
                b, sq, skv, hq, hkv, d, pas, dtype = text(
                    "batch_size", "seqlen_q", "seqlen_kv", "num_head_q", "num_head_kv", "head_dim_qk",
                    "pass", "dtype")
                what, family = f"b{b} s{sq}/{skv} h{hq}/{hkv} d{d} {pas} {dtype}", "attention"
            else:
                what = f'{r.get("op", "")} {r.get("size_bytes", "")} B {r.get("dtype", "")}'
                family = "communication"
            out.append((family, what, cell("captured_calls", int, needed=False) or 0,
                        cell("in_job_us"), cell("time_us"), cell("in_job_ratio", needed=False)))
    return out


def plot(plt, path, families, replays):
    panels = 2 if replays else 1
    fig, axes = plt.subplots(1, panels, figsize=(6 * panels + 2, 4.5), squeeze=False)
    names = [n for n, _ in families]
    ax = axes[0][0]
    bars = ax.barh(names, [ms for _, ms in families], color="tab:blue")
    ax.bar_label(bars, labels=[f"{ms:.3g} ms" for _, ms in families], padding=3)
    ax.invert_yaxis()
    ax.set_xlabel("time in the job (ms)")
    ax.set_title("Where the job's time went")
    if replays:
        ax = axes[0][1]
        shown = sorted(replays, key=lambda r: -r[3] * r[2])[:15]
        labels = [f"{r[1]}" for r in shown]
        bars = ax.barh(labels, [r[5] for r in shown], color="tab:orange")
        ax.bar_label(bars, labels=[f"{r[5]:.3g}x" for r in shown], padding=3)
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.invert_yaxis()
        ax.set_xlabel("in the job / alone (1 = as fast as alone)")
        ax.set_title("Each replayed shape: in-job over isolated time")
        ax.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--top", type=int, default=10)
    p.add_argument("--replay", nargs="+", metavar="REPORT_DIR", default=[],
                   help="report folders of bench_gemm, bench_attention or bench_ccl run with "
                        "--capture-path or --trace-path on DIR: in-job against isolated per shape")
    p.add_argument("--plot", metavar="FILE.png", help="the time by family (and the replay's "
                   "ratios) as a chart")
    p.add_argument("dir")
    args = p.parse_args(argv)
    if args.plot and not args.plot.lower().endswith(".png"):
        print(f"error: --plot: '{args.plot}' is not a .png file name", file=sys.stderr)
        return 2
    if args.plot:  # plot_report.py's matplotlib and its rule for every chart's file
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import plot_report
        plot_report.require_matplotlib("capture_summary.py --plot")
    # the names common/capture_tables.cpp takes (glob would read brackets in DIR as a pattern)
    names = os.listdir(args.dir) if os.path.isdir(args.dir) else []
    files = sorted(os.path.join(args.dir, n) for n in names
                   if n.startswith("capture-") and n.endswith(".csv"))
    if not files:
        print(f"error: {args.dir}: no capture files (no intercepted call was made, or the "
              "library could not write there: check the program's stderr for an opbench-capture: "
              "line)", file=sys.stderr)
        return 2
    try:
        tables = [read_capture_file(path) for path in files]
    except BadCapture as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    merged = {}
    sources = sorted({row.get("source", "capture") for rows in tables for row in rows})
    # an NCCL row's stride, from the tables of its communicator's members read together
    strides = strides_by_comm_id(tables)
    for rows in tables:
        for row in rows:
            if row.get("comm_stride", "") == "" and row.get("comm_id", "") in strides:
                row = dict(row, comm_stride=strides[row["comm_id"]])
            key = (row["api"], row["op"], row["dtype"], shape_of(row))
            entry = merged.setdefault(key, {"kind": row["kind"], "calls": 0, "total": 0.0,
                                            "timed": 0, "timed_us": 0.0, "p99": 0.0,
                                            "procs": 0})
            entry["calls"] += int(row["calls"])
            entry["timed"] += int(row["timed_calls"])
            entry["total"] += job_time_us(row)  # in the job: the calls sampled out counted
            entry["timed_us"] += num(row["total_us"])
            entry["p99"] = max(entry["p99"], num(row["p99_us"]))
            entry["procs"] += 1
    total = sum(e["total"] for e in merged.values())
    calls = sum(e["calls"] for e in merged.values())
    traced = "traced" if sources != ["capture"] else "captured"
    # An execution trace records calls and shapes, not times: "0.0 ms" and averages of 0 would
    # read as free calls, so a table with no timed call says so and shows no times at all.
    timed_any = any(e["timed"] for e in merged.values())
    # (a capture's untimed calls say why in their rows' notes: a graph capture, ncclInProgress)
    amount = (f"{total / 1e3:.1f} ms {traced}" if timed_any else
              "no call timed (calls and shapes only, as an execution trace records them)"
              if sources != ["capture"] else "no call timed (the notes below say why)")
    print(f"capture: {plural(len(files), 'process', 'processes')}, {plural(len(merged), 'shape')}, "
          f"{plural(calls, 'call')}, {amount} in {args.dir} (source: {', '.join(sources) or 'capture'})")
    rows = sorted(merged.items(), key=lambda kv: (-kv[1]["total"], -kv[1]["calls"]))[:args.top]
    width = max([len("api")] + [len(api) for (api, _, _, _), _ in rows]) + 2
    shape_w = max([len("shape")] + [len(shape) for (_, _, _, shape), _ in rows]) + 2
    print(f"  {'api':<{width}}{'kind':<14}{'op':<15}{'dtype':<7}{'shape':<{shape_w}}{'calls':>9}"
          f"{'total_ms':>11}{'avg_us':>11}{'p99_us':>11}{'share':>8}")
    for (api, op, dtype, shape), e in rows:
        if e["timed"]:
            share = 100.0 * e["total"] / total if total else 0.0
            times = (f"{e['total'] / 1e3:>11.2f}{e['timed_us'] / e['timed']:>11.1f}{e['p99']:>11.1f}"
                     f"{share:>7.1f}%")
        else:  # no call of the shape timed (a trace without times, calls inside a graph capture)
            times = f"{'-':>11}{'-':>11}{'-':>11}{'-':>8}"
        print(f"  {api:<{width}}{e['kind']:<14}{op:<15}{dtype:<7}{shape:<{shape_w}}{e['calls']:>9}"
              f"{times}")
    families = [(name, sum(e["total"] for e in merged.values() if e["kind"] in kinds) / 1e3)
                for name, kinds in FAMILIES]
    families = [(n, ms) for n, ms in families if ms > 0 or n in ("gemm", "communication")]
    waits = {}  # µs of GPU idle by the phase it waited for, where the trace shows the phases
    for (api, _, _, _), e in merged.items():
        phase = IDLE_PHASE.fullmatch(api) if e["kind"] == "idle" else None
        if phase:
            waits[phase.group(1)] = waits.get(phase.group(1), 0.0) + e["total"]
    waits = {p: waits[p] for p in ("forward", "backward", "optimizer") if p in waits}
    if total:
        print("  by family: " + ", ".join(f"{n} {100.0 * ms * 1e3 / total:.1f}%"
                                          for n, ms in families)
              + f" of the {traced} time")
        if waits:
            print("  GPU idle by the phase whose kernels it waited for: "
                  + ", ".join(f"{p} {100.0 * us / total:.1f}%" for p, us in waits.items())
                  + f" of the {traced} time")
    elif not timed_any:
        counts = [(name, sum(e["calls"] for e in merged.values() if e["kind"] in kinds))
                  for name, kinds in FAMILIES]
        print("  by family: " + ", ".join(f"{n} {plural(c, 'call')}" for n, c in counts if c)
              + " (no times to weigh them by)")
    for note in process_notes(files, tables):
        print(f"  note: {note}")
    try:
        replays = replay_rows(args.replay)
    except BadCapture as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.replay:
        print(f"replayed alone ({plural(len(replays), 'shape')} with a time in the job):")
        what_w = max([len("shape")] + [len(r[1]) for r in replays])
        print(f"  {'family':<14} {'shape':<{what_w}} {'calls':>8} {'in_job_us':>12} "
              f"{'alone_us':>12} {'ratio':>8}")
        for family, what, n, in_job, alone, ratio in sorted(replays, key=lambda r: -r[3] * r[2]):
            ratio_text = f"{ratio:.3g}" if ratio is not None else "-"
            print(f"  {family:<14} {what:<{what_w}} {n:>8} {in_job:>12.1f} {alone:>12.1f} "
                  f"{ratio_text:>8}")
        if any(r[5] is None for r in replays):
            print("  (-: run in another dtype than the job's, so no ratio; the row's note says "
                  "which)")
    if args.plot:
        # the idle bar split as the text splits it: where the host held the device back
        charted = [f for f in families if f[0] != "GPU idle" or not waits]
        charted += [(f"GPU idle: {p}", us / 1e3) for p, us in waits.items()]
        # plot_report.py's rule for every chart: never over a file no opbench run wrote
        plot_report.claim(args.plot, "capture_summary.py", "--plot")
        plot(plot_report.plt, args.plot, charted, [r for r in replays if r[5] is not None])
        print(f"  chart: {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
