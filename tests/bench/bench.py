#!/usr/bin/env python
"""`make bench` and `make bench-fleet`: what a run of playbooks/primus.yml costs, against the simulated world.

Not a test: it prints figures. Every run is driven by ansible-runner's Python API (ansible_runner.run) in a
child process that is a subreaper (so the CPU of async builds, which detach from ansible-playbook, is
counted in its children's rusage); the per-task, per-stage and per-host figures come from ansible-runner's
job events (plugins/plugin_utils/run_events.py), the HTTP requests from the world server's log (one line per
request), the pip processes from the commands pip_constrained reports having run.

    python tests/bench/bench.py --world DIR [--work DIR] [--upstream /path/to/setup.sh]
    python tests/bench/bench.py --world DIR --fleet 1,4,16 [--fleet-tags venv,torch]

`make bench` measures, on localhost (local connection) and one fresh PRIMUS_BASE: the first converge of all
default stages, the converged re-run, `--tags te` and `--check --diff` on the converged base, a second run on
a base another run holds (seconds until it is refused, from its launch and from its first task), and
pip_constrained's satisfied check (tests/bench/bench_pip_constrained.py). Its last line is machine-readable.
`--upstream FILE` also runs that installer (bash FILE, with PRIMUS_BASE set and UPSTREAM_ENV's KEY=VALUE words
in its environment) twice against the same world, interleaved with ours, and prints the ratios.
`--fleet N,N,...` converges max(N) local inventory hosts (one PRIMUS_BASE each) with --fleet-tags, then times a
converged run of the first N hosts for each N: seconds per run and per host (the controller's cost).
"""
from __future__ import print_function

import argparse
import ctypes
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, ".collections"))
sys.path.insert(0, os.path.join(REPO, "tests"))

from ansible_collections.primus.trainenv.plugins.plugin_utils import run_events  # noqa: E402

PY312 = os.environ.get("PRIMUS_TEST_PYTHON312") or "/root/.pyenv/versions/3.12.1/bin/python3.12"
PLAYBOOK = os.path.join(REPO, "playbooks", "primus.yml")
REFUSAL_TASK = "PRIMUS_BASE is in use by another run"
LOCK_TASK = "Lock PRIMUS_BASE for this run"
PR_SET_CHILD_SUBREAPER = 36


# --------------------------------------------------------------------------- pure: figures from events

def summarize(events):
    """The figures of one run from its job events."""
    results = run_events.task_results(events)
    progress = run_events.Progress().add(events)
    hosts = sorted(progress.hosts)
    stages = {}
    for host in hosts:
        for stage, seconds in progress.stage_seconds(host):
            stages[stage] = max(stages.get(stage, 0.0), seconds)
    ran = [r for r in results if r["status"] != "skipped"]
    return {
        "tasks": len(ran), "skipped": len(results) - len(ran), "changed": sum(1 for r in results if r["changed"]),
        "failed": sum(1 for r in results if r["status"] in ("failed", "unreachable")),
        "modules": run_events.module_runs(results), "pip": run_events.pip_processes(results),
        "stages": stages, "hosts": hosts,
        "slowest": sorted(((r["seconds"], r["task"]) for r in ran), reverse=True)[:8],
        "first_task": min([run_events.parse_time(e.get("created")) for e in events if e.get("event") == "runner_on_start"]
                          or [None]),
        "refused_at": next((run_events.parse_time(e.get("created")) for e in events
                            if e.get("event") == "runner_on_failed" and REFUSAL_TASK in (e.get("event_data") or {}).get("task", "")),
                           None),
    }


def ratio(value, base):
    return value / base if base else 0.0


def format_table(header, rows):
    """A Markdown table (strings as they are, floats with one decimal, ints as ints)."""
    def cell(value):
        if isinstance(value, float):
            return "%.1f" % value
        return str(value)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return lines


def bench_line(figures):
    """The last line of `make bench`, machine-readable."""
    keys = ("first_s", "first_cpu_s", "rerun_s", "rerun_ratio", "te_s", "check_s", "satisfied_check_s",
            "first_requests", "rerun_requests", "first_pip")
    parts = []
    for key in keys:
        value = figures.get(key)
        if value is None:
            text = "na"
        elif key == "rerun_ratio":
            text = "%.3f" % value
        elif isinstance(value, float):
            text = "%.2f" % value
        else:
            text = str(value)
        parts.append("%s=%s" % (key, text))
    return "bench: " + " ".join(parts)


SATISFIED = re.compile(r"^module time \(process, \d+ runs\): median ([0-9.]+) s", re.M)


