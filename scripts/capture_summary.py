#!/usr/bin/python3
"""Summary of a capture folder (scripts/capture.sh prints it when the command ends).

Reads every capture-*.csv in DIR (one per process) and prints: the processes, the top shapes by
total time over all processes with their calls, average and p99 (the largest p99 of any process),
and how the captured time splits between GEMMs and communication (collectives and
point-to-point). Shares are of the captured time, not of the job's wall time.

Every row of every file must obey the capture's rules (the ones bench_gemm, bench_ccl and
bench_step --capture-path apply, docs/outputs.md#capture-files-libopbench_captureso): a file that
breaks one is refused with one `error:` line naming the file, the row and the column.

Usage: capture_summary.py [--top N] DIR
Exit 0; 2 when DIR holds no capture files or one of them breaks a rule.
"""
import argparse
import math
import os
import sys

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
        if row["redop"] != "":
            name("redop")
    calls, timed = whole("calls"), whole("timed_calls")
    for c in TIMES:
        time_us(c)
    if timed > calls:
        fail("timed_calls", f"{timed} exceeds calls ({calls})")
    if timed > 0 and row["total_us"] == "":
        fail("total_us", f"empty, but timed_calls is {timed}")
    if "graph_capture_calls" in row:
        graph = whole("graph_capture_calls")
        if graph > calls - timed:
            fail("graph_capture_calls", f"{graph} exceeds the untimed calls ({calls - timed})")
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
        row = {}
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


def shape_of(row):
    if row["kind"] == "gemm":
        dims = f'{row["m"]}x{row["n"]}x{row["k"]}'
        if row["batch"] not in ("", "1"):
            dims = f'b{row["batch"]} {dims}'
        return f'{dims} {row["layout"]}'
    text = f'{row["bytes"]} B (count {row["count"]}, comm {row["comm_size"]}'
    return text + (f', {row["redop"]})' if row["redop"] else ")")


def num(text):
    return float(text) if text not in ("", None) else 0.0


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--top", type=int, default=10)
    p.add_argument("dir")
    args = p.parse_args(argv)
    # the names common/capture_tables.cpp takes (glob would read brackets in DIR as a pattern)
    names = os.listdir(args.dir) if os.path.isdir(args.dir) else []
    files = sorted(os.path.join(args.dir, n) for n in names
                   if n.startswith("capture-") and n.endswith(".csv"))
    if not files:
        print(f"capture: no capture files in {args.dir} (no intercepted call was made, or the "
              "library could not write there: see the opbench-capture: line above)")
        return 2
    try:
        tables = [read_capture_file(path) for path in files]
    except BadCapture as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    merged = {}
    for rows in tables:
        for row in rows:
            key = (row["api"], row["op"], row["dtype"], shape_of(row))
            entry = merged.setdefault(key, {"kind": row["kind"], "calls": 0, "total": 0.0,
                                            "timed": 0, "p99": 0.0, "procs": 0})
            entry["calls"] += int(row["calls"])
            entry["timed"] += int(row["timed_calls"])
            entry["total"] += num(row["total_us"])
            entry["p99"] = max(entry["p99"], num(row["p99_us"]))
            entry["procs"] += 1
    total = sum(e["total"] for e in merged.values())
    gemm = sum(e["total"] for e in merged.values() if e["kind"] == "gemm")
    comm = total - gemm
    print(f"capture: {len(files)} process(es), {len(merged)} shapes, "
          f"{sum(e['calls'] for e in merged.values())} calls, {total / 1e3:.1f} ms captured "
          f"in {args.dir}")
    rows = sorted(merged.items(), key=lambda kv: -kv[1]["total"])[:args.top]
    print(f"  {'api':<26}{'op':<15}{'dtype':<7}{'shape':<36}{'calls':>9}{'total_ms':>11}"
          f"{'avg_us':>11}{'p99_us':>11}{'share':>8}")
    for (api, op, dtype, shape), e in rows:
        avg = e["total"] / e["timed"] if e["timed"] else 0.0
        share = 100.0 * e["total"] / total if total else 0.0
        print(f"  {api:<26}{op:<15}{dtype:<7}{shape:<36}{e['calls']:>9}{e['total'] / 1e3:>11.2f}"
              f"{avg:>11.1f}{e['p99']:>11.1f}{share:>7.1f}%")
    if total:
        print(f"  GEMM {100.0 * gemm / total:.1f}% and communication {100.0 * comm / total:.1f}% "
              "of the captured time")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
