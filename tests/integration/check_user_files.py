#!/usr/bin/env python3
"""A run never moves, overwrites or deletes a file no opbench run wrote; checked on one binary:

  check_user_files.py BINARY_NAME BUILD_DIR OUT_DIR [MPIEXEC]

BINARY_NAME is gemm, attention, memops, ccl, fsdp or step. In OUT_DIR/folder, which holds a
README.md, a user CSV, a user environment.json and a notes.md:
  1. a run writes its reports beside them; all four stay byte for byte;
  2. a second run into the same folder moves the first run's files (and only those) into
     earlier-<date>-<time>/;
  3. --summary-path (and --report-csv-path, --plan-csv-path where the binary has them) naming a
     user's file is refused with exit 2 and one line naming the flag; the file is unchanged;
  4. bench_fsdp: a replay's --plan-csv-path inside a new report folder stays where it was asked;
  5. --resume (gemm, attention, memops): environment.json keeps the continued run in
     earlier_runs, so every row's run_id resolves; resuming into a folder another binary wrote is
     refused;
  6. --format is honoured by every report the run writes: --format jsonl writes no CSV, --format
     csv no JSON lines; bench_step's measured operators' reports (gemm_step, attention_step,
     memops_step) are CSV whatever --format says, as bench_step reads its times back from them,
     and take --format's other formats too.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
from report_check import verdict

USER_FILES = {
    "README.md": "# my project\n",
    "mydata.csv": "name,value\nmine,1\n",
    "environment.json": '{"owner": "me"}\n',
    "notes.md": "keep me\n",
}


def run(cmd, cwd=None):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=cwd)


def fill(folder):
    os.makedirs(folder, exist_ok=True)
    for name, text in USER_FILES.items():
        with open(os.path.join(folder, name), "w") as f:
            f.write(text)


def changed(folder):
    out = []
    for name, text in USER_FILES.items():
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            out.append(f"{path} is gone")
        elif open(path).read() != text:
            out.append(f"{path} was changed")
    return out


def manifest(folder):
    path = os.path.join(folder, ".opbench-manifest")
    if not os.path.exists(path):
        return []
    return [json.loads(line)["file"] for line in open(path) if line.strip()]


class Binary:
    """How to run one binary quickly, its reports, and the named outputs it has."""

    def __init__(self, name, build, mpiexec):
        self.name = name
        self.build = build
        self.mpiexec = mpiexec
        repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        quick = ["--max-time", "0.02", "--min-samples", "2", "--quiet"]
        path = {"gemm": "gemm/bench_gemm", "attention": "attention/bench_attention",
                "memops": "memops/bench_memops", "ccl": "collectives/bench_ccl",
                "fsdp": "fsdp/bench_fsdp", "step": "step/bench_step"}[name]
        self.exe = os.path.join(build, path)
        mpi = [mpiexec, "--allow-run-as-root", "--oversubscribe", "-np", "2"] if mpiexec else []
        self.prefix = mpi if name in ("ccl", "fsdp") else []
        self.args = {
            "gemm": ["--backend", "cpu", "--m", "64", "--n", "64", "--k", "64"] + quick,
            "attention": ["--backend", "cpu", "--model", "tiny", "--seq-len", "64", "--pass", "fwd"]
                         + quick,
            "memops": ["--backend", "cpu", "--op", "add", "--size", "64K"] + quick,
            "ccl": ["--backend", "mpi", "--op", "all_reduce", "-b", "1K", "-e", "1K", "-n", "5",
                    "-w", "1", "--quiet"],
            "fsdp": ["--backend", "mpi", "--model", "tiny", "--quiet", "--max-time", "0.02"],
            "step": ["--model", "llama3.1-70b", "--tp", "8", "--grad-accum", "8",
                     "--fused-grad-accum", "--from-reports", os.path.join(repo, "tests/data/step_h100")],
        }[name]
        self.report = {"gemm": "gemm_sweep.csv", "attention": "attention.csv", "memops": None,
                       "ccl": "ccl_all_reduce.csv", "fsdp": "fsdp.csv", "step": "step.csv"}[name]
        self.named = ["--summary-path"] + {
            "attention": ["--report-csv-path"], "ccl": ["--report-csv-path"],
            "fsdp": ["--plan-csv-path", "--allgather-report-csv-path"],
            "step": ["--report-csv-path", "--operators-csv-path"]}.get(name, [])

    def __call__(self, *extra, cwd=None):
        return run(self.prefix + [self.exe] + self.args + list(extra), cwd=cwd)


def reports_written(folder):
    return [f for f in os.listdir(folder)
            if f.endswith((".csv", ".jsonl")) and f not in USER_FILES and not f.startswith(".")]


def beside_user_files(b, out):
    """1 and 2: reports beside a user's files, twice."""
    problems = []
    folder = os.path.join(out, "folder")
    fill(folder)
    first = b("--report-dir-path", folder)
    if first.returncode:
        return [f"first run exit {first.returncode}: {first.stderr[-800:]}"]
    problems += changed(folder)
    written = reports_written(folder)
    if not written:
        problems.append(f"{folder}: the first run wrote no report ({os.listdir(folder)})")
    own_env = glob.glob(os.path.join(folder, "environment-*.json"))
    if len(own_env) != 1:
        problems.append(f"the run's environment should be environment-<run_id>.json beside the "
                        f"user's environment.json, found {own_env}")
    elif "is not an opbench file: left as it is" not in first.stderr:
        problems.append(f"no line says where the environment went: {first.stderr[-400:]}")
    listed = manifest(folder)
    for name in USER_FILES:
        if name in listed:
            problems.append(f"the manifest lists the user's {name}")
    for name in written:
        if name not in listed:
            problems.append(f"the manifest does not list {name}")

    second = b("--report-dir-path", folder)
    if second.returncode:
        return problems + [f"second run exit {second.returncode}: {second.stderr[-800:]}"]
    problems += changed(folder)
    earlier = glob.glob(os.path.join(folder, "earlier-*"))
    if len(earlier) != 1:
        problems.append(f"expected one earlier-* folder, found {earlier}")
    else:
        moved = sorted(os.listdir(earlier[0]))
        for name in written:
            if name not in moved:
                problems.append(f"the first run's {name} was not set aside: {moved}")
        for name in USER_FILES:
            if name in moved:
                problems.append(f"the user's {name} was moved into {earlier[0]}")
        if f"held files of an earlier opbench run: moved them to {earlier[0]}" not in second.stderr:
            problems.append(f"no line says where the earlier files went: {second.stderr[-400:]}")
    return problems


