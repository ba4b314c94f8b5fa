"""The run summary and the drift report of a fleet: three inventory hosts of the target (each its own PRIMUS_BASE; two
see gfx942 through the MI300X stand-in, one gfx950 through the MI355X one) converged with the cheap stages (venv, torch,
manifest, verify under a registry of those four), then a host whose base is unwritable and one whose venv stage fails
beside them, a hand-changed venv, and one host alone."""
import json
import os

import pytest

from harness import installed, record_timing

import stage_registry

pytestmark = pytest.mark.functional

STAGES = ("venv", "torch", "manifest", "verify")
TAGS = ",".join(STAGES)
STOP = "Stop - this host failed"


def gpu(target, name):
    host_dir = os.path.join(target.hosts_dir, name)
    return {"primus_rocminfo": os.path.join(host_dir, "bin", "rocminfo"),
            "primus_kfd_nodes_path": os.path.join(host_dir, "sys", "class", "kfd", "kfd", "topology", "nodes")}


def read(path):
    with open(path) as handle:
        return json.load(handle) if path.endswith(".json") else handle.read()


def arch_derived(field):
    """The fields that follow from a host's GPU arch (its device wheels, its torch stage's build key, the plan)."""
    return (field in ("archs", "device_wheels", "build_keys.torch") or field.startswith("plan.")
            or (field.startswith("distributions.") and "-device-" in field))


def pip_install(base, world, version):
    """The user's own `pip install` of another fsspec into a base's venv (by hand, not through the playbook)."""
    return ("PIP_CONFIG_FILE=/dev/null '%s/venv/bin/python' -m pip install --quiet --no-deps --disable-pip-version-check "
            "--index-url '%s' fsspec==%s" % (base, world["indexes"]["pypi"], version))


@pytest.fixture(scope="module")
def fleet(playbook, target, tmp_path_factory):
    """Three hosts converged (first run), then --tags verify (a converged fleet's report) and the same in --check."""
    tmp = tmp_path_factory.mktemp("fleet-report")
    report = str(tmp / "report")
    overlay = tmp / "overlay.json"
    # A registry of the four stages (extra vars win over the core role's vars), so verify judges only those.
    overlay.write_text(json.dumps({"primus_stages": [e for e in stage_registry.entries() if e["name"] in STAGES],
                                   "primus_report_dir": report}))
    hosts = {"gfx942-a": dict(gpu(target, "mi300x"), primus_base=target.base("fleet-a")),
             "gfx942-b": dict(gpu(target, "mi300x"), primus_base=target.base("fleet-b")),
             "gfx950-c": dict(gpu(target, "mi355x"), primus_base=target.base("fleet-c"))}
    args = ("-e", "@%s" % overlay)
    first = playbook(TAGS, hosts=hosts, args=args)
    assert first.rc == 0, first
    record_timing("fleet report: 3 hosts, venv,torch,manifest,verify on empty bases", first.seconds)
    summary_first = read(os.path.join(report, "summary.json"))
    verify = playbook("verify", hosts=hosts, args=args)
    record_timing("fleet report: 3 converged hosts, --tags verify", verify.seconds)
    check = playbook("verify", hosts=hosts, args=args, check=True)
    return {"hosts": hosts, "args": args, "report": report, "first": first, "summary_first": summary_first,
            "verify": verify, "check": check, "overlay": overlay}


def test_the_summary_lists_every_host_with_its_stages_and_seconds(fleet):
    first, summary = fleet["first"], fleet["summary_first"]
    assert sorted(summary["hosts"]) == sorted(fleet["hosts"])
    for name, record in summary["hosts"].items():
        stages = dict((e["stage"], e) for e in record["stages"])
        assert record["result"] == "ok" and record["failure"] is None, (name, record)
        assert stages["venv"]["status"] == "built" and stages["torch"]["status"] == "built", stages
        assert stages["manifest"]["status"] == "ran" and stages["verify"]["status"] == "ran"
        assert all(stages[s]["seconds"] is not None and stages[s]["seconds"] >= 0 for s in STAGES)
        # torch is the slow one: it took more than the venv stage's bookkeeping of manifest.
        assert 0 < record["seconds"] < first.seconds
    text = read(os.path.join(fleet["report"], "summary.txt"))
    assert text.startswith("Run summary: 3 host(s) - 3 ok")
    for name in fleet["hosts"]:
        assert name in first.stdout
    assert "Run summary: 3 host(s) - 3 ok" in first.stdout