def parse_satisfied(output):
    """The median module time of bench_pip_constrained.py's output, or None."""
    match = SATISFIED.search(output)
    return float(match.group(1)) if match else None


def count_lines(path):
    try:
        with open(path, "rb") as handle:
            return sum(1 for _line in handle)
    except OSError:
        return 0


# --------------------------------------------------------------------------- one run, in a child process

def one_run(spec_file):
    """Run one playbook with ansible_runner.run as a subreaper; reap what detached from it; exit with its rc."""
    import ansible_runner   # pylint: disable=import-outside-toplevel
    with open(spec_file) as handle:
        spec = json.load(handle)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    runner = ansible_runner.run(private_data_dir=spec["dir"], ident=spec["ident"], playbook=PLAYBOOK,
                                project_dir=REPO, inventory=spec["inventory"], cmdline=spec.get("cmdline") or None,
                                envvars=spec["env"], quiet=True,
                                # Not written to env/ of the shared private data dir: ansible-runner would reuse the
                                # first run's cmdline file for every later run given none (the default stage list).
                                suppress_env_files=True)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            time.sleep(0.1)
    return 0 if runner.rc == 0 else 1


class Bench:
    def __init__(self, world, work):
        self.world = world
        self.work = work
        self.log = os.path.join(world, "server.log")
        self.count = 0
        with open(os.path.join(world, "world.json")) as handle:
            self.info = json.load(handle)

    def inventory(self, hosts):
        """A local-connection inventory of hosts {name: primus_base} with the world's pins and an MI300X host."""
        host_dir = os.path.join(REPO, "tests", "world", "hosts", "mi300x")
        common = {
            "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
            "primus_release_file": os.path.join(self.world, "pins-v26.5.yml"), "primus_python": PY312,
            "primus_rocminfo": os.path.join(host_dir, "bin", "rocminfo"),
            "primus_kfd_nodes_path": os.path.join(host_dir, "sys", "class", "kfd", "kfd", "topology", "nodes"),
            "primus_min_free_gib": 1,
        }
        path = os.path.join(self.work, "inventory-%d.json" % len(hosts))
        with open(path, "w") as handle:
            json.dump({"all": {"vars": common, "hosts": {name: {"primus_base": base} for name, base in hosts.items()}}}, handle)
        return path

    def env(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "ANSIBLE_", "PRIMUS_"))}
        env.update({"PIP_CONFIG_FILE": os.devnull, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0",
                    "PATH": os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "/usr/bin:/bin")]),
                    "PRIMUS_WORLD_ROCMINFO": os.path.join(REPO, "tests", "world", "hosts", "mi300x", "rocminfo.txt")})
        return env

    def start(self, inventory, cmdline=""):
        """Start one run (a child process); returns (proc, ident dir, launch time)."""
        self.count += 1
        ident = "run%02d" % self.count
        spec = os.path.join(self.work, "%s.json" % ident)
        with open(spec, "w") as handle:
            json.dump({"dir": os.path.join(self.work, "pdd"), "ident": ident, "inventory": inventory,
                       "cmdline": cmdline, "env": self.env()}, handle)
        os.makedirs(os.path.join(self.work, "pdd"), exist_ok=True)
        launched = time.time()
        proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--one", spec], env=self.env())
        return proc, os.path.join(self.work, "pdd", "artifacts", ident), launched

    def finish(self, proc, artifacts, launched, requests_before):
        _pid, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.time() - launched
        events = run_events.EventReader(os.path.join(artifacts, "job_events")).read()
        figures = summarize(events)
        figures.update(wall=wall, cpu=usage.ru_utime + usage.ru_stime, rc=proc.returncode,
                       requests=count_lines(self.log) - requests_before, launched=launched)
        return figures

    def run(self, inventory, cmdline=""):
        before = count_lines(self.log)
        return self.finish(*self.start(inventory, cmdline), requests_before=before)

    def refusal(self, inventory, cmdline=""):
        """A run holding the base, and a second run started once the first holds the lock: when is it refused?"""
        before = count_lines(self.log)
        holder, holder_dir, holder_launched = self.start(inventory, cmdline)
        reader = run_events.EventReader(os.path.join(holder_dir, "job_events"))
        deadline = time.monotonic() + 300
        locked = False
        while not locked and time.monotonic() < deadline and holder.poll() is None:
            locked = any(e.get("event") == "runner_on_ok" and (e.get("event_data") or {}).get("task") == LOCK_TASK
                         for e in reader.read())
            time.sleep(0.05)
        second = self.finish(*self.start(inventory, cmdline), requests_before=before)
        self.finish(holder, holder_dir, holder_launched, before)
        if not locked or second["refused_at"] is None:
            return None, None
        return second["refused_at"] - second["launched"], second["refused_at"] - second["first_task"]


