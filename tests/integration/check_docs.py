#!/usr/bin/python3
"""Checks that the repository's documentation stands on its own and matches the code.

  check_docs.py links --root ROOT
      Every Markdown file of the repository (README.md, docs/*.md, any other *.md outside build
      and report folders): each relative link resolves to a file or folder inside the repository,
      each #anchor to a heading of its target, no link is absolute or leaves the repository; each
      repository path written in inline code (`configs/models.json`) exists.

  check_docs.py columns --root ROOT [--csv FILE]...
      Every column name the C++ sources give a report row (the Record calls .arg("name"),
      .metric("name"), .result("name"), .optional_metric("name") in gemm/, attention/,
      collectives/, fsdp/, memops/, step/ and common/) appears in docs/outputs.md as `name`. Fails loudly when the
      extraction finds suspiciously few names, so that a change in how rows are built cannot make
      the check pass by finding nothing. Each --csv FILE's header columns are checked too.

  check_docs.py run-columns --root ROOT --out DIR --gemm BIN --attention BIN --ccl BIN --fsdp BIN
                            --memops BIN --step BIN
      Runs the six binaries on tiny cases into DIR (no mpirun: world size 1) and checks every
      column of the CSVs they write against that binary's section of docs/outputs.md, and that
      the CSVs are plain ASCII.

  check_docs.py env --root ROOT
      Every environment variable the scripts/*.sh read (${NAME:-...}, ${NAME}, $NAME) is
      documented in docs/scripts.md as `NAME`.

Exit 0 when everything holds, 1 with one line per problem otherwise, 2 on bad usage.
"""
import argparse
import os
import re
import subprocess
import sys
from collections import defaultdict
from report_check import verdict

SKIP_DIRS = {".git", "reports", "node_modules", "third_party", "__pycache__"}
# Top-level folders of the repository: inline code starting with one of them names a path.
REPO_DIRS = ("common", "capture", "gemm", "attention", "collectives", "fsdp", "memops", "step", "configs", "scripts", "tests", "bench",
             "docs", "cmake")
URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
SAFE_SCHEMES = ("http://", "https://")


def fail_usage(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


# ---------------------------------------------------------------------------------------------
# Markdown: code, headings, links


def split_code(text: str):
    """(prose, inline code spans) of a Markdown text: fenced blocks dropped, inline code cut out
    of the prose (and returned apart), so that neither is read as a link."""
    prose_lines, fence = [], None
    for line in text.splitlines():
        stripped = line.lstrip()
        marker = re.match(r"(`{3,}|~{3,})", stripped)
        if fence:
            if marker and stripped.startswith(fence):
                fence = None
            prose_lines.append("")
            continue
        if marker:
            fence = marker.group(1)[:3]
            prose_lines.append("")
            continue
        prose_lines.append(line)
    prose = "\n".join(prose_lines)
    spans = re.findall(r"(?<!`)`([^`\n]+)`(?!`)", prose)
    prose = re.sub(r"(?<!`)`[^`\n]+`(?!`)", "``", prose)
    return prose, spans


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation removed, spaces to
    hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: str, cache={}):
    if path not in cache:
        prose, _ = split_code(read(path))
        seen, out = defaultdict(int), set()
        for line in prose.splitlines():
            m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            base = slug(m.group(1))
            out.add(base if seen[base] == 0 else f"{base}-{seen[base]}")
            seen[base] += 1
        cache[path] = out
    return cache[path]


def link_targets(prose: str):
    """Every link destination of the prose: inline links and images, reference definitions and
    HTML href/src attributes."""
    for m in re.finditer(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)",
                         prose):
        yield m.group(1).strip("<>")
    for m in re.finditer(r"^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)", prose, re.M):
        yield m.group(1).strip("<>")
    for m in re.finditer(r"\b(?:href|src)\s*=\s*[\"']([^\"']+)[\"']", prose):
        yield m.group(1)


def markdown_files(root: str):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames
                             if d not in SKIP_DIRS and not d.startswith(".") and not d.startswith("build"))
        for name in sorted(filenames):
            if name.endswith(".md"):
                yield os.path.join(dirpath, name)


def inside(root: str, path: str) -> bool:
    root, path = os.path.realpath(root), os.path.realpath(path)
    return os.path.commonpath([root, path]) == root


