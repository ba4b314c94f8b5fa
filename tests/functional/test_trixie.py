"""The playbook on a glibc >= 2.38 userland: the world's Debian trixie root (glibc 2.41), entered by
the test-only primus_chroot connection as the unprivileged TEST_USER (see harness.TrixieTarget).
There TE's auto mode is `wheel`; venv and torch converge as on any node, and a second run changes nothing."""
import collections
import json
import os
import subprocess

import pytest

from harness import CONNECTION_PLUGINS, CONTROLLER_BIN, REPO, playbook_env, record_timing

pytestmark = pytest.mark.functional
Converged = collections.namedtuple("Converged", "base first second")

ROCM = "2.12.0+rocm7.15.0a20260720"


def adhoc(node, tmp_path, module, args, host_vars=None):
    """`ansible trixie -m module -a args` through primus_chroot; returns (rc, output)."""
    inventory = tmp_path / "inventory.json"
    inventory.write_text(json.dumps({"all": {"hosts": {"trixie": dict(node.host, **(host_vars or {}))}}}))
    proc = subprocess.run([os.path.join(CONTROLLER_BIN, "ansible"), "trixie", "-i", str(inventory), "-m", module,
                           "-a", args, "--one-line"],
                          cwd=REPO, env=playbook_env(str(tmp_path / "results.jsonl"),
                                                     {"ANSIBLE_CONNECTION_PLUGINS": CONNECTION_PLUGINS}),
                          capture_output=True, text=True, timeout=300, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def test_commands_run_inside_the_root_as_the_user_with_proc(trixie_target, tmp_path):
    node = trixie_target
    rc, out = adhoc(node, tmp_path, "ansible.builtin.command",
                    "sh -c 'id -u; id -G; echo $HOME; getconf GNU_LIBC_VERSION; head -1 /proc/meminfo; cat /etc/debian_version'")
    assert rc == 0, out
    lines = out.split("(stdout) ", 1)[1].split("\\n")
    assert lines[:4] == [str(node.uid), str(node.gid), node.home, "glibc 2.41"], out
    assert lines[4].startswith("MemTotal:"), out
    assert lines[5].startswith("13."), "not Debian trixie: %s" % lines[5]
    # /proc was mounted in the command's own mount namespace only.
    with open("/proc/self/mounts") as handle:
        assert node.path("/proc") not in handle.read()


def test_files_put_into_the_root_belong_to_the_user_and_come_back(trixie_target, tmp_path):
    node = trixie_target
    payload = bytes(range(256)) * 700   # binary, several dd blocks
    src = tmp_path / "payload.bin"
    src.write_bytes(payload)
    dest = "%s/put-%s.bin" % (node.home, tmp_path.name)
    # Without pipelining the module itself is put through put_file too.
    rc, out = adhoc(node, tmp_path, "ansible.builtin.copy", "src=%s dest=%s mode=0600" % (src, dest),
                    host_vars={"ansible_pipelining": False})
    assert rc == 0, out
    st = os.stat(node.path(dest))
    assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (node.uid, node.gid, 0o600)
    rc, out = adhoc(node, tmp_path, "ansible.builtin.fetch", "src=%s dest=%s/ flat=true" % (dest, tmp_path / "back"))
    assert rc == 0, out
    assert (tmp_path / "back" / os.path.basename(dest)).read_bytes() == payload
    os.unlink(node.path(dest))


def test_a_user_the_root_does_not_know_is_refused_with_the_fix(trixie_target, tmp_path):
    rc, out = adhoc(trixie_target, tmp_path, "ansible.builtin.command", "true",
                    host_vars={"primus_chroot_user": "nobody-in-there"})
    assert rc != 0
    assert "UNREACHABLE" in out
    assert "user 'nobody-in-there' has no entry in %s" % trixie_target.path("/etc/passwd") in out
    assert "Fix: add a line nobody-in-there:x:UID:GID::/home/nobody-in-there:/bin/sh" in out


@pytest.fixture(scope="module")
def converged(trixie_playbook, trixie_target):
    base = trixie_target.base("trixie")
    first = trixie_playbook("venv,torch", base)
    assert first.rc == 0, first
    record_timing("venv,torch on an empty base (trixie root, chroot)", first.seconds)
    second = trixie_playbook("venv,torch", base)
    record_timing("venv,torch converged re-run (trixie root, chroot)", second.seconds)
    return Converged(base, first, second)


def test_preflight_sees_glibc_2_41_and_plans_te_wheel_mode(converged):
    plan = converged.first.task("Decide the plan")["result"]["ansible_facts"]["preflight_plan"]
    assert plan["glibc"] == "2.41"
    assert tuple(int(p) for p in plan["glibcxx_max"].split(".")) >= (3, 4, 32)
    assert plan["te_mode"] == "wheel"
    assert plan["te_mode_reason"].startswith("auto: glibc 2.41"), plan["te_mode_reason"]
    assert not plan["te_mode_warning"]
    assert plan["base"] == converged.base and plan["archs"] == ["gfx942"]


def test_venv_and_torch_converge_inside_the_root_as_the_user(converged, trixie_target):
    node, base = trixie_target, converged.base
    assert converged.first.stats["trixie"]["changed"] > 0
    proc = node.run([base + "/venv/bin/python", "-c",
                     "import sys, torch; print('%d.%d' % sys.version_info[:2], torch.__version__, sys.base_prefix)"])
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.split() == ["3.12", ROCM, "/opt/python3.12"]
    for path in (base, base + "/venv", base + "/state/torch.json", base + "/env.sh"):
        st = os.stat(node.path(path))
        assert (st.st_uid, st.st_gid) == (node.uid, node.gid), path
    # Nothing of the base leaked out of the root onto this machine.
    assert not os.path.exists(base)


def test_second_run_inside_the_root_changes_nothing(converged):
    second = converged.second
    assert second.rc == 0, second
    assert second.stats["trixie"]["changed"] == 0, second.changed_tasks()
    # Both stages are settled: each include is one skipped task, no task of their roles runs (no pip, no probe).
    assert [second.task("Stage " + stage)["status"] for stage in ("venv", "torch")] == ["skipped", "skipped"]
    assert not [r["task"] for r in second.results if r["task"].startswith(("primus.trainenv.venv", "primus.trainenv.torch"))]