def satisfied_check():
    proc = subprocess.run([sys.executable, os.path.join(HERE, "bench_pip_constrained.py"), "--repeat", "5"],
                          capture_output=True, text=True, check=False)
    return parse_satisfied(proc.stdout), proc.stdout


def upstream_run(script, base, env_words, log):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PRIMUS_"))}
    env.update({"PIP_CONFIG_FILE": os.devnull, "PRIMUS_BASE": base, "PRIMUS_PYTHON": PY312})
    for word in env_words:
        key, _sep, value = word.partition("=")
        env[key] = value
    before = count_lines(log)
    start = time.time()
    proc = subprocess.Popen(["bash", script], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            cwd=os.path.dirname(script))
    _pid, status, usage = os.wait4(proc.pid, 0)
    return {"wall": time.time() - start, "cpu": usage.ru_utime + usage.ru_stime,
            "requests": count_lines(log) - before, "rc": os.waitstatus_to_exitcode(status)}


def machine():
    model = ""
    try:
        with open("/proc/cpuinfo") as handle:
            model = next((line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), "")
    except OSError:
        pass
    return "%d cores (%s), load average %s" % (os.cpu_count() or 0, model or "?", " ".join("%.1f" % x for x in os.getloadavg()))


def main_bench(bench, args):
    print("bench: %s; the simulated world at %s" % (machine(), bench.info.get("base_url", "?")))
    base = os.path.join(bench.work, "base")
    inventory = bench.inventory({"localhost": base})
    upstream = []
    env_words = (os.environ.get("UPSTREAM_ENV") or "").split()
    runs = {}
    tags = "--tags %s" % args.tags if args.tags else ""
    runs["first"] = bench.run(inventory, tags)
    print("bench: first run %.1f s (rc %d)" % (runs["first"]["wall"], runs["first"]["rc"]))
    if args.upstream:
        upstream.append(upstream_run(args.upstream, os.path.join(bench.work, "upstream-base"), env_words, bench.log))
    runs["rerun"] = bench.run(inventory, tags)
    if args.upstream:
        upstream.append(upstream_run(args.upstream, os.path.join(bench.work, "upstream-base"), env_words, bench.log))
    runs["te"] = bench.run(inventory, "--tags te")
    runs["check"] = bench.run(inventory, ("%s --check --diff" % tags).strip())
    from_launch, from_first_task = bench.refusal(inventory, tags)
    satisfied, _output = satisfied_check()

    first = runs["first"]
    rows = [[name, runs[name]["wall"], "%.3f" % ratio(runs[name]["wall"], first["wall"]), runs[name]["cpu"],
             runs[name]["tasks"], runs[name]["skipped"], runs[name]["modules"], runs[name]["changed"],
             runs[name]["requests"], runs[name]["pip"], runs[name]["rc"]] for name in ("first", "rerun", "te", "check")]
    print()
    print("\n".join(format_table(["run", "wall s", "/ first", "CPU s", "tasks", "skipped", "module runs", "changed",
                                  "HTTP requests", "pip processes", "rc"], rows)))
    print()
    stage_rows = [[stage, first["stages"].get(stage, 0.0), runs["rerun"]["stages"].get(stage, 0.0)]
                  for stage in first["stages"]]
    print("\n".join(format_table(["stage", "first s", "re-run s"], stage_rows)))
    print()
    print("slowest tasks of the converged re-run: " + "; ".join("%s %.1f s" % (t, s) for s, t in runs["rerun"]["slowest"]))
    print("a second run on a locked base is refused %s s after its launch, %s s after its first task" % (
        "%.1f" % from_launch if from_launch is not None else "?", "%.1f" % from_first_task if from_first_task is not None else "?"))
    print("pip_constrained satisfied check (module time, median): %s s" % ("%.3f" % satisfied if satisfied is not None else "?"))
    if upstream:
        print()
        rows = [["first run", first["wall"], upstream[0]["wall"], "%.2f" % ratio(first["wall"], upstream[0]["wall"]),
                 first["cpu"], upstream[0]["cpu"], first["requests"], upstream[0]["requests"]],
                ["re-run", runs["rerun"]["wall"], upstream[1]["wall"], "%.2f" % ratio(runs["rerun"]["wall"], upstream[1]["wall"]),
                 runs["rerun"]["cpu"], upstream[1]["cpu"], runs["rerun"]["requests"], upstream[1]["requests"]]]
        print("\n".join(format_table(["", "ours s", "upstream s", "ours / upstream", "ours CPU s", "upstream CPU s",
                                      "ours requests", "upstream requests"], rows)))
        print("upstream rc: %s" % ", ".join(str(u["rc"]) for u in upstream))
    print("bench: machine after the runs: %s" % machine())
    print(bench_line({
        "first_s": first["wall"], "first_cpu_s": first["cpu"], "rerun_s": runs["rerun"]["wall"],
        "rerun_ratio": ratio(runs["rerun"]["wall"], first["wall"]), "te_s": runs["te"]["wall"],
        "check_s": runs["check"]["wall"], "satisfied_check_s": satisfied, "first_requests": first["requests"],
        "rerun_requests": runs["rerun"]["requests"], "first_pip": first["pip"]}))
    return 0 if all(runs[name]["rc"] == 0 for name in runs) else 1


