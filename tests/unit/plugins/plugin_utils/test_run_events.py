"""ansible-runner's job events -> per-host progress, stage seconds, module runs and pip processes."""
import json

from ansible_collections.primus.trainenv.plugins.plugin_utils import run_events

T0 = 1796378000.0


def stamp(seconds):
    import datetime
    return datetime.datetime.fromtimestamp(T0 + seconds, datetime.timezone.utc).isoformat()


def ev(counter, kind, at, host=None, task="", action="", res=None, **data):
    event_data = dict(data, task=task, resolved_action=action)
    if host:
        event_data["host"] = host
    if res is not None:
        event_data["res"] = res
    return {"counter": counter, "event": kind, "created": stamp(at), "pid": 4242, "event_data": event_data}


def task(counter, at, host, name, action="ansible.builtin.command", kind="runner_on_ok", res=None, duration=0.5, **data):
    """A runner_on_start and its result, one second apart."""
    return [ev(counter, "runner_on_start", at, host, name, action),
            ev(counter + 1, kind, at + 1, host, name, action, res if res is not None else {}, duration=duration, **data)]


def a_run(finished=True):
    events = [ev(1, "playbook_on_start", 0)]
    events += task(2, 1, "node1", "Look at the node", "primus.trainenv.node_info")
    events += task(4, 1, "node2", "Look at the node", "primus.trainenv.node_info")
    events += task(6, 3, "node1", "Stage venv", "ansible.builtin.include_role")
    events += task(8, 4, "node1", "Install pinned pip", "primus.trainenv.pip_constrained",
                   res={"changed": True, "commands": [["python", "-m", "pip", "install"], ["python", "-m", "pip", "check"]]})
    events += task(10, 3, "node2", "Stage venv", "ansible.builtin.include_role")
    events += task(12, 5, "node2", "Install pinned pip", "primus.trainenv.pip_constrained", kind="runner_on_failed",
                   res={"msg": "pip said\nno", "commands": [["python", "-m", "pip", "install"]]})
    events += task(14, 10, "node1", "Stage torch", "ansible.builtin.include_role")
    events += task(16, 11, "node1", "Build a wheel", "ansible.builtin.command",
                   res={"changed": True, "cmd": ["/bin/sh", "-c", "umask go-w && exec \"$@\"", "x", "/b/venv/bin/pip", "wheel"]})
    events += task(18, 12, "node1", "Say what happens", "ansible.builtin.debug", kind="runner_on_skipped")
    events += task(20, 13, "node1", "Tolerated", "ansible.builtin.command", kind="runner_on_failed", ignore_errors=True)
    if finished:
        events.append(ev(30, "playbook_on_stats", 20, ok={"node1": 6}, failures={"node2": 1}, changed={}, dark={},
                         skipped={}))
    return events


def test_progress_follows_each_host_through_the_stages():
    progress = run_events.Progress().add(a_run(finished=False))
    node1, node2 = progress.hosts["node1"], progress.hosts["node2"]
    assert node1["stage"] == "torch" and node1["stages"] == ["preflight", "venv", "torch"]
    assert node2["stage"] == "venv"
    assert (node1["ok"], node1["changed"], node1["failed"], node1["skipped"]) == (6, 2, 0, 1)
    assert (node2["ok"], node2["failed"]) == (2, 1)
    assert node2["failures"] == [("venv", "Install pinned pip", "pip said no")]
    assert node1["task"] == "Tolerated"
    assert progress.playbook_pid == 4242 and not progress.finished
    assert progress.stage_seconds("node1") == [("preflight", 2.0), ("venv", 7.0), ("torch", 4.0)]


def test_format_progress_prints_one_line_per_host_and_the_failures():
    progress = run_events.Progress().add(a_run(finished=False))
    lines = run_events.format_progress(progress, "running", T0 + 74, "fleet")
    assert lines[0] == "run fleet: running, 2 host(s), 1m14s elapsed"
    assert lines[1].startswith("  node1  stage torch          done 7    changed 2    failed 0   elapsed 1m13s")
    assert lines[1].endswith("(Tolerated)")
    assert lines[2].startswith("  node2  stage venv           done 2    changed 0    failed 1   elapsed 1m13s")
    assert lines[3] == "  FAILED node2 [venv] Install pinned pip: pip said no"
    done = run_events.Progress().add(a_run())
    assert done.finished and done.stats["failures"] == {"node2": 1}
    finished = run_events.format_progress(done, "failed (rc 2)", T0 + 999, "fleet")
    assert finished[0] == "run fleet: failed (rc 2), 2 host(s), 20s elapsed"
    assert "(" not in finished[1]   # no current task once it ended


def test_module_runs_and_pip_processes():
    results = run_events.task_results(a_run())
    assert len(results) == 10
    # node_info x2, pip_constrained x2, the command and the tolerated command: not include_role, debug or skipped
    assert run_events.module_runs(results) == 6
    # pip_constrained's reported commands (2 + 1) and the command whose argv runs a pip executable
    assert run_events.pip_processes(results) == 4
    assert run_events.pip_processes([{"action": "ansible.builtin.command", "status": "ok",
                                      "result": {"cmd": ["python3", "-m", "pip", "--version"]}}]) == 1
    assert run_events.pip_processes([{"action": "ansible.builtin.command", "status": "ok",
                                      "result": {"cmd": ["git", "clone", "https://x/pipeline.git"]}}]) == 0


def test_the_reader_returns_each_event_once_and_waits_for_half_written_files(tmp_path):
    reader = run_events.EventReader(str(tmp_path / "job_events"))
    assert reader.read() == []   # not there yet
    (tmp_path / "job_events").mkdir()
    for event in a_run()[:3]:
        (tmp_path / "job_events" / ("%d-abc.json" % event["counter"])).write_text(json.dumps(event))
    (tmp_path / "job_events" / "10-def.json").write_text('{"counter": 10, "ev')   # being written
    (tmp_path / "job_events" / "partial.tmp").write_text("x")
    assert [e["counter"] for e in reader.read()] == [1, 2, 3]
    assert reader.read() == []
    (tmp_path / "job_events" / "10-def.json").write_text(json.dumps({"counter": 10, "event": "verbose"}))
    assert [e["counter"] for e in reader.read()] == [10]


def test_seconds_text():
    assert [run_events.seconds_text(s) for s in (0, 59.4, 61, 3600 + 62)] == ["0s", "59s", "1m01s", "1h01m02s"]