def check_links(root: str):
    problems, files, links = [], list(markdown_files(root)), 0
    names = {os.path.relpath(f, root) for f in files}
    for required in ("README.md", os.path.join("docs", "outputs.md")):
        if required not in names:
            problems.append(f"{required}: missing")
    for path in files:
        rel = os.path.relpath(path, root)
        prose, spans = split_code(read(path))
        for target in link_targets(prose):
            links += 1
            where = f"{rel}: link '{target}'"
            if target.startswith(SAFE_SCHEMES):
                continue  # a public web page, not a file a clone should hold
            if URL.match(target):
                problems.append(f"{where}: not a link into the repository")
                continue
            file_part, _, anchor = target.partition("#")
            if file_part.startswith("/"):
                problems.append(f"{where}: an absolute path; link relative to {rel}")
                continue
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            if not inside(root, dest):
                problems.append(f"{where}: points outside the repository")
                continue
            if not os.path.exists(dest):
                problems.append(f"{where}: {os.path.relpath(dest, root)} does not exist")
                continue
            if anchor and dest.endswith(".md") and anchor not in anchors(dest):
                problems.append(f"{where}: no heading '#{anchor}' in {os.path.relpath(dest, root)}")
        for span in spans:
            token = span.strip().rstrip("/")
            if (not token.startswith(tuple(d + "/" for d in REPO_DIRS)) or re.search(r"[\s<>*…{}$|]", token)
                    or "..." in token):
                continue
            full = os.path.join(root, token)
            # A unit named without its extension (`common/measure`) stands for its files.
            folder, stem = os.path.split(full)
            unit = os.path.isdir(folder) and any(f.startswith(stem + ".") for f in os.listdir(folder))
            if not os.path.exists(full) and not unit:
                problems.append(f"{rel}: `{span}` names a repository path that does not exist")
    if not files:
        problems.append(f"{root}: no Markdown files found")
    print(f"{len(files)} Markdown files, {links} links checked")
    return problems


# ---------------------------------------------------------------------------------------------
# Report columns

FIELD_CALL = re.compile(r"\.\s*(?:arg|metric|result|optional_metric)\s*\(\s*\"([A-Za-z_][A-Za-z0-9_]*)\"")
# Folder -> (binary, the fewest column names its sources must yield, names that must be among them)
SOURCES = {
    "gemm": ("bench_gemm", 20, {"tflops", "status", "note"}),
    "attention": ("bench_attention", 20, {"tflops", "status", "note"}),
    "collectives": ("bench_ccl", 20, {"time_us", "busbw_gbps", "status", "note"}),
    "fsdp": ("bench_fsdp", 8, {"unit", "per_rank_count"}),
    "memops": ("bench_memops", 20, {"mem_bw_gbps", "status", "note"}),
    "step": ("bench_step", 20, {"step_time_ms", "mfu", "status", "note"}),
    # the time columns every measured row shares (common/measured_columns.cpp)
    "common": ("every binary", 0, {"time_us", "median_us", "p99_us", "rse", "samples"}),
}


def source_columns(root: str):
    """{folder: {column: first source file naming it}} from the Record calls of the C++ sources."""
    found = {}
    for folder in SOURCES:
        names = {}
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, folder)):
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith((".cpp", ".hpp", ".cu", ".cuh", ".h")):
                    path = os.path.join(dirpath, name)
                    for column in FIELD_CALL.findall(read(path)):
                        names.setdefault(column, os.path.relpath(path, root))
        found[folder] = names
    return found


def documented(text: str):
    """Every `name` written as inline code in a Markdown text."""
    return set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", text))


def sections(text: str):
    """{heading: body} of the level-2 sections of a Markdown text."""
    out, current = {}, None
    for line in text.splitlines():
        m = re.match(r"^##\s+(.*?)\s*$", line)
        if m:
            current = m.group(1)
            out[current] = []
        elif current is not None:
            out[current].append(line)
    return {k: "\n".join(v) for k, v in out.items()}


def outputs_doc(root: str):
    path = os.path.join(root, "docs", "outputs.md")
    if not os.path.exists(path):
        return None
    return read(path)


def csv_header(path: str):
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        line = f.readline().strip()
    return [c.strip('"') for c in line.split(",")] if line else []


def check_columns(root: str, csvs):
    problems = []
    text = outputs_doc(root)
    if text is None:
        return ["docs/outputs.md: missing (every report column must be documented there)"]
    known = documented(text)
    found = source_columns(root)
    for folder, (binary, fewest, required) in SOURCES.items():
        names = found[folder]
        if len(names) < fewest:
            problems.append(f"{folder}/: only {len(names)} column names found in the sources ({binary} should have "
                            f"at least {fewest}): has the way rows are built changed? Update check_docs.py")
        missing_required = sorted(required - set(names))
        if missing_required:
            problems.append(f"{folder}/: the sources name no column {', '.join(missing_required)}: has the way rows "
                            "are built changed? Update check_docs.py")
        for column, where in sorted(names.items()):
            if column not in known:
                problems.append(f"docs/outputs.md: column `{column}` of {binary} ({where}) is not documented")
    total = sum(len(v) for v in found.values())
    for path in csvs:
        if not os.path.exists(path):
            problems.append(f"{path}: no such CSV")
            continue
        for column in csv_header(path):
            if column not in known:
                problems.append(f"docs/outputs.md: column `{column}` of {path} is not documented")
    print(f"{total} column names from the sources, {len(csvs)} CSV headers checked against docs/outputs.md")
    return problems


