#!/usr/bin/python3
"""A large trace made from a real one, for the trace reader's speed and memory (bench/trace/
convert_speed.sh): the events of FILE (a Kineto trace's traceEvents, or an execution trace's
nodes) repeated until the output reaches SIZE, each copy shifted past the last in time and in
every id (External id, correlation, node id and parent, tensor ids are left as they are), so
the copies are distinct calls of the same shapes, as the steps of a long job are.

Usage: make_big_trace.py --from FILE --size 1G --out FILE [--gzip]
"""
import argparse
import copy
import gzip
import json
import sys


def size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].upper() in units else int(text)


def shifted_kineto(events, k, span, ids):
    out = []
    for e in events:
        e = copy.deepcopy(e)
        if "ts" in e:
            e["ts"] = e["ts"] + k * span
        args = e.get("args", {})
        for key in ("External id", "correlation", "Record function id"):
            if isinstance(args.get(key), int) and args[key] > 0:
                args[key] += k * ids
        out.append(e)
    return out


def shifted_nodes(nodes, k, ids):
    out = []
    for n in nodes:
        n = copy.deepcopy(n)
        n["id"] += k * ids
        if n.get("parent", 0) > ids // 2 or not n["name"].startswith("[pytorch"):
            n["parent"] = n["parent"] + k * ids if n["parent"] else n["parent"]
        out.append(n)
    return out


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--from", dest="source", required=True)
    p.add_argument("--size", required=True, type=size)
    p.add_argument("--out", required=True)
    p.add_argument("--gzip", action="store_true")
    a = p.parse_args(argv)
    with open(a.source) as f:
        trace = json.load(f)
    kineto = "traceEvents" in trace
    items = trace["traceEvents"] if kineto else [n for n in trace["nodes"]
                                                  if not n["name"].startswith("[pytorch")]
    roots = [] if kineto else [n for n in trace["nodes"] if n["name"].startswith("[pytorch")]
    span = max(e.get("ts", 0) + e.get("dur", 0) for e in items) - min(e.get("ts", 0) for e in items) + 10
    ids = 1 + max([e.get("args", {}).get(k, 0) or 0 for e in items
                   for k in ("External id", "correlation")] if kineto else [n["id"] for n in trace["nodes"]])
    head = {k: v for k, v in trace.items() if k not in ("traceEvents", "nodes")}
    opener = (lambda p: gzip.open(p, "wt", compresslevel=1)) if a.gzip else (lambda p: open(p, "w"))
    written, copies = 0, 0
    with opener(a.out) as out:
        text = json.dumps(head)[:-1] + (', "traceEvents": [\n' if kineto else ', "nodes": [\n')
        out.write(text)
        written += len(text)
        first = True
        for r in roots:  # an execution trace's thread roots, once
            line = ("" if first else ",\n") + json.dumps(r)
            out.write(line)
            written += len(line)
            first = False
        while written < a.size:
            batch = shifted_kineto(items, copies, span, ids) if kineto else shifted_nodes(items, copies, ids)
            for e in batch:
                line = ("" if first else ",\n") + json.dumps(e)
                out.write(line)
                written += len(line)
                first = False
            copies += 1
        out.write("\n]}\n")
    print(f"{a.out}: {written / 2**20:.0f} MiB of JSON, {copies} copies of {len(items)} events")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
