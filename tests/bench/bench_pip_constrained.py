#!/usr/bin/env python
"""Benchmark: pip_constrained deciding "already satisfied" on a venv with 300 distributions.

Not a test: it prints figures. It makes a venv from PRIMUS_TEST_PYTHON312 (default pyenv's 3.12.1),
writes 300 small .dist-info directories straight into its site-packages (with Requires-Dist
chains, extras and markers, so the dependency-closure walk has work to do), pins every one of them
in the task plus a constraints file, and runs the module:

  1. directly (python -m ansible_collections...pip_constrained args.json): the module's own
     wall time, from interpreter start to exit_json, repeated; this is the "module time";
  2. in-process, split into the probe (one run of the venv's python) and the offline decision;
  3. once through ansible-playbook, for the end-to-end figure including Ansible's own overhead.

Usage: python tests/bench/bench_pip_constrained.py [--count 300] [--repeat 7]
Exit status 1 if the module ran pip, reported a change, or the median module time is >= 1 s.

On a converged base (every stage done), the tasks of a real run:

  python tests/bench/bench_pip_constrained.py --results run.jsonl [--before /path/to/other/.collections]

run.jsonl: the task results of a converged `ansible-playbook playbooks/primus.yml` run recorded with the test callback
(ANSIBLE_CALLBACK_PLUGINS=tests/functional/callback_plugins ANSIBLE_CALLBACKS_ENABLED=primus_test_results
PRIMUS_TEST_RESULTS=run.jsonl). Every pip_constrained task that ran and found its request satisfied is replayed
(its module_args) as a module process, --repeat times each: with the installed-set snapshot warm, without it (the
snapshot removed before each run: every task runs the probe), and with the collection at --before (e.g. main's
checkout) for the figure before the snapshot. Prints the median per-task wall and CPU seconds of each.
"""
from __future__ import print_function

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(REPO, ".collections")
sys.path.insert(0, COLLECTIONS)

from ansible_collections.primus.trainenv.plugins.module_utils._pip.decide import decide_present  # noqa: E402
from ansible_collections.primus.trainenv.plugins.module_utils._pip.libs import load_packaging  # noqa: E402
from ansible_collections.primus.trainenv.plugins.module_utils._pip.probe import parse_probe, probe_command  # noqa: E402
from ansible_collections.primus.trainenv.plugins.module_utils._pip.requirements import (  # noqa: E402
    classify, read_requirements_file)

PY312 = os.environ.get("PRIMUS_TEST_PYTHON312") or "/root/.pyenv/versions/3.12.1/bin/python3.12"
ROCM = "2.12.0+rocm7.15.0a20260720"
MODULE = "ansible_collections.primus.trainenv.plugins.modules.pip_constrained"


def clean_env(**extra):
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith(("PIP_", "ANSIBLE_", "PYTHON")))
    env.update(extra)
    return env


def names(count):
    out = [("torch", ROCM)]
    for i in range(1, count):
        out.append(("bench-pkg-%03d" % i, "1.%d.0" % i))
    return out


def write_dists(site, count):
    dists = names(count)
    for index, (name, version) in enumerate(dists):
        info = os.path.join(site, "%s-%s.dist-info" % (name.replace("-", "_"), version))
        os.makedirs(info)
        lines = ["Metadata-Version: 2.1", "Name: %s" % name, "Version: %s" % version, "Provides-Extra: extra"]
        if index:
            nxt = dists[(index + 1) % count]
            lines.append("Requires-Dist: %s>=1.0" % nxt[0])
            lines.append("Requires-Dist: torch")
            lines.append('Requires-Dist: %s; extra == "extra"' % dists[(index + 7) % count][0])
            lines.append('Requires-Dist: not-on-linux; sys_platform == "win32"')
        text = "\n".join(lines) + "\n"
        with open(os.path.join(info, "METADATA"), "w") as handle:
            handle.write(text)
        with open(os.path.join(info, "INSTALLER"), "w") as handle:
            handle.write("pip\n")
        with open(os.path.join(info, "RECORD"), "w") as handle:
            handle.write("%s/METADATA,,\n%s/INSTALLER,,\n%s/RECORD,,\n" % ((os.path.basename(info),) * 3))
    return dists


def converged_tasks(results):
    """module_args of the pip_constrained tasks of a recorded run that ran and were satisfied (changed nothing)."""
    out = []
    with open(results) as handle:
        for line in handle:
            record = json.loads(line)
            result = record.get("result") or {}
            args = (result.get("invocation") or {}).get("module_args") or {}
            if record.get("status") == "ok" and "satisfied" in result and args.get("venv") and result["satisfied"] \
                    and not result.get("changed") and not args.get("wheel_dir"):
                out.append((record["task"], args))
    return out


