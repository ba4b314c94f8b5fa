"""The release lock and preflight's index probe (docs/offline.md), against a world of this
module's own (its files are changed and removed here).

One converge of venv,torch records pip's plans (primus_lock_record); tools/release_lock.py makes the lock beside
the world's pins file from them. Then: the lock covers every installed index file; a converge of an empty base with
the lock is hash-checked and succeeds; a wheel whose bytes changed under the same name is refused naming it before
anything of its stage is installed; a locked wheel removed from the ROCm index stops preflight before any stage starts,
naming it, with nothing downloaded."""
import glob
import json
import os
import subprocess
import sys

import pytest

from harness import REPO, installed_from_indexes, private_world, record_timing

pytestmark = pytest.mark.functional
STAGES = "venv,torch"
TORCHVISION = "torchvision-0.27.0+rocm7.15.0a20260720-cp312-cp312-manylinux_2_28_x86_64.whl"
AUDIO = "torchaudio-2.11.0+rocm7.15.0a20260720-cp312-cp312-manylinux_2_28_x86_64.whl"

sys.path.insert(0, os.path.join(REPO, "tests"))
from world.lib.index import write_simple_index  # noqa: E402


@pytest.fixture(scope="module")
def own_world(tmp_path_factory):
    """A world of this module only: its files are changed and removed by the tests."""
    with private_world(tmp_path_factory, "lock-world") as info:
        yield info["root"]


def pins(root):
    return os.path.join(root, "pins-v26.5.yml")


def server_log_size(root):
    path = os.path.join(root, "server.log")
    return os.path.getsize(path) if os.path.exists(path) else 0


def requests_since(root, offset):
    with open(os.path.join(root, "server.log")) as handle:
        handle.seek(offset)
        return handle.read()


@pytest.fixture(scope="module")
def locked(own_world, playbook, target):
    """The lock made from a recorded converge of venv,torch (written beside the world's pins file)."""
    base = target.base("lock-record")
    record = base + "-plans.jsonl"
    run = playbook(STAGES, base, extra={"primus_release_file": pins(own_world), "primus_lock_record": record})
    assert run.rc == 0, run
    proc = subprocess.run([sys.executable, os.path.join(REPO, "tools", "release_lock.py"), "--pins", pins(own_world),
                           "--record", record], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    with open(os.path.join(own_world, "pins-v26.5.lock.json")) as handle:
        return base, json.load(handle)


def test_the_lock_covers_every_installed_index_file(locked):
    base, lock = locked
    files = lock["files"]
    by_file = dict((f["filename"], f) for f in files)
    assert TORCHVISION in by_file and by_file[TORCHVISION]["index"] == "torch"
    assert by_file[TORCHVISION]["size"] > 0 and len(by_file[TORCHVISION]["sha256"]) == 64
    assert any(f["index"] == "pypi" and f["name"].lower() == "cxxfilt" for f in files)
    # converged on a gfx942 host; the other arch of the pins' device_archs is locked too
    assert any(f["filename"].startswith("amd_torch_device_gfx950-2.12.0+rocm7.15.0a20260720") for f in files)
    names = set((f["name"].lower().replace("_", "-").replace(".", "-"), f["version"]) for f in files)
    missing = installed_from_indexes(base) - names
    assert not missing, "installed but not locked: %s" % sorted(missing)


def test_a_converge_with_the_lock_is_hash_checked(locked, own_world, playbook, target):
    base = target.base("lock-use")
    run = playbook(STAGES, base, extra={"primus_release_file": pins(own_world)})
    record_timing("%s on an empty base, hash-checked by the release lock (unprivileged, SSH)" % STAGES, run.seconds)
    assert run.rc == 0, run
    logs = "".join(open(p, errors="replace").read() for p in glob.glob(os.path.join(base, "logs", "*.log")))
    assert "--require-hashes" in logs
    assert ("torchvision", "0.27.0+rocm7.15.0a20260720") in installed_from_indexes(base)


def rewrite_wheel(root, filename, remove=False):
    """Change a ROCm wheel's bytes under the same name (or remove it) and re-write the index, as a re-published nightly."""
    files_dir = os.path.join(root, "rocm", "files")
    (path,) = glob.glob(os.path.join(files_dir, "*", filename))
    if remove:
        os.unlink(path)
        if os.path.exists(path + ".metadata"):
            os.unlink(path + ".metadata")
    else:
        with open(path, "ab") as handle:
            handle.write(b"\0re-published")
    write_simple_index(files_dir, os.path.join(root, "rocm", "whl-multi-arch"), "/rocm/files")


def test_a_wheel_changed_under_its_name_is_refused_before_install(locked, own_world, playbook, target):
    rewrite_wheel(own_world, TORCHVISION)
    base = target.base("lock-changed")
    run = playbook(STAGES, base, extra={"primus_release_file": pins(own_world), "primus_index_probe": False})
    assert run.rc != 0
    assert "changed under the same name" in run.output and TORCHVISION in run.output, run.output[-5000:]
    assert "Nothing was installed" in run.output
    names = set(n for n, version in installed_from_indexes(base))
    assert "torch" not in names and "torchvision" not in names   # the torch stage installed nothing


def test_preflight_names_a_removed_locked_wheel_and_downloads_nothing(locked, own_world, playbook, target):
    rewrite_wheel(own_world, AUDIO, remove=True)
    base = target.base("lock-probe")
    offset = server_log_size(own_world)
    run = playbook(STAGES, base, extra={"primus_release_file": pins(own_world)})
    assert run.rc != 0
    task = run.task("still served")
    assert task["status"] == "failed"
    msg = task["result"]["msg"]
    assert AUDIO in msg and "(missing)" in msg and "nightly 2026-07-20" in msg, msg[-4000:]
    assert "tools/relock.py" in msg
    # Order and cause, not a duration: the probe stopped the run in preflight, before any stage started, and the
    # run released its lock (the probe's seconds are a measurement, docs/benchmarks.md).
    assert not [r["task"] for r in run.results if "Start stage" in r["task"]], [r["task"] for r in run.results]
    assert run.results.index(task) < run.results.index(run.task("Release the lock")), [r["task"] for r in run.results]
    record_timing("preflight's index probe naming a removed locked wheel", task["result"]["seconds"])
    requests = requests_since(own_world, offset)
    assert "/files/" not in requests, "a file was downloaded:\n" + requests[-2000:]
    assert not os.path.exists(os.path.join(base, "venv"))