def named_user_files(b, out):
    """3: every named output pointing at a user's file is refused, the file unchanged."""
    problems = []
    folder = os.path.join(out, "named")
    fill(folder)
    for flag in b.named:
        target = os.path.join(folder, "mydata.csv" if "csv" in flag else "notes.md")
        proc = b("--report-dir-path", os.path.join(out, "named_reports"), flag, target)
        lines = [l for l in proc.stderr.splitlines() if l.startswith("error:")]
        if proc.returncode != 2:
            problems.append(f"{flag} {target}: exit {proc.returncode}, expected 2: {proc.stderr[-400:]}")
        elif len(lines) != 1 or flag not in lines[0] or "no opbench run wrote it" not in lines[0]:
            problems.append(f"{flag}: expected one error line naming the flag: {proc.stderr[-400:]}")
        problems += changed(folder)
    return problems


def fsdp_plan_stays(b, out):
    """4: the plan a replay writes into its new report folder stays where it was asked."""
    new = os.path.join(out, "new_folder")
    shutil.rmtree(new, ignore_errors=True)
    proc = b("--report-dir-path", new, "--plan-csv-path", os.path.join(new, "plan.csv"))
    problems = []
    if proc.returncode:
        return [f"replay exit {proc.returncode}: {proc.stderr[-800:]}"]
    if not os.path.exists(os.path.join(new, "plan.csv")):
        problems.append(f"{new}/plan.csv is not there: {os.listdir(new)}")
    if glob.glob(os.path.join(new, "earlier-*")) or "earlier" in proc.stderr:
        problems.append(f"the run set aside its own plan: {os.listdir(new)} {proc.stderr[-400:]}")
    return problems