def logged_tasks(base, forbid):
    """module_args rebuilt from the dry-run command lines a run wrote to $base/logs/*.log (one per install task)."""
    import glob
    import shlex
    out = []
    for path in sorted(glob.glob(os.path.join(base, "logs", "*.log"))):
        with open(path, errors="replace") as handle:
            for line in handle:
                if not line.startswith("### ") or " pip_constrained: " not in line or " --dry-run " not in line:
                    continue
                argv = shlex.split(line.split(" pip_constrained: ", 1)[1])
                if "--force-reinstall" in argv or "--no-deps" in argv and "--no-index" in argv:
                    continue   # a forced reinstall, or the metadata of a source tree: never "satisfied"
                split = argv.index("--")
                opts, targets = argv[:split], argv[split + 1:]
                args = {"venv": os.path.dirname(os.path.dirname(argv[0])), "name": targets, "forbid": forbid,
                        "pre": "--pre" in opts, "no_deps": "--no-deps" in opts,
                        "no_build_isolation": "--no-build-isolation" in opts,
                        "constraints": [o.split("=", 1)[1] for o in opts if o.startswith("--constraint=")]}
                for opt in opts:
                    if opt.startswith("--index-url="):
                        args["index_url"] = opt.split("=", 1)[1]
                    elif opt.startswith("--requirement="):
                        args["requirements"] = opt.split("=", 1)[1]
                if not targets and "requirements" not in args:
                    continue
                if args not in [a for _n, a in out]:
                    out.append((os.path.basename(path), args))
    return out


