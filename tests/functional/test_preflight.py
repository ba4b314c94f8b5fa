"""The preflight role for real: ansible-playbook playbooks/primus.yml --tags preflight.

Most cases run in ONE playbook run over an inventory of local pseudo-hosts, each with its own
variables (a recorded GPU host of tests/world/hosts, a bad PRIMUS_BASE, a bad TE mode ...); a
failing host stops only itself. The cases that are about the controller's environment variables
(PRIMUS_BASE unset, PRIMUS_TE_MODE=wheel|fast) run with that environment. The unwritable
PRIMUS_BASE is checked as an unprivileged user: as root the test runs ansible-playbook as
`nobody` from copies in /tmp (the controller's interpreter may live under a private /root).
A small callback plugin written at test time records every task result as JSON. Every case also
asserts that nothing was created.
"""
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile

import pytest

pytestmark = pytest.mark.functional

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOSTS = os.path.join(REPO, "tests", "world", "hosts")
CONTROLLER_BIN = os.path.dirname(sys.executable)
GIB = 1024 ** 3

CALLBACK_PLUGINS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "callback_plugins")


def clean_env(**extra):
    env = dict((k, v) for k, v in os.environ.items()
               if not k.startswith(("ANSIBLE_", "PRIMUS_")) and k not in ("PYTORCH_ROCM_ARCH", "MAX_JOBS", "SRC_DIR"))
    env.update(extra)
    return env


class Run(object):
    """One ansible-playbook run and its recorded results."""

    def __init__(self, proc, records):
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.records = records

    def host(self, name):
        return [r for r in self.records if r["host"] == name]

    def failure(self, host):
        failed = [r for r in self.host(host) if r["status"] == "failed"]
        return failed[0]["result"]["msg"] if failed else None

    def plan(self, host):
        for record in self.host(host):
            facts = record["result"].get("ansible_facts") or {}
            if "preflight_plan" in facts:
                return facts["preflight_plan"]
        raise AssertionError("no plan for %s:\n%s\n%s" % (host, self.stdout[-3000:], self.stderr[-3000:]))

    def run_facts(self, host):
        """The run's stages and lock (primus_run, decided by the core role from the stage registry)."""
        for record in self.host(host):
            facts = record["result"].get("ansible_facts") or {}
            if "primus_run" in facts:
                return facts["primus_run"]
        raise AssertionError("no primus_run for %s" % host)

    def warnings(self, host):
        found = []
        for record in self.host(host):
            for warning in record["result"].get("warnings", []):
                found.append(warning["event"]["msg"] if isinstance(warning, dict) and "event" in warning else str(warning))
        return found


@pytest.fixture(scope="module")
def callback_dir():
    return CALLBACK_PLUGINS


def playbook(args, callback_dir, workdir, env=None, bindir=CONTROLLER_BIN, inventory=None):
    record = os.path.join(str(workdir), "record-%d.jsonl" % len(os.listdir(str(workdir))))
    cmd = [os.path.join(bindir, "ansible-playbook"), "playbooks/primus.yml", "--tags", "preflight"]
    if inventory:
        cmd += ["-i", str(inventory)]
    run_env = clean_env(ANSIBLE_CALLBACK_PLUGINS=str(callback_dir), ANSIBLE_CALLBACKS_ENABLED="primus_test_results",
                        PRIMUS_TEST_RESULTS=record, ANSIBLE_NOCOLOR="1", ANSIBLE_DEPRECATION_WARNINGS="0")
    run_env.update(env or {})
    proc = subprocess.run(cmd + list(args), cwd=REPO, env=run_env, capture_output=True, text=True, timeout=600,
                          check=False)
    records = []
    if os.path.exists(record):
        with open(record) as handle:
            records = [json.loads(line) for line in handle]
    return Run(proc, records)


def fixture_vars(host):
    return {"primus_rocminfo": os.path.join(HOSTS, host, "bin", "rocminfo"),
            "primus_kfd_nodes_path": os.path.join(HOSTS, host, "sys", "class", "kfd", "kfd", "topology", "nodes")}


def this_host_glibc():
    return os.confstr("CS_GNU_LIBC_VERSION").split()[1]


def version_tuple(text):
    return tuple(int(p) for p in text.split("."))


# ---- many cases, one run --------------------------------------------------------------------

