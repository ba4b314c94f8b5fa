"""The pure parts of `make bench` (tests/bench/bench.py: figures from events, the table, the last line) and
the input checks of scripts/detached_run.py (bad input: exit 2, a message naming the setting, nothing created)."""
import datetime
import importlib.util
import os

import pytest

import stage_registry

ROOT = stage_registry.ROOT


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = load("tests/bench/bench.py", "primus_bench")
detached = load("scripts/detached_run.py", "primus_detached_run")


def ev(counter, kind, at, host="localhost", task="", action="ansible.builtin.command", res=None, duration=0.0):
    created = datetime.datetime.fromtimestamp(1000 + at, datetime.timezone.utc).isoformat()
    return {"counter": counter, "event": kind, "created": created, "event_data": {
        "host": host, "task": task, "resolved_action": action, "res": res or {}, "duration": duration}}


def test_summarize_counts_from_the_events():
    events = [
        ev(1, "runner_on_start", 1, task="Look"),
        ev(2, "runner_on_ok", 2, task="Look", action="primus.trainenv.node_info", duration=1.0),
        ev(3, "runner_on_start", 2, task="Stage te", action="ansible.builtin.include_role"),
        ev(4, "runner_on_ok", 2, task="Stage te", action="ansible.builtin.include_role"),
        ev(5, "runner_on_ok", 5, task="Install te", action="primus.trainenv.pip_constrained",
           res={"changed": True, "commands": [["pip", "install"]]}, duration=3.0),
        ev(6, "runner_on_skipped", 6, task="Say"),
        ev(7, "runner_on_failed", 7, task="Stop - PRIMUS_BASE is in use by another run", action="primus.trainenv.base_lock"),
    ]
    figures = bench.summarize(events)
    assert (figures["tasks"], figures["skipped"], figures["changed"], figures["failed"]) == (4, 1, 1, 1)
    assert (figures["modules"], figures["pip"]) == (3, 1)
    assert figures["stages"] == {"preflight": 1.0, "te": 5.0}
    assert figures["slowest"][0] == (3.0, "Install te")
    assert figures["first_task"] == 1001.0 and figures["refused_at"] == 1007.0


def test_the_table_and_the_last_line():
    assert bench.format_table(["run", "wall s", "n"], [["first", 12.345, 3]]) == [
        "| run | wall s | n |", "|---|---|---|", "| first | 12.3 | 3 |"]
    line = bench.bench_line({"first_s": 400.0, "first_cpu_s": 210.5, "rerun_s": 9.5, "rerun_ratio": 9.5 / 400,
                             "te_s": 4.25, "check_s": 8.0, "satisfied_check_s": None, "first_requests": 1000,
                             "rerun_requests": 0, "first_pip": 40})
    assert line == ("bench: first_s=400.00 first_cpu_s=210.50 rerun_s=9.50 rerun_ratio=0.024 te_s=4.25 check_s=8.00 "
                    "satisfied_check_s=na first_requests=1000 rerun_requests=0 first_pip=40")
    assert bench.ratio(1.0, 0) == 0.0


def test_parse_satisfied_reads_the_median_module_time():
    out = "venv: x\nmodule time (process, 5 runs): median 0.412 s, min 0.4 s, max 0.5 s\n"
    assert bench.parse_satisfied(out) == 0.412
    assert bench.parse_satisfied("FAIL\n") is None


def test_count_lines(tmp_path):
    log = tmp_path / "server.log"
    assert bench.count_lines(str(log)) == 0
    log.write_text("a\nb\n")
    assert bench.count_lines(str(log)) == 2


@pytest.mark.parametrize("argv, message", [
    (["start", "../x"], "run name '../x': use 1-64 letters"),
    (["start", "a b"], "run name 'a b'"),
    (["start", "ok", "-i", "/nonexistent/inv.yml"], "-i/--inventory '/nonexistent/inv.yml': no such file or directory"),
    (["start", "ok", "-e", "@/nonexistent.yml"], "-e @FILE (extra vars file) '/nonexistent.yml': no such file"),
    (["start", "ok", "-e", "not a var=1"], "-e 'not a var=1': give @FILE"),
    (["start", "ok", "-e", "novalue"], "-e 'novalue': give @FILE"),
    (["start", "ok", "--tags", "venv;rm -rf /"], "--tags 'venv;rm -rf /' is not valid: comma-separated stage names"),
    (["start", "ok", "--limit", "a b"], "--limit 'a b' is not valid"),
    (["start", "ok", "--forks", "0"], "--forks 0: give a number from 1 to 10000"),
    (["start", "ok", "--env", "1X=2"], "--env '1X=2': give KEY=VALUE"),
    (["start", "ok", "--playbook", "/nonexistent.yml"], "--playbook '/nonexistent.yml': no such file"),
    (["status", "missing"], "no detached run 'missing' in"),
    (["attach", "missing"], "no detached run 'missing' in"),
    (["stop", "missing"], "no detached run 'missing' in"),
    (["attach", "x", "--interval", "0"], "--interval must be above 0"),
])
def test_bad_input_is_refused_with_the_setting_named(tmp_path, capsys, argv, message):
    runs = tmp_path / "runs"
    assert detached.main(["--runs-dir", str(runs)] + argv) == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert not runs.exists()   # nothing created


def test_a_relative_runs_dir_or_a_file_is_refused(tmp_path, capsys):
    assert detached.main(["--runs-dir", "relative/runs", "list"]) == 2
    assert "must be an absolute path" in capsys.readouterr().err
    (tmp_path / "file").write_text("")
    assert detached.main(["--runs-dir", str(tmp_path / "file"), "list"]) == 2
    assert "exists and is not a directory" in capsys.readouterr().err


def test_a_name_in_use_is_refused_and_list_shows_the_runs(tmp_path, capsys):
    runs = tmp_path / "runs"
    (runs / "busy").mkdir(parents=True)
    (runs / "busy" / "primus-run.json").write_text("{}")
    (runs / "busy" / "artifacts" / "run").mkdir(parents=True)
    (runs / "busy" / "artifacts" / "run" / "status").write_text("successful")
    (runs / "busy" / "artifacts" / "run" / "rc").write_text("0")
    assert detached.main(["--runs-dir", str(runs), "start", "busy"]) == 2
    assert "a run named 'busy' exists already" in capsys.readouterr().err
    assert detached.main(["--runs-dir", str(runs), "list"]) == 0
    assert capsys.readouterr().out.split() == ["busy", "successful", "(rc", "0)"]
    # A run whose daemon is gone without a final status is "lost"; stop says it is not running.
    (runs / "busy" / "artifacts" / "run" / "status").unlink()
    (runs / "busy" / "pid").write_text("999999999\n")
    assert detached.main(["--runs-dir", str(runs), "stop", "busy"]) == 0
    assert capsys.readouterr().out.strip() == "run busy is not running (lost)"


def test_the_run_gets_only_the_environment_it_needs(monkeypatch):
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PRIMUS_BASE", "/home/me/env")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s3cr3t")
    env = detached.run_environment(["EXTRA=1"])
    assert env["PIP_CONFIG_FILE"] == "/dev/null" and env["PRIMUS_BASE"] == "/home/me/env" and env["EXTRA"] == "1"
    assert "AWS_SECRET_ACCESS_KEY" not in env
    assert env["PATH"].split(os.pathsep)[0] == os.path.dirname(detached.sys.executable)