def main_fleet(bench, sizes, tags):
    print("bench-fleet: %s; %s local-connection hosts, one PRIMUS_BASE each, stages %s" % (machine(), max(sizes), tags))
    hosts = {"node%02d" % i: os.path.join(bench.work, "fleet", "base-%02d" % i) for i in range(1, max(sizes) + 1)}
    inventory = bench.inventory(hosts)
    converge = bench.run(inventory, "--tags %s" % tags)
    print("bench-fleet: converging %d hosts took %.1f s (rc %d)" % (len(hosts), converge["wall"], converge["rc"]))
    rows = []
    for size in sizes:
        names = sorted(hosts)[:size]
        figures = bench.run(inventory, "--tags %s --limit %s" % (tags, ",".join(names)))
        rows.append([size, figures["wall"], figures["wall"] / size, figures["cpu"], figures["cpu"] / size,
                     figures["tasks"], figures["changed"], figures["requests"], figures["rc"]])
    print()
    print("\n".join(format_table(["hosts", "wall s", "wall s / host", "CPU s (controller + local modules)", "CPU s / host", "tasks",
                                  "changed", "HTTP requests", "rc"], rows)))
    print("bench-fleet: " + " ".join("hosts%d_s=%.1f" % (row[0], row[1]) for row in rows))
    return 0 if converge["rc"] == 0 and all(row[-1] == 0 for row in rows) else 1


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--world", help="a built world (make world); served for the bench if not running")
    parser.add_argument("--work", help="where the bases and runner's artifacts go (default: a temporary directory)")
    parser.add_argument("--upstream", help="the upstream installer (setup.sh) to run beside ours")
    parser.add_argument("--fleet", help="comma-separated host counts, e.g. 1,4,16")
    parser.add_argument("--fleet-tags", default="venv,torch")
    parser.add_argument("--tags", help="the stages of `make bench`'s runs (default: all default stages)")
    args = parser.parse_args(argv)
    if args.one:
        return one_run(args.one)
    if not args.world or not os.path.isfile(os.path.join(args.world, "world.json")):
        parser.error("--world DIR: a built world (make world) is needed, got %r" % args.world)
    if args.upstream and not os.path.isfile(args.upstream):
        parser.error("--upstream %r: no such file (give the path of upstream's setup.sh)" % args.upstream)
    sizes = []
    if args.fleet:
        if not re.match(r"^[1-9]\d{0,3}(,[1-9]\d{0,3})*$", args.fleet):
            parser.error("--fleet %r: give host counts like 1,4,16" % args.fleet)
        sizes = [int(n) for n in args.fleet.split(",")]
    for option, value in (("--fleet-tags", args.fleet_tags), ("--tags", args.tags)):
        if value is not None and not re.match(r"^[a-z0-9_]+(,[a-z0-9_]+)*$", value):
            parser.error("%s %r: give comma-separated stage names" % (option, value))
    from world import serve as world_serve   # pylint: disable=import-outside-toplevel
    started = world_serve.main(["status", "--root", args.world]) != 0
    if started:
        world_serve.main(["start", "--root", args.world])
    work = args.work or tempfile.mkdtemp(prefix="primus-bench-")
    os.makedirs(work, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        bench = Bench(os.path.abspath(args.world), os.path.abspath(work))
        return main_fleet(bench, sizes, args.fleet_tags) if sizes else main_bench(bench, args)
    finally:
        if started:
            world_serve.main(["stop", "--root", args.world])
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