def resume_keeps_environment(b, out, other):
    """5: --resume keeps the continued run's environment; another binary's folder is refused."""
    folder = os.path.join(out, "resume")
    shutil.rmtree(folder, ignore_errors=True)
    first = b("--report-dir-path", folder)
    second = b("--report-dir-path", folder, "--resume")
    if first.returncode or second.returncode:
        return [f"exit codes {first.returncode}, {second.returncode}: {second.stderr[-800:]}"]
    problems = []
    env = json.load(open(os.path.join(folder, "environment.json")))
    known = {env["run_id"]} | {e["run_id"] for e in env.get("earlier_runs", [])}
    if len(known) != 2:
        problems.append(f"environment.json should hold this run and the continued one: {sorted(known)}")
    for path in glob.glob(os.path.join(folder, "*.jsonl")):
        for line in open(path):
            run_id = json.loads(line).get("run", {}).get("run_id") or json.loads(line).get("run_id")
            if run_id not in known:
                problems.append(f"{path}: run_id {run_id} resolves to no environment in {sorted(known)}")
                break
    refused = run([other.exe, "--report-dir-path", folder, "--resume"] + other.args)
    if refused.returncode != 2 or f"holds the reports of a bench_{b.name} run" not in refused.stderr:
        problems.append(f"--resume of bench_{other.name} into a bench_{b.name} folder: exit "
                        f"{refused.returncode}: {refused.stderr[-400:]}")
    return problems


def formats_honoured(b, out):
    """Item 6: each report file the run writes is in a format --format asked for."""
    problems = []
    # bench_step measures (tiny model, CPU) so that its operators' reports are written too.
    measured = ["--backend", "cpu", "--model", "tiny", "--max-time", "0.02", "--min-samples", "2",
                "--quiet"] if b.name == "step" else None
    for fmt, unwanted in (("jsonl", ".csv"), ("csv", ".jsonl")):
        folder = os.path.join(out, f"format_{fmt}")
        args = b.args
        if measured:
            b.args = measured
        p = b("--format", fmt, "--report-dir-path", folder)
        b.args = args
        if p.returncode != 0:
            problems.append(f"--format {fmt}: exit {p.returncode}: {p.stderr[-300:]}")
            continue
        written = sorted(os.listdir(folder))
        read_back = ("gemm_step.csv", "attention_step.csv", "memops_step.csv") if measured else ()
        wrong = [f for f in written if f.endswith(unwanted) and f not in read_back]
        if measured and fmt == "jsonl" and "gemm_step.jsonl" not in written:
            problems.append(f"--format jsonl: the measured operators' JSON lines are missing: {written}")
        if wrong or not any(f.endswith("." + fmt) for f in written):
            problems.append(f"--format {fmt} wrote {written}")
    return problems


def main():
    name, build, out = sys.argv[1:4]
    mpiexec = sys.argv[4] if len(sys.argv) > 4 else None
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    b = Binary(name, build, mpiexec)
    problems = beside_user_files(b, out) + named_user_files(b, out) + formats_honoured(b, out)
    if name == "fsdp":
        problems += fsdp_plan_stays(b, out)
    if name in ("gemm", "attention", "memops"):
        other = Binary("attention" if name == "gemm" else "gemm", build, mpiexec)
        problems += resume_keeps_environment(b, out, other)
    return verdict(problems, None, f"bench_{name}: ok")


if __name__ == "__main__":
    sys.exit(main())
