"""A long source build shows its progress: its log grows as it runs, the console prints a line per poll, a build
that runs past source_build_timeout is stopped naming its log, and a re-run keeps the log of the run before.

One base, one source stage (causal_conv1d) after venv and torch. The world's stand-in build of a tree waits while
a hold file exists and prints a line every 2 s meanwhile (tests/world/README.md): a held build is a long compile."""
import json
import os
import re
import subprocess
import sys
import time

import pytest

from harness import REPO, record_timing

sys.path.insert(0, os.path.join(REPO, ".collections"))
from ansible_collections.primus.trainenv.plugins.module_utils import base_lock  # noqa: E402
from ansible_collections.primus.trainenv.plugins.plugin_utils import source_build  # noqa: E402

pytestmark = pytest.mark.functional

STAGE = "causal_conv1d"
STAGES = "venv,torch,%s" % STAGE
PROGRESS = re.compile(r"^node1: \[%s\] Build the wheel - %s - (?:\d+h )?(?:\d+m )?\d+s elapsed"
                      r"(?: \(last build [^)]+\))? - log (?P<log>\S+)(?: - (?P<last>.*))?$" % (STAGE, STAGE), re.M)


def as_target(target, script):
    proc = target.run(["bash", "-c", script])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def wait_for(what, predicate, timeout=600, interval=0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(interval)
    raise AssertionError("timed out waiting for %s" % what)


def size(path):
    return os.path.getsize(path) if os.path.exists(path) else -1


def read(path):
    with open(path, errors="replace") as handle:
        return handle.read()


def test_a_long_build_streams_its_log_shows_progress_is_stopped_at_its_timeout_and_keeps_old_logs(
        playbook, target, golden):
    base = golden("progress")   # venv,torch converged: the build is the subject
    build = os.path.join(target.home, "progress-build")
    tree = "%s-%s" % (STAGE, source_build.tree_tag(base))
    hold, holding = (os.path.join(build, ".world-%s-%s" % (what, tree)) for what in ("hold", "holding"))
    as_target(target, "rm -rf '%s' '%s-cache' && mkdir -m 700 '%s' && touch '%s'" % (build, build, build, hold))
    # Its own build and cache directories: another test's cached wheel would make the build a cache hit.
    extra = {"primus_build_dir": build, "primus_cache_dir": build + "-cache"}
    log = os.path.join(base, "logs", "%s.log" % STAGE)

    # 1. A build held past source_build_timeout: stopped with its processes, the stage fails naming the log.
    stopped = playbook(STAGES, base, extra=dict(extra, source_build_timeout=20))
    assert stopped.rc != 0, stopped
    # The build's task failed; the report role fails the host again last with the same message (roles/report).
    failures = stopped.failed(report_stops=True)
    names = [f["task"].rsplit(" : ", 1)[-1] for f in failures]
    assert names == ["Build the wheel - %s" % STAGE, "Stop - this host failed"], failures
    failed = failures[0]
    message = failed["result"]["msg"]
    assert message.startswith("[%s] Build the wheel - %s: the build ran longer than source_build_timeout (20 s) and "
                              "was stopped" % (STAGE, STAGE)), message
    assert "Its output up to then: %s." % log in message and "-e source_build_timeout=SECONDS" in message
    with open(holding) as handle:
        builder = int(handle.read())
    assert not base_lock.process_start(builder), "the held setup.py was killed with the job"
    first_log = read(log)
    assert first_log.startswith("### primus.trainenv run "), first_log[:200]
    assert "world: causal_conv1d held for" in first_log, "the build's own lines, streamed while it ran"
    # The clone's own output is in the stage's log too, before the build's.
    src = os.path.join(build, tree)
    clone = " git_checkout: git clone --progress --no-checkout --origin origin -- "
    assert clone in first_log and "Cloning into '%s'..." % src in first_log, first_log[:3000]
    assert first_log.index(clone) < first_log.index("world: causal_conv1d held for")
    assert len(PROGRESS.findall(stopped.stdout)) >= 2, stopped.stdout[-3000:]

    # 2. The same build held for a minute: the log grows while it runs, a progress line per poll.
    as_target(target, "rm -f '%s'" % holding)
    run = playbook(STAGES, base, extra=extra, background=True)
    try:
        wait_for("the held build to start", lambda: os.path.exists(holding) or run.proc.poll() is not None)
        assert run.proc.poll() is None, "the run ended before its build"
        started = time.monotonic()
        wait_for("the new run's log", lambda: size(log) > 0 and "world: causal_conv1d held for" in read(log))
        before = size(log)
        time.sleep(20)
        after = size(log)
        assert after > before, "the log grows while the build runs (%d then %d bytes)" % (before, after)
        assert os.path.exists(log + ".1") and read(log + ".1") == first_log, "the stopped run's log, kept"
        time.sleep(max(0.0, 60 - (time.monotonic() - started)))
    finally:
        as_target(target, "rm -f '%s'" % hold)
        done = run.finish()
    assert done.rc == 0, done
    record_timing("%s held 60 s (progress, re-run)" % STAGE, done.seconds)
    lines = list(PROGRESS.finditer(done.stdout))
    assert len(lines) >= 2, done.stdout[-3000:]
    assert {m.group("log") for m in lines} == {log}
    assert any("held for" in (m.group("last") or "") for m in lines), [m.group(0) for m in lines]
    waited = done.task("Build the wheel - %s" % STAGE)["result"]
    # The quick polls then one every 15 s: a minute's build prints a few lines, not one per second. Bounded by the
    # build's own measured length (however long a loaded machine made it), not by the minute it was held.
    assert len(lines) <= 4 + (int(waited["build_seconds"]) + 15) // 15, ([m.group(0) for m in lines], waited)
    assert waited["build_seconds"] >= 60 and waited["log_path"] == log and waited["changed"] is True, waited
    text = read(log)
    assert text.startswith("### primus.trainenv run ") and text != first_log
    # The build's own output (pip wheel --verbose): setuptools and the compiler, after success too.
    for expected in (clone, "Cloning into '%s'..." % src, "world: causal_conv1d held for", "running build_ext", "### rc=0"):
        assert expected in text, expected
    assert re.search(r"^\s*(?:\S*/)?(?:hipcc|gcc|g\+\+|c\+\+|cc) .*-c ", text, re.M), text[-3000:]
    assert read(log + ".1") == first_log
    # The stamp records how long the build took: the next build of another key shows it as its estimate.
    with open(os.path.join(base, "state", "%s.json" % STAGE)) as handle:
        outputs = json.load(handle)["outputs"]
    assert float(outputs["build_seconds"]) >= 60 and outputs["built"] in (True, "True", "true"), outputs
    subprocess.run(["rm", "-rf", build, build + "-cache"], check=False)
