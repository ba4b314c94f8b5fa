"""The stage logs: rotation per run, the live stream of a command, the progress line of a build and its schedule."""
import itertools
import json
import os
import stat
import sys

from ansible_collections.primus.trainenv.plugins.module_utils import run_log
from ansible_collections.primus.trainenv.plugins.module_utils._pip.command import stream
from ansible_collections.primus.trainenv.plugins.modules.build_wait import estimate


def write(handle, text):
    with handle:
        handle.write(text)


def test_a_new_run_rotates_the_log_and_keeps_the_last_few(tmp_path):
    log = str(tmp_path / "logs" / "te.log")
    for run in range(1, 8):
        write(run_log.open_log(log, "run%d" % run, keep=3), "output of run %d\n" % run)
        write(run_log.open_log(log, "run%d" % run, keep=3), "more of run %d\n" % run)   # same run: appended
    assert sorted(os.listdir(str(tmp_path / "logs"))) == ["te.log", "te.log.1", "te.log.2"]
    for name, run in (("te.log", 7), ("te.log.1", 6), ("te.log.2", 5)):
        with open(str(tmp_path / "logs" / name)) as handle:
            assert handle.read() == "### primus.trainenv run run%d\noutput of run %d\nmore of run %d\n" % (run, run, run)
    assert stat.S_IMODE(os.stat(log).st_mode) == 0o640
    assert stat.S_IMODE(os.stat(str(tmp_path / "logs")).st_mode) == 0o750


def test_a_log_without_a_run_header_is_kept_and_without_a_run_id_nothing_rotates(tmp_path):
    log = str(tmp_path / "pip.log")
    write(run_log.open_log(log), "by hand\n")
    write(run_log.open_log(log), "again\n")
    assert os.listdir(str(tmp_path)) == ["pip.log"]
    write(run_log.open_log(log, "abc", keep=2), "a run\n")
    with open(log + ".1") as handle:
        assert handle.read() == "by hand\nagain\n"
    write(run_log.open_log(log, "abc", keep=1), "same run\n")   # keep=1: this run's file only
    assert sorted(os.listdir(str(tmp_path))) == ["pip.log", "pip.log.1"]
    write(run_log.open_log(log, "def", keep=1), "next run\n")
    with open(log) as handle:
        assert handle.read() == "### primus.trainenv run def\nnext run\n"
    assert not os.path.exists(log + ".2")


class Module(object):
    """What open_for_module uses of an AnsibleModule: warn."""

    def __init__(self):
        self.warnings = []

    def warn(self, text):
        self.warnings.append(text)


def test_a_module_log_that_cannot_be_opened_is_a_warning_not_a_failure(tmp_path, monkeypatch):
    monkeypatch.setenv(run_log.RUN_ENV, "run1")
    module = Module()
    assert run_log.open_for_module(module, "", 3) is None and not module.warnings
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the log directory should be")
    assert run_log.open_for_module(module, str(blocker / "te.log"), 3) is None
    assert module.warnings and module.warnings[0].startswith("cannot append to log_path %s/te.log: " % blocker)
    log = str(tmp_path / "logs" / "te.log")
    write(run_log.open_for_module(module, log, 3), "line\n")
    with open(log) as handle:
        assert handle.read() == "### primus.trainenv run run1\nline\n"
    assert len(module.warnings) == 1


def test_the_stream_hands_over_lines_as_they_come(tmp_path):
    """Order, not a duration: the command waits after its first line until the callback has seen that line (the
    callback makes the file it waits for), so it reaches its second line only if the first was handed over while it
    ran; a stream that handed lines over at the end would leave it waiting until its own limit ("late")."""
    seen = []
    go = str(tmp_path / "go")
    script = ("import os, sys, time\nprint('one', flush=True)\nend = time.monotonic() + 120\n"
              "while not os.path.exists(%r) and time.monotonic() < end:\n    time.sleep(0.02)\n"
              "print('two' if os.path.exists(%r) else 'late')\nprint('oops', file=sys.stderr)\n"
              "sys.stdout.write('no newline')\nsys.exit(3)\n" % (go, go))

    def handed(text):
        seen.append(text)
        if text == "one\n":
            open(go, "w").close()

    rc, out, err = stream([sys.executable, "-c", script], dict(os.environ), None, handed)
    assert (rc, out, err) == (3, "one\ntwo\nno newline", "oops\n")
    assert seen[0] == "one\n", seen
    assert "".join(text for text in seen if "oops" not in text) == out


def test_the_polls_come_quickly_first_then_every_poll_seconds():
    assert list(itertools.islice(run_log.poll_delays(15), 7)) == [1, 2, 4, 8, 15, 15, 15]
    assert list(itertools.islice(run_log.poll_delays(3), 6)) == [1, 2, 3, 3, 3, 3]


def test_the_progress_line_names_stage_step_elapsed_estimate_log_and_last_line():
    line = run_log.progress_line("node1: [te] Build the wheel - te", 125.4, 2465, "/b/logs/te.log", "[ 41%] Building")
    assert line == ("node1: [te] Build the wheel - te - 2m 05s elapsed (last build 41m 05s) - log /b/logs/te.log - "
                    "[ 41%] Building")
    assert run_log.progress_line("n: x", 7, None, "/l", "") == "n: x - 7s elapsed - log /l"
    assert run_log.duration(3725) == "1h 02m 05s"


def test_the_last_line_of_a_log(tmp_path):
    log = tmp_path / "te.log"
    assert run_log.last_line(str(log)) == (None, "")
    log.write_text("a\n  compiling x.cpp  \n\n")
    assert run_log.last_line(str(log)) == (len("a\n  compiling x.cpp  \n\n"), "compiling x.cpp")


def test_the_estimate_is_the_stamps_last_build(tmp_path):
    stamp = tmp_path / "te.json"
    assert estimate(str(stamp)) is None
    stamp.write_text(json.dumps({"outputs": {"built": True, "build_seconds": "851.3", "seconds": 900}}))
    assert estimate(str(stamp)) == 851.3
    stamp.write_text(json.dumps({"outputs": {"built": True, "seconds": 900}}))   # a stamp of before build_seconds
    assert estimate(str(stamp)) == 900
    stamp.write_text(json.dumps({"outputs": {"built": False, "build_seconds": 0, "seconds": 12}}))   # from the cache
    assert estimate(str(stamp)) is None
    stamp.write_text("{not json")
    assert estimate(str(stamp)) is None
