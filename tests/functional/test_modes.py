"""Nothing a run creates is writable by others, even when the user's umask is 000.

The target user's shell gets `umask 000` (a wrapper as ansible_shell_executable: every module and
every command of the run starts under it), then --tags venv,torch builds a base for real.
"""
import os
import stat

import pytest

from harness import record_timing

pytestmark = pytest.mark.functional


def writable_by_others(*roots):
    found = []
    for root in roots:
        for directory, dirs, files in os.walk(root):
            for name in [""] + dirs + files:
                path = os.path.join(directory, name) if name else directory
                st = os.lstat(path)
                if not stat.S_ISLNK(st.st_mode) and st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                    found.append("%s %04o" % (path, stat.S_IMODE(st.st_mode)))
    return found


@pytest.fixture(scope="module")
def umask_000_run(playbook, target, shared_dir):
    seen = os.path.join(shared_dir, "umask-seen-%d" % os.getpid())
    with open(seen, "w"):
        pass
    os.chmod(seen, 0o666)
    wrapper = os.path.join(shared_dir, "sh-umask-000")
    with open(wrapper, "w") as handle:
        handle.write("#!/bin/sh\numask 000\numask >> %s\nexec /bin/sh \"$@\"\n" % seen)
    os.chmod(wrapper, 0o755)
    base = target.base("umask-000")
    cache = os.path.join(os.path.dirname(base), os.path.basename(base) + "-cache")
    run = playbook("venv,torch", base, extra={"ansible_shell_executable": wrapper, "primus_cache_dir": cache})
    record_timing("venv,torch under umask 000 (unprivileged, SSH)", run.seconds)
    with open(seen) as handle:
        umasks = handle.read().split()
    return run, base, cache, umasks


def test_the_run_really_ran_under_umask_000(umask_000_run):
    run, base, cache, umasks = umask_000_run
    assert run.rc == 0, run
    assert umasks and set(umasks) == {"0000"}, umasks


def test_nothing_in_the_base_or_the_cache_is_writable_by_others(umask_000_run):
    run, base, cache, umasks = umask_000_run
    found = writable_by_others(base, cache)
    assert not found, "\n".join(found[:40]) + ("\n... %d in all" % len(found) if len(found) > 40 else "")


def test_generated_files_and_directories_have_their_explicit_modes(umask_000_run):
    run, base, cache, umasks = umask_000_run
    modes = {
        base: 0o755, cache: 0o700,
        os.path.join(base, "env.sh"): 0o644, os.path.join(base, "pip-constraints.txt"): 0o644,
        os.path.join(base, "modulefiles"): 0o755, os.path.join(base, "modulefiles", "primus"): 0o755,
        os.path.join(base, "modulefiles", "primus", "v26.5"): 0o644,
    }
    got = {path: stat.S_IMODE(os.stat(path).st_mode) for path in modes}
    assert got == modes
    logs = os.path.join(base, "logs")
    assert not stat.S_IMODE(os.stat(logs).st_mode) & 0o022
    for name in os.listdir(logs):
        assert not stat.S_IMODE(os.stat(os.path.join(logs, name)).st_mode) & 0o022, name