def run(cmd, cwd):
    result = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace")
    return result.returncode, result.stdout


def check_run_columns(root: str, args):
    text = outputs_doc(root)
    if text is None:
        return ["docs/outputs.md: missing (every report column must be documented there)"]
    out = os.path.abspath(args.out)
    if os.path.isdir(out):
        subprocess.run(["rm", "-rf", out], check=True)
    os.makedirs(out)
    quick = ["--max-samples", "3", "--max-time", "0.2", "--quiet"]
    steps = [
        # (binary section(s) of outputs.md, command, CSVs it writes)
        (["bench_gemm"], [args.gemm, "--backend", "cpu", "--m", "16", "--n", "24", "--k", "8", "--check", *quick,
                          "--report-dir-path", "gemm"], ["gemm/gemm_sweep.csv"]),
        (["bench_attention"], [args.attention, "--backend", "cpu", "--model", "tiny", "--seq-len", "16", "--pass",
                               "fwd,bwd", "--check", *quick, "--report-dir-path", "attention"],
         ["attention/attention.csv"]),
        (["bench_ccl"], [args.ccl, "--backend", "mpi", "--op", "all_reduce,all_gather", "-b", "1K", "-e", "1K",
                         *quick, "--report-dir-path", "ccl"], ["ccl/ccl_all_reduce.csv", "ccl/ccl_all_gather.csv"]),
        (["bench_ccl"], [args.ccl, "--backend", "mpi", "--op", "all_reduce", "-b", "1K", "-e", "1K", "--per-iter",
                         "--quiet", "--report-dir-path", "ccl_per_iter"], ["ccl_per_iter/ccl_all_reduce.csv"]),
        (["bench_fsdp"], [args.fsdp, "--model", "tiny", "--world-size", "2", "--dry-run", "--plan-csv-path",
                          "fsdp_plan.csv"], ["fsdp_plan.csv"]),
        (["bench_fsdp", "bench_ccl"], [args.fsdp, "--model", "tiny", "--backend", "mpi", *quick,
                                       "--report-dir-path", "fsdp"], ["fsdp/fsdp.csv"]),
        (["bench_memops"], [args.memops, "--backend", "cpu", "--op", "add,rmsnorm", "--size", "4K", "--check",
                            *quick, "--report-dir-path", "memops"], ["memops/memops_sweep.csv"]),
        # bench_step measures its operators as the families write them: their sections hold those columns.
        (["bench_step"], [args.step, "--model", "tiny", "--seq-len", "16", "--backend", "cpu", *quick,
                          "--report-dir-path", "step"], ["step/step.csv", "step/step_operators.csv"]),
        (["bench_gemm"], None, ["step/gemm_step.csv"]),
        (["bench_attention"], None, ["step/attention_step.csv"]),
        (["bench_memops"], None, ["step/memops_step.csv"]),
    ]
    problems, checked = [], 0
    parts = sections(text)
    for section_names, cmd, csvs in steps:
        missing = [s for s in section_names if s not in parts]
        if missing:
            problems.append(f"docs/outputs.md: no section '## {missing[0]}'")
            continue
        known = set().union(*(documented(parts[s]) for s in section_names))
        code, output = run(cmd, out) if cmd else (0, "")  # no command: a CSV an earlier step wrote
        if code != 0:
            tail = "\n".join(output.strip().splitlines()[-5:])
            problems.append(f"{' '.join(os.path.basename(c) if i == 0 else c for i, c in enumerate(cmd))}: exit {code}:\n"
                            f"{tail}")
            continue
        for rel in csvs:
            path = os.path.join(out, rel)
            if not os.path.exists(path):
                problems.append(f"{rel}: not written by {os.path.basename(cmd[0]) if cmd else 'the run before'}")
                continue
            data = open(path, "rb").read()
            if any(b > 127 for b in data):
                problems.append(f"{rel}: not plain ASCII (docs/outputs.md says every CSV is)")
            header = csv_header(path)
            if len(header) < 10:
                problems.append(f"{rel}: only {len(header)} columns in its header")
            for column in header:
                checked += 1
                if column not in known:
                    problems.append(f"docs/outputs.md: column `{column}` of {rel} is not documented in "
                                    f"the section{'s' if len(section_names) > 1 else ''} "
                                    f"{' and '.join('## ' + s for s in section_names)}")
    # The engine survey needs a CUDA build (no GPU): checked where the build has one.
    code, output = run([args.attention, "--dry-run", "--device-profile", "h100", "--engines-per-graph", "1",
                        "--model", "tiny", "--seq-len", "64", "--pass", "fwd", "--quiet", "--report-dir-path",
                        "engines"], out)
    engines = os.path.join(out, "engines", "attention_engines.csv")
    if code == 0 and os.path.exists(engines):
        known = documented(parts.get("bench_attention", ""))
        for column in csv_header(engines):
            checked += 1
            if column not in known:
                problems.append(f"docs/outputs.md: column `{column}` of attention_engines.csv is not documented "
                                "in the section ## bench_attention")
    elif "CUDA" not in output:
        problems.append(f"bench_attention --dry-run --device-profile h100: exit {code}: {output.strip()[-300:]}")
    print(f"{checked} columns of freshly written reports checked against docs/outputs.md")
    return problems