@pytest.fixture(scope="module")
def fleet(tmp_path_factory, callback_dir):
    """One run over pseudo-hosts; returns (Run, {host: base dir}) with every base still absent."""
    root = tmp_path_factory.mktemp("preflight-fleet")
    disk_gib = os.statvfs(str(root)).f_blocks * os.statvfs(str(root)).f_frsize / float(GIB)
    fake_old_python = root / "python3.10"
    fake_old_python.write_text("#!/bin/sh\necho 3.10\n")
    fake_old_python.chmod(0o755)
    fake_311 = root / "python3.11"
    fake_311.write_text("#!/bin/sh\necho 3.11\n")
    fake_311.chmod(0o755)
    old = root / "old-base"
    (old / "venv" / "bin").mkdir(parents=True)
    os.symlink(str(fake_old_python), str(old / "venv" / "bin" / "python"))

    hosts = {
        "mi300x": dict(fixture_vars("mi300x")),
        "mi355x": dict(fixture_vars("mi355x"), primus_max_jobs="7"),
        "mixed": dict(fixture_vars("mixed")),
        "kfd-mi355x": {"primus_kfd_nodes_path": fixture_vars("mi355x")["primus_kfd_nodes_path"]},
        "cpu-only": dict(fixture_vars("cpu-only")),
        "radeon": dict(fixture_vars("radeon-gfx1100")),
        "radeon-override": dict(fixture_vars("radeon-gfx1100"), primus_arch_override="gfx942"),
        "override-bad": dict(fixture_vars("mi300x"), primus_arch_override="gfx942;gfx95x"),
        "override-unsupported": dict(fixture_vars("mi300x"), primus_arch_override="gfx90a,gfx942"),
        "jobs-bad": dict(fixture_vars("mi300x"), primus_max_jobs="lots"),
        "base-empty": {"primus_base": ""},
        "base-relative": {"primus_base": "envs/primus-env"},
        "base-tilde": {"primus_base": "~/envs/primus-env"},
        "base-file": {"primus_base": str(fake_old_python) + "/base"},
        "free-space": {"primus_min_free_gib": int(disk_gib) + 1},
        "te-fast": {"primus_te_mode": "fast"},
        "te-wheel": {"primus_te_mode": "wheel"},
        "python-311": {"primus_python": str(fake_311)},
        "python-missing": {"primus_python": str(root / "no-such-python")},
        "old-venv": {"primus_base": str(old)},
    }
    bases = {}
    inventory_hosts = {}
    for name, host_vars in hosts.items():
        host_vars = dict(host_vars)
        host_vars.setdefault("primus_base", str(root / name / "envs" / "primus-env"))
        # The free-space check is the free-space host's case: the others pass it on any disk this runs on.
        host_vars.setdefault("primus_min_free_gib", 1)
        bases[name] = host_vars["primus_base"]
        host_vars.update(ansible_connection="local", ansible_python_interpreter=sys.executable)
        inventory_hosts[name] = host_vars
    inventory = root / "inventory.json"
    inventory.write_text(json.dumps({"all": {"hosts": inventory_hosts}}))
    run = playbook([], callback_dir, root, inventory=inventory)
    return run, bases, root


def assert_nothing_created(fleet, host):
    run, bases, root = fleet
    base = bases[host]
    if os.path.isabs(base):
        if host == "old-venv":
            assert sorted(os.listdir(base)) == ["venv"] and os.listdir(os.path.join(base, "venv", "bin")) == ["python"]
        else:
            assert not os.path.lexists(base)
            assert not os.path.lexists(str(root / host)), "preflight created %s" % (root / host)
    else:
        # A relative (or empty) base would resolve against the playbook run's directory.
        for name in ([base, base.split("/")[0]] if base else []) + ["venv", "workspace", "env.sh", "logs"]:
            assert not os.path.lexists(os.path.join(REPO, name)), name


@pytest.mark.parametrize("host, archs, count, source", [
    ("mi300x", ["gfx942"], 8, "rocminfo"),
    ("mi355x", ["gfx950"], 8, "rocminfo"),
    ("mixed", ["gfx942", "gfx950"], 4, "rocminfo"),
    ("kfd-mi355x", ["gfx950"], 8, "kfd"),
    ("radeon-override", ["gfx942"], 1, "override"),
])
def test_plan_of_gpu_hosts(fleet, host, archs, count, source):
    run = fleet[0]
    plan = run.plan(host)
    assert (plan["archs"], plan["gpu_count"], plan["arch_source"]) == (archs, count, source)
    assert plan["pytorch_rocm_arch"] == ";".join(archs)
    assert plan["arch_csv"] == ",".join(archs)
    assert plan["ck_atomic_fp32"] == ("1" if "gfx942" in archs else "0")
    assert plan["device_packages"] == [
        t.replace("{arch}", a) for a in archs for t in ("amd-torch-device-{arch}==2.12.0+rocm7.15.0a20260720",
                                                        "rocm-sdk-device-{arch}==7.15.0a20260720",
                                                        "amd-torchvision-device-{arch}==0.27.0+rocm7.15.0a20260720")]
    assert run.run_facts(host)["stages"] == [] and run.run_facts(host)["lock"] is False
    assert isinstance(plan["max_jobs"], int) and plan["max_jobs"] >= 1
    assert_nothing_created(fleet, host)


