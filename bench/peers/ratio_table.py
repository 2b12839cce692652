#!/usr/bin/python3
"""The table every collectives peer script prints: for each op and message size, the median over
rounds of a peer's time and of bench_ccl's (its CSVs' time_us), and ours / peer; with a
reference (a second peer run each round, e.g. the plain loop under glibc's allocator defaults),
its median too, for context.

Usage: ratio_table.py DIR ROUNDS PEER_NAME OURS_NAME FORMAT [REFERENCE_NAME]
  DIR holds ours_<r>.csv and peer_<r>.txt (and ref_<r>.txt with REFERENCE_NAME) for r in
  1..ROUNDS; FORMAT says how to read a peer line:
  plain       "plain OP SIZE US" (bench/peers/mpi_collective_loop.c)
  nccl-tests  size count type redop root time algbw busbw #wrong ... (out-of-place time)
  osu         "SIZE AVG_LATENCY_US"
A peer line without an op (nccl-tests, osu) stands for the op of ours at that size. The op
column is shown when ours ran more than one op.
"""
import csv
import statistics
import sys


def peer_time(fields, fmt):
    """(op or None, size, us) of one peer output line, or None when it is not a data line."""
    if fmt == "plain" and len(fields) == 4 and fields[0] == "plain":
        return fields[1], int(fields[2]), float(fields[3])
    if fmt == "nccl-tests" and len(fields) >= 9 and fields[0].isdigit():
        return None, int(fields[0]), float(fields[5])
    if fmt == "osu" and len(fields) >= 2 and fields[0].isdigit():
        return None, int(fields[0]), float(fields[1])
    return None


def read_peer(path, fmt, into):
    for line in open(path):
        found = peer_time(line.split(), fmt)
        if found:
            into.setdefault(found[:2], []).append(found[2])


def main() -> int:
    tmp, rounds, peer_name, ours_name, fmt = sys.argv[1], int(sys.argv[2]), *sys.argv[3:6]
    ref_name = sys.argv[6] if len(sys.argv) > 6 else None
    ours, peer, ref = {}, {}, {}
    not_ok = {}  # (op, size): the status of a row of ours that has no time
    for r in range(1, rounds + 1):
        for row in csv.DictReader(open(f"{tmp}/ours_{r}.csv")):
            at = (row["op"], int(row["size_bytes"]))
            if row.get("status", "ok") != "ok" or not row.get("time_us"):
                not_ok[at] = row.get("status") or "no time"
                continue
            ours.setdefault(at, []).append(float(row["time_us"]))
        read_peer(f"{tmp}/peer_{r}.txt", fmt, peer)
        if ref_name:
            read_peer(f"{tmp}/ref_{r}.txt", fmt, ref)

    def times(table, op, size):
        return table.get((op, size)) or table.get((None, size))

    show_op = len({op for op, _ in ours}) > 1
    head = (["op"] if show_op else []) + ["size", f"{ours_name} (us)", f"{peer_name} (us)", "ratio"]
    head += [f"{ref_name} (us)"] if ref_name else []
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * (1 if show_op else 0) + "---:|" * (len(head) - (1 if show_op else 0)))
    unmatched, shown = [], 0
    for op, size in sorted(ours, key=lambda k: (k[0], k[1])):
        p = times(peer, op, size)
        if not p:
            unmatched.append(f"{op} {size}" if show_op else str(size))
            continue
        shown += 1
        o, pm = statistics.median(ours[(op, size)]), statistics.median(p)
        cells = ([op] if show_op else []) + [str(size), f"{o:.2f}", f"{pm:.2f}", f"{o / pm:.3f}"]
        if ref_name:
            rt = times(ref, op, size)
            cells.append(f"{statistics.median(rt):.2f}" if rt else "-")
        print("| " + " | ".join(cells) + " |")
    print(f"(medians of {rounds} alternating runs each; ratio = {ours_name} / {peer_name})")
    # Nothing left out unsaid: sizes the peer printed no time for, rows of ours that did not run.
    if unmatched:
        print(f"note: no {peer_name} time at: {', '.join(unmatched)}")
    for (op, size), status in sorted(not_ok.items()):
        print(f"note: {ours_name} {op} {size}: {status}, not compared")
    if not_ok or not shown:
        print(f"error: ratio_table.py: {'no size had both times' if not shown else 'rows of ' + ours_name + ' did not run'}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