# ---------------------------------------------------------------------------------------------
# Script settings

SHELL_VARIABLES = {"PWD", "OLDPWD", "HOME", "PATH", "USER", "UID", "EUID", "SHELL", "BASH_SOURCE", "RANDOM",
                   "LINENO", "IFS", "HOSTNAME", "TMPDIR", "BASH_VERSION", "SECONDS", "OSTYPE"}
READ = re.compile(r"\$\{#?([A-Z][A-Z0-9_]*)(?=[:}\-=+?#%/\[])|\$([A-Z][A-Z0-9_]*)(?![A-Za-z0-9_])")


def script_variables(path: str):
    """Upper-case variables a shell script reads (comments aside)."""
    names = set()
    for line in read(path).splitlines():
        if line.lstrip().startswith("#"):
            continue
        for braced, bare in READ.findall(line):
            names.add(braced or bare)
    return names - SHELL_VARIABLES


def check_env(root: str):
    doc_path = os.path.join(root, "docs", "scripts.md")
    if not os.path.exists(doc_path):
        return ["docs/scripts.md: missing (every setting the scripts read must be documented there)"]
    known = documented(read(doc_path))
    problems, total = [], 0
    scripts_dir = os.path.join(root, "scripts")
    scripts = sorted(f for f in os.listdir(scripts_dir) if f.endswith(".sh"))
    fewest = {"report.sh": 3, "run_script.sh": 5}  # what they are known to read, at least
    for name in scripts:
        names = script_variables(os.path.join(scripts_dir, name))
        total += len(names)
        if len(names) < fewest.get(name, 0):
            problems.append(f"scripts/{name}: only {len(names)} environment variables found "
                            f"({', '.join(sorted(names)) or 'none'}): has the script changed? Update check_docs.py")
        for var in sorted(names):
            if var not in known:
                problems.append(f"docs/scripts.md: `{var}`, read by scripts/{name}, is not documented")
    for name in fewest:
        if name not in scripts:
            problems.append(f"scripts/{name}: missing")
    print(f"{total} environment variables of {len(scripts)} scripts checked against docs/scripts.md")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("check", choices=["links", "columns", "run-columns", "env"])
    parser.add_argument("--root", required=True, help="the repository")
    parser.add_argument("--csv", action="append", default=[], help="columns: also check this CSV's header")
    parser.add_argument("--out", help="run-columns: scratch folder for the reports")
    for binary in ("gemm", "attention", "ccl", "fsdp", "memops", "step"):
        parser.add_argument(f"--{binary}", help=f"run-columns: the bench_{binary} binary")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    if not os.path.isdir(root):
        fail_usage(f"--root {args.root}: not a directory")
    if args.check == "links":
        problems = check_links(root)
    elif args.check == "columns":
        problems = check_columns(root, args.csv)
    elif args.check == "env":
        problems = check_env(root)
    else:
        for flag in ("out", "gemm", "attention", "ccl", "fsdp", "memops", "step"):
            if not getattr(args, flag):
                fail_usage(f"run-columns needs --{flag}")
            if flag != "out":
                setattr(args, flag, os.path.abspath(getattr(args, flag)))
                if not os.access(getattr(args, flag), os.X_OK):
                    fail_usage(f"--{flag} {getattr(args, flag)}: not an executable file")
        problems = check_run_columns(root, args)
    return verdict(problems, None, "ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