def test_plan_of_this_host_glibc_and_te_mode(fleet):
    plan = fleet[0].plan("mi300x")
    glibc = this_host_glibc()
    assert plan["glibc"] == glibc
    expected_mode = "wheel" if version_tuple(glibc) >= (2, 38) and version_tuple(plan["glibcxx_max"]) >= (3, 4, 32) else "source"
    assert plan["te_mode"] == expected_mode
    assert plan["te_mode_reason"].startswith("auto: glibc %s" % glibc)
    out = subprocess.run(["ldd", "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    assert out.endswith(" " + glibc)
    assert 1 <= plan["max_jobs"] <= len(os.sched_getaffinity(0))
    assert plan["max_jobs_reason"].startswith("min(%d CPUs, " % len(os.sched_getaffinity(0)))


def test_cpu_only_host_uses_the_release_default_with_a_warning(fleet):
    run = fleet[0]
    plan = run.plan("cpu-only")
    assert (plan["archs"], plan["arch_source"], plan["gpu_count"], plan["ck_atomic_fp32"]) == (
        ["gfx942", "gfx950"], "default", 0, "1")
    assert any(w.startswith("no GPU detected; defaulting PYTORCH_ROCM_ARCH=gfx942;gfx950") for w in run.warnings("cpu-only"))
    assert_nothing_created(fleet, "cpu-only")


def test_max_jobs_override(fleet):
    plan = fleet[0].plan("mi355x")
    assert (plan["max_jobs"], plan["max_jobs_reason"]) == (7, "MAX_JOBS=7 (set by you)")


def test_forced_wheel_is_planned_with_a_warning_on_old_glibc(fleet):
    plan = fleet[0].plan("te-wheel")
    assert (plan["te_mode"], plan["te_mode_reason"]) == ("wheel", "PRIMUS_TE_MODE=wheel (forced)")
    if version_tuple(this_host_glibc()) < (2, 38):
        assert "GLIBC_2.38 not found" in plan["te_mode_warning"]


@pytest.mark.parametrize("host, words", [
    ("base-empty", ["PRIMUS_BASE is not set", 'export PRIMUS_BASE="$HOME/envs/primus-env"']),
    ("base-relative", ["PRIMUS_BASE must be an absolute path, got 'envs/primus-env'"]),
    ("base-tilde", ["PRIMUS_BASE must be an absolute path, got '~/envs/primus-env'", "~ is not expanded"]),
    ("base-file", ["exists and is not a directory", "Nothing was created"]),
    ("free-space", ["GiB free", "less than primus_min_free_gib=", "-e primus_min_free_gib=N"]),
    ("te-fast", ["PRIMUS_TE_MODE must be one of auto, wheel, source (got 'fast')"]),
    ("radeon", ["GPU arch gfx1100 (found by rocminfo on this node) has no device wheels in release v26.5",
                'PYTORCH_ROCM_ARCH="gfx942;gfx950"']),
    ("override-bad", ["'gfx95x' is not a GPU arch", "primus_arch_override"]),
    ("override-unsupported", ["GPU arch gfx90a (set by primus_arch_override / PYTORCH_ROCM_ARCH) has no device wheels"]),
    ("jobs-bad", ["MAX_JOBS (primus_max_jobs) must be a positive integer, got 'lots'"]),
    ("python-311", ["is not Python 3.12: it is Python 3.11"]),
    ("python-missing", ["is not Python 3.12: it cannot be run"]),
    ("old-venv", ["venv is Python 3.10, but v26.5 requires 3.12", "rm -rf '%s'", "Nothing was changed or deleted"]),
])
def test_failures_name_cause_and_fix_and_create_nothing(fleet, host, words):
    run, bases, root = fleet
    message = run.failure(host)
    assert message, "host %s did not fail" % host
    for word in words:
        if "%s" in word:
            word = word % os.path.join(bases[host], "venv")
        assert word in message, message
    assert not any("preflight_plan" in (r["result"].get("ansible_facts") or {}) for r in run.host(host))
    assert_nothing_created(fleet, host)


def test_the_run_fails_overall_and_each_host_stops_only_itself(fleet):
    run = fleet[0]
    assert run.rc != 0
    assert run.plan("mi300x") and run.plan("mixed")


# ---- the controller's environment variables -------------------------------------------------

def test_primus_base_unset_in_the_environment(callback_dir, tmp_path):
    run = playbook([], callback_dir, tmp_path)
    assert run.rc != 0
    assert "PRIMUS_BASE is not set" in run.failure("localhost")


def test_te_mode_from_the_environment(callback_dir, tmp_path):
    base = tmp_path / "x" / "base"
    wheel = playbook([], callback_dir, tmp_path, env={"PRIMUS_BASE": str(base), "PRIMUS_TE_MODE": "wheel"})
    assert wheel.rc == 0, wheel.stdout[-2000:]
    assert wheel.plan("localhost")["te_mode"] == "wheel"
    assert "TE mode wheel: PRIMUS_TE_MODE=wheel (forced)" in wheel.stdout
    fast = playbook([], callback_dir, tmp_path, env={"PRIMUS_BASE": str(base), "PRIMUS_TE_MODE": "fast"})
    assert fast.rc != 0
    assert "PRIMUS_TE_MODE must be one of auto, wheel, source (got 'fast')" in fast.failure("localhost")
    assert not (tmp_path / "x").exists()


def test_check_mode_gives_the_same_plan(callback_dir, tmp_path):
    base = tmp_path / "x" / "base"
    env = {"PRIMUS_BASE": str(base)}
    extra = ["-e", "primus_rocminfo=%s" % fixture_vars("mixed")["primus_rocminfo"]]
    normal = playbook(extra, callback_dir, tmp_path, env=env)
    check = playbook(extra + ["--check"], callback_dir, tmp_path, env=env)
    assert normal.rc == 0 and check.rc == 0, check.stdout[-2000:]
    plan, check_plan = normal.plan("localhost"), check.plan("localhost")
    for volatile in ("base_free_gib", "max_jobs", "max_jobs_reason"):
        plan.pop(volatile)
        check_plan.pop(volatile)
    assert plan == check_plan
    assert not any(r["result"].get("changed") for r in normal.records + check.records)
    assert not (tmp_path / "x").exists()


def test_missing_build_tools(callback_dir, tmp_path):
    """A PATH that has everything but git, make and the C++ compilers."""
    fakebin = tmp_path / "bin"
    fakebin.mkdir()
    hidden = {"git", "make", "c++", "g++", "clang++", "gcc", "cc"}
    for directory in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for name in os.listdir(directory):
            if name not in hidden and not (fakebin / name).exists():
                os.symlink(os.path.join(directory, name), str(fakebin / name))
    run = playbook(["-e", "primus_base=%s" % (tmp_path / "x" / "base")], callback_dir, tmp_path,
                   env={"PATH": "%s:%s" % (CONTROLLER_BIN, fakebin)})
    assert run.rc != 0
    assert ("not found on PATH: git, make, a C++ compiler (c++, g++, clang++)" in run.failure("localhost")), run.stdout[-2000:]
    assert not (tmp_path / "x").exists()


def controllers():
    dirs = os.environ.get("PRIMUS_TEST_CONTROLLERS", os.path.join(REPO, ".venv", "bin")).split()
    return [d for d in dirs if os.path.exists(os.path.join(d, "ansible-playbook"))]


@pytest.mark.parametrize("bindir", controllers())
def test_every_supported_controller(bindir, callback_dir, tmp_path):
    run = playbook(["-e", "primus_base=%s" % (tmp_path / "x" / "base"), "-e", "primus_rocminfo=%s"
                    % fixture_vars("mi355x")["primus_rocminfo"]], callback_dir, tmp_path, bindir=bindir)
    assert run.rc == 0, run.stdout[-3000:]
    plan = run.plan("localhost")
    # Later stages read these values: the same types on every controller.
    assert (plan["archs"], plan["ck_atomic_fp32"], plan["gpu_count"]) == (["gfx950"], "0", 8)
    assert isinstance(plan["max_jobs"], int) and isinstance(plan["kfd_access"], bool)
    assert plan["glibc"] == this_host_glibc() and isinstance(plan["base_free_gib"], float)
    assert not (tmp_path / "x").exists()


# ---- an unwritable PRIMUS_BASE, as an unprivileged user -------------------------------------

def _copy_tree(src, dest):
    """Hard-link copy when possible (same filesystem), else a real copy."""
    if subprocess.run(["cp", "-al", src, dest], capture_output=True, check=False).returncode != 0:
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(src, dest, symlinks=True)


@pytest.fixture
def unprivileged(callback_dir):
    """How to run ansible-playbook as a user without root's powers: (argv, env, cwd, record, user).

    Not root: this user, as it is. Root: `nobody`, from copies in a fresh /tmp dir of what it
    needs (the controller's interpreter, its site-packages, the repo's files, the callback), since
    the originals may sit under a private /root.
    """
    work = tempfile.mkdtemp(prefix="primus-preflight-", dir="/tmp")
    os.chmod(work, 0o755)
    try:
        if os.geteuid() != 0:
            record = os.path.join(work, "record.jsonl")
            env = clean_env(ANSIBLE_CALLBACK_PLUGINS=str(callback_dir), ANSIBLE_CALLBACKS_ENABLED="primus_test_results",
                            PRIMUS_TEST_RESULTS=record, ANSIBLE_NOCOLOR="1")
            yield [os.path.join(CONTROLLER_BIN, "ansible-playbook")], env, REPO, record, work, None
            return
        python_root = os.path.join(work, "python")
        _copy_tree(sys.base_prefix, python_root)
        site = os.path.join(work, "site-packages")
        _copy_tree(sysconfig.get_paths()["purelib"], site)
        repo = os.path.join(work, "repo")
        files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True,
                               text=True, check=True).stdout.splitlines()
        for name in files:
            src = os.path.join(REPO, name)
            dest = os.path.join(repo, name)
            if not os.path.lexists(src):
                continue
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            if os.path.islink(src):
                os.symlink(os.readlink(src), dest)
            else:
                shutil.copy2(src, dest)
        callbacks = os.path.join(work, "callbacks")
        os.mkdir(callbacks)
        shutil.copy(os.path.join(callback_dir, "primus_test_results.py"), callbacks)
        home = os.path.join(work, "home")
        os.mkdir(home)
        shutil.chown(home, "nobody")
        record = os.path.join(home, "record.jsonl")
        python = os.path.join(python_root, "bin", os.path.basename(os.path.realpath(sys.executable)))
        variables = {"HOME": home, "PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": os.path.join(python_root, "lib"),
                     "PYTHONPATH": site, "ANSIBLE_HOME": os.path.join(home, ".ansible"),
                     "ANSIBLE_LOCAL_TEMP": os.path.join(home, "tmp"), "ANSIBLE_REMOTE_TEMP": os.path.join(home, "tmp"),
                     "ANSIBLE_CALLBACK_PLUGINS": callbacks, "ANSIBLE_CALLBACKS_ENABLED": "primus_test_results",
                     "PRIMUS_TEST_RESULTS": record, "ANSIBLE_NOCOLOR": "1"}
        argv = (["runuser", "-u", "nobody", "--", "env", "-i"] + ["%s=%s" % kv for kv in sorted(variables.items())]
                + [python, "-m", "ansible.cli.playbook"])
        yield argv, clean_env(), repo, record, work, "nobody"
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_unwritable_base_as_an_unprivileged_user(unprivileged):
    argv, env, cwd, record, work, user = unprivileged
    locked = os.path.join(work, "locked")
    os.mkdir(locked)
    os.chmod(locked, 0o555)
    base = os.path.join(locked, "envs", "primus-env")
    proc = subprocess.run(argv + ["playbooks/primus.yml", "--tags", "preflight", "-e", "primus_base=%s" % base],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode != 0
    assert os.path.exists(record), proc.stdout[-3000:] + proc.stderr[-3000:]
    with open(record) as handle:
        records = [json.loads(line) for line in handle]
    failed = [r for r in records if r["status"] == "failed"]
    # The host fails again after the run summary, with the same message (roles/report).
    assert [r["task"].rsplit(" : ", 1)[-1] for r in failed] == ["Check the inputs and the node", "Stop - this host failed"], \
        proc.stdout[-3000:]
    assert failed[1]["result"]["msg"] == failed[0]["result"]["msg"]
    message = failed[0]["result"]["msg"]
    assert "PRIMUS_BASE %s cannot be used by user" % base in message
    assert "%s is not writable by user" % locked in message
    if user:
        assert "by user nobody" in message
    assert "Nothing was created" in message
    assert os.listdir(locked) == []