def test_a_converged_fleet_reports_with_verify_alone_changing_nothing_also_in_check_mode(fleet):
    for run in (fleet["verify"], fleet["check"]):
        assert run.rc == 0, run
        assert set(run.stats) == set(fleet["hosts"])
        assert all(stats["changed"] == 0 for stats in run.stats.values()), [run.stats, run.changed_tasks()]
        assert "drift: " in run.stdout
    summary = read(os.path.join(fleet["report"], "summary.json"))
    for record in summary["hosts"].values():
        stages = dict((e["stage"], e["status"]) for e in record["stages"])
        assert stages == {"venv": "skipped", "torch": "skipped", "manifest": "skipped", "verify": "ran"}
    for name in fleet["hosts"]:
        manifest = read(os.path.join(fleet["report"], "manifests", name + ".json"))
        assert manifest["distributions"]["torch"].startswith("2.12.0+rocm")


def test_serial_batches_report_every_host_so_far_and_the_last_batch_all(fleet, playbook):
    # One host per batch: the report of the first batch runs while the later hosts have no record yet.
    run = playbook("verify", hosts=fleet["hosts"], args=fleet["args"] + ("-e", "primus_serial=1"))
    assert run.rc == 0, run
    summary_task = "Write the run summary, the manifests and the drift report on the controller"
    reports = [r for r in run.results if r["task"].endswith(summary_task)]
    assert [r["status"] for r in reports] == ["ok"] * 3, [(r["host"], r["status"]) for r in reports]
    assert "not run yet (a later serial batch)" in run.stdout, run.stdout[-3000:]
    summary = read(os.path.join(fleet["report"], "summary.json"))
    assert sorted(summary["hosts"]) == sorted(fleet["hosts"])
    assert all(record["result"] == "ok" for record in summary["hosts"].values()), summary["hosts"]


def test_the_drift_is_the_arch_and_what_follows_from_it_only(fleet):
    drift = read(os.path.join(fleet["report"], "drift.json"))
    assert drift["hosts"] == sorted(fleet["hosts"]) and drift["no_manifest"] == [] and drift["errors"] == []
    fields = [entry["field"] for entry in drift["drift"]]
    assert "archs" in fields and "plan.ck_atomic_fp32" in fields and "build_keys.torch" in fields
    assert "distributions.amd-torch-device-gfx950" in fields and "device_wheels" in fields
    assert [f for f in fields if not arch_derived(f)] == [], drift["drift"]
    for entry in drift["drift"]:
        assert list(entry["differ"]) == ["gfx950-c"] and entry["off_pin"] == {}, entry
    by_field = dict((entry["field"], entry) for entry in drift["drift"])
    assert by_field["archs"]["majority"] == ["gfx942"] and by_field["archs"]["differ"] == {"gfx950-c": ["gfx950"]}
    assert by_field["plan.ck_atomic_fp32"]["majority"] == "1" and by_field["plan.ck_atomic_fp32"]["differ"] == {"gfx950-c": "0"}
    # Compared, and the same everywhere: the release, the venv's key, every shared distribution at its pin.
    assert drift["compared"] > 40
    markdown = read(os.path.join(fleet["report"], "drift.md"))
    assert '| archs | ["gfx942"] | - | gfx950-c | ["gfx950"] | majority |' in markdown


def test_a_hand_changed_venv_is_named_with_field_host_and_both_values(fleet, playbook, target, world):
    host = "gfx942-b"
    base = fleet["hosts"][host]["primus_base"]
    before = installed(target, base)
    assert before.get("fsspec"), sorted(before)
    other = "2025.3.0" if before["fsspec"] != "2025.3.0" else "2026.9.0"
    pip = target.bash(pip_install(base, world, other))
    assert pip.returncode == 0, pip.stderr
    run = playbook("verify", hosts=fleet["hosts"], args=fleet["args"])
    assert run.rc == 0, run
    drift = read(os.path.join(fleet["report"], "drift.json"))
    by_field = dict((entry["field"], entry) for entry in drift["drift"])
    entry = by_field["distributions.fsspec"]
    assert entry["majority"] == before["fsspec"] and entry["differ"] == {host: other}
    assert "distributions.fsspec: %s=%s" % (host, other) in run.stdout
    assert "| distributions.fsspec | %s | - | %s | %s | majority |" % (before["fsspec"], host, other) in \
        read(os.path.join(fleet["report"], "drift.md"))
    # Back as it was: the other tests see the converged fleet.
    assert target.bash(pip_install(base, world, before["fsspec"])).returncode == 0