def timed(argv, env, cwd):
    """(wall s, CPU s of the child, its JSON result)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, json.loads(proc.stdout[proc.stdout.index("{"):])


def bench_converged(opts):
    if opts.results:
        tasks = converged_tasks(opts.results)
    else:
        import yaml  # noqa: PLC0415 - only this mode reads the pins
        with open(opts.pins) as handle:
            forbid = yaml.safe_load(handle)["primus_pins"]["pip_forbid"]
        tasks = logged_tasks(opts.base, forbid)
        env = clean_env(PYTHONPATH=COLLECTIONS)
        kept = []
        for index, (name, args) in enumerate(tasks):   # only those satisfied on this converged base
            args_file = os.path.join(tempfile.gettempdir(), "bench-pip-check-%d-%d.json" % (os.getpid(), index))
            with open(args_file, "w") as handle:
                json.dump({"ANSIBLE_MODULE_ARGS": dict(args, _ansible_check_mode=True)}, handle)
            result = timed([sys.executable, "-m", MODULE, args_file], env, os.path.dirname(args_file))[2]
            os.remove(args_file)
            if result.get("satisfied") is True:
                kept.append((name, args))
            else:
                why = (result.get("reasons") or [result.get("msg")])[:1]
                print("  not replayed (not satisfied on this base): %s %s" % (name, why))
        tasks = kept
        opts.results = "%s/logs (%d install tasks)" % (opts.base, len(logged_tasks(opts.base, forbid)))
    if not tasks:
        print("no satisfied pip_constrained task in %s" % opts.results)
        return 1
    root = tempfile.mkdtemp(prefix="bench-pip-converged-")
    # In this order each round, the warm setup finds the snapshot the probing one stored (as a converged run finds
    # the one the previous run stored).
    setups = [("after: no snapshot (probe every task)", COLLECTIONS, True), ("after: snapshot warm", COLLECTIONS, False)]
    if opts.before:
        setups.insert(0, ("before: %s" % opts.before, opts.before, True))
    samples = dict((label, ([], [], [])) for label, _c, _d in setups)
    ok = True
    for _round in range(opts.repeat):   # the setups interleaved, so a change of load hits them alike
        for label, collections, drop in setups:
            env = clean_env(PYTHONPATH=collections)
            walls, cpus, sources = samples[label]
            for index, (_name, args) in enumerate(tasks):
                args_file = os.path.join(root, "args-%d.json" % index)
                with open(args_file, "w") as handle:
                    json.dump({"ANSIBLE_MODULE_ARGS": args}, handle)
                if drop:
                    snapshot = os.path.join(args["venv"], ".pip-constrained-snapshot.json")
                    if os.path.exists(snapshot):
                        os.remove(snapshot)
                wall, cpu, result = timed([sys.executable, "-m", MODULE, args_file], env, root)
                ok = ok and result.get("satisfied") is True and not result.get("changed") and not result.get("commands")
                walls.append(wall)
                cpus.append(cpu)
                sources.append(result.get("installed_from", "probe"))
    figures = {}
    for label, (walls, cpus, sources) in samples.items():
        figures[label] = (statistics.median(walls), statistics.median(cpus), sum(walls) / opts.repeat,
                          sources.count("snapshot"), len(sources))
    print("converged base: %d satisfied pip_constrained tasks replayed from %s, %d rounds"
          % (len(tasks), opts.results, opts.repeat))
    for label, (wall, cpu, total, snap, count) in figures.items():
        print("  %-60s per task: median %.3f s wall, %.3f s CPU; all tasks %.2f s; from snapshot %d/%d"
              % (label, wall, cpu, total, snap, count))
    shutil.rmtree(root, ignore_errors=True)
    print("PASS" if ok else "FAIL: a replayed task was not satisfied, changed something or ran pip")
    return 0 if ok else 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument("--results", help="task results (JSONL) of a converged run: replay its satisfied pip tasks")
    parser.add_argument("--base", help="a converged base: replay every install task of its logs (rebuilt from the "
                        "dry-run command lines) that is satisfied now")
    parser.add_argument("--pins", help="with --base: the pins file (its pip_forbid is every task's forbid)")
    parser.add_argument("--before", help="another checkout's .collections directory, measured as 'before'")
    opts = parser.parse_args()
    if opts.results or opts.base:
        return bench_converged(opts)

    root = tempfile.mkdtemp(prefix="bench-pip-constrained-")
    venv = os.path.join(root, "venv")
    subprocess.run([PY312, "-m", "venv", venv], check=True, env=clean_env())
    python = os.path.join(venv, "bin", "python")
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    dists = write_dists(site, opts.count)
    constraints = os.path.join(root, "pip-constraints.txt")
    with open(constraints, "w") as handle:
        handle.write("torch==%s\n" % ROCM)
    requested = ["%s==%s" % d for d in dists[:1]] + ["%s[extra]==%s" % d for d in dists[1:]]
    args = {"venv": venv, "name": requested, "constraints": [constraints], "forbid": ["nvidia-*"],
            "index_url": "http://127.0.0.1:9/unreachable/simple"}
    args_file = os.path.join(root, "args.json")
    with open(args_file, "w") as handle:
        json.dump({"ANSIBLE_MODULE_ARGS": args}, handle)

    # 1. the module as a process
    times = []
    result = None
    env = clean_env(PYTHONPATH=COLLECTIONS)
    for _run in range(opts.repeat):
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", MODULE, args_file], capture_output=True, text=True, env=env,
                              cwd=root, check=False)
        times.append(time.perf_counter() - start)
        result = json.loads(proc.stdout[proc.stdout.index("{"):])
    installed = len(parse_probe(subprocess.run(probe_command(python), capture_output=True, text=True,
                                               check=True).stdout).dists)

    # 2. in-process split: probe vs decision
    start = time.perf_counter()
    out = subprocess.run(probe_command(python), capture_output=True, text=True, check=True).stdout
    probe_s = time.perf_counter() - start
    start = time.perf_counter()
    probe = parse_probe(out)
    pk = load_packaging(probe.site_dirs)
    items = [classify(pk, text, "name[%d]" % i) for i, text in enumerate(requested)]
    constraint_items = read_requirements_file(pk, constraints, constraint=True)[1]
    decision = decide_present(pk, probe, items, constraint_items)
    decide_s = time.perf_counter() - start

    # 3. end to end through ansible-playbook
    playbook = os.path.join(root, "bench.yml")
    with open(playbook, "w") as handle:
        json.dump([{"hosts": "localhost", "gather_facts": False,
                    "tasks": [{"primus.trainenv.pip_constrained": args}]}], handle)
    cfg = os.path.join(root, "ansible.cfg")
    with open(cfg, "w") as handle:
        handle.write("[defaults]\n")
    start = time.perf_counter()
    play = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,",
                           "-c", "local", "-e", "ansible_python_interpreter=%s" % sys.executable, playbook],
                          capture_output=True, text=True, cwd=root,
                          env=clean_env(ANSIBLE_CONFIG=cfg, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS), check=False)
    play_s = time.perf_counter() - start

    median = statistics.median(times)
    print("venv: %s (%d distributions installed, %d requested, closure checked: %d)"
          % (venv, installed, len(requested), decision.checked))
    print("module time (process, %d runs): median %.3f s, min %.3f s, max %.3f s"
          % (len(times), median, min(times), max(times)))
    print("  of which: probe (one run of the venv's python) %.3f s, offline decision %.3f s" % (probe_s, decide_s))
    print("ansible-playbook end to end (one task, incl. Ansible start-up): %.3f s, rc=%d" % (play_s, play.returncode))
    print("result: changed=%s satisfied=%s pip commands=%d reasons=%s"
          % (result["changed"], result["satisfied"], len(result["commands"]), result["reasons"][:3]))
    ok = (not result["changed"] and result["satisfied"] and not result["commands"] and decision.satisfied
          and median < 1.0 and play.returncode == 0)
    print("PASS: satisfied in under 1 second of module time" if ok else "FAIL")
    if not opts.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
