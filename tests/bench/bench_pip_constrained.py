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
"""
from __future__ import print_function

import argparse
import json
import os
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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    opts = parser.parse_args()

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