def test_failing_hosts_are_named_with_stage_cause_and_log_while_the_others_complete(fleet, playbook, target):
    locked_parent = os.path.join(target.home, "bases", "fleet-locked-%d" % os.getpid())
    foreign_base = target.base("fleet-foreign-venv")
    # A base under a directory this user cannot write; a base whose venv path holds something that is not a venv.
    made = target.bash("set -e; mkdir -p '%s' && chmod 555 '%s'; mkdir -p '%s/venv' && echo x > '%s/venv/notes.txt'"
                       % (locked_parent, locked_parent, foreign_base, foreign_base))
    assert made.returncode == 0, made.stderr
    hosts = dict(fleet["hosts"])
    hosts["locked-d"] = dict(gpu(target, "mi300x"), primus_base=os.path.join(locked_parent, "primus-env"))
    hosts["foreign-e"] = dict(gpu(target, "mi300x"), primus_base=foreign_base)
    try:
        run = playbook("venv,torch", hosts=hosts, args=fleet["args"])
    finally:
        target.bash("chmod 755 '%s'" % locked_parent)
    record_timing("fleet report: 3 converged hosts and 2 failing ones, venv,torch", run.seconds)
    assert run.rc != 0
    assert all(run.stats[name]["failed"] == 0 for name in fleet["hosts"]), run.stats
    assert run.stats["locked-d"]["failed"] == 1 and run.stats["foreign-e"]["failed"] == 1, run.stats
    summary = read(os.path.join(fleet["report"], "summary.json"))
    assert summary["counts"] == {"hosts": 5, "ok": 3, "failed": 2}
    for name in fleet["hosts"]:
        stages = dict((e["stage"], e["status"]) for e in summary["hosts"][name]["stages"])
        assert stages["venv"] == "done" and stages["torch"] == "done", stages
    locked = summary["hosts"]["locked-d"]["failure"]
    assert locked["stage"] == "preflight" and "cannot be used by user %s" % target.user in locked["cause"]
    assert locked["log"] == ""
    foreign = summary["hosts"]["foreign-e"]["failure"]
    assert foreign["stage"] == "venv" and foreign["cause"].startswith("[venv] ")
    assert foreign["log"] == os.path.join(foreign_base, "logs", "venv.log")
    stages = dict((e["stage"], e["status"]) for e in summary["hosts"]["foreign-e"]["stages"])
    assert stages["venv"] == "failed" and stages["torch"] == "not reached"
    # On the console: the table names both, and each failing host fails last with its own message (not 0 exit).
    table = [line for line in run.stdout.splitlines() if "locked-d" in line and "preflight: " in line]
    assert table, run.stdout[-5000:]
    assert any("foreign-e" in line and "venv: [venv]" in line and "venv.log" in line for line in run.stdout.splitlines())
    stops = [r for r in run.failed(report_stops=True) if r["task"].endswith(STOP)]
    assert sorted(r["host"] for r in stops) == ["foreign-e", "locked-d"]
    assert all("\x1b" not in r["result"]["msg"] for r in stops)


def test_a_single_host_run_ends_with_the_per_stage_table(playbook, target, tmp_path):
    """One host (the harness's node1) on an empty base: the table lists each stage with its status and seconds."""
    base = target.base("single-report")
    report = str(tmp_path / "single")
    run = playbook("venv,torch", base, extra={"primus_report_dir": report})
    assert run.rc == 0, run
    record_timing("single host: venv,torch on an empty base, with the run summary", run.seconds)
    summary = read(os.path.join(report, "summary.json"))
    assert list(summary["hosts"]) == ["node1"]
    lines = read(os.path.join(report, "summary.txt")).splitlines()
    assert lines[0] == "Run summary: 1 host(s) - 1 ok"
    header = lines[1].split()
    assert header == ["stage", "done", "built", "installed", "skipped", "seconds"]
    rows = dict((line.split()[0], line.split()) for line in lines[2:4])
    assert rows["venv"][1:3] == ["0", "1"] and rows["torch"][1:3] == ["0", "1"]
    seconds = dict((stage, float(row[-1])) for stage, row in rows.items())
    assert 0 < seconds["venv"] and 0 < seconds["torch"] and sum(seconds.values()) < run.seconds, seconds
    assert lines[4].startswith("not selected on any host: ")
    assert "Run summary: 1 host(s) - 1 ok" in run.stdout and "torch" in run.stdout


def test_a_bad_drift_field_or_report_directory_stops_the_run_before_anything_is_built(playbook, target, tmp_path):
    base = target.base("fleet-bad-report")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    for extra, words in (({"primus_drift_fields": {"torch": "distributions.[torch"}},
                          ["primus_drift_fields.torch", "distributions.[torch", "not a valid JMESPath expression"]),
                         ({"primus_report_dir": str(shared)}, ["primus_report_dir %s is writable by others" % shared,
                                                               "Fix: set primus_report_dir"])):
        run = playbook("venv,torch", base, extra=extra)
        assert run.rc != 0
        failed = run.failed()
        assert len(failed) == 1 and failed[0]["task"] == "Check the report directory and the drift fields on the controller"
        assert all(word in failed[0]["result"]["msg"] for word in words), failed[0]["result"]["msg"]
        assert not os.path.exists(base)
