"""The run summary and the drift report (plugin_utils/fleet_report.py, the filters of plugins/filter/report.py):
stage statuses and seconds, failures as one sanitised line, the fleet's tables, drift by majority and by pin."""
import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError
from ansible_collections.primus.trainenv.plugins.filter import report as report_filters
from ansible_collections.primus.trainenv.plugins.plugin_utils import fleet_report

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
RUN = {"order": ["base", "core", "kernels", "record", "extra", "check"],
       "stages": ["base", "core", "kernels", "record", "check"], "read_only": ["check"]}
STATUS = {"base": {"done": True, "stamp": "current", "key_id": "k1"}, "core": {"done": False, "stamp": "missing", "key_id": "k2"},
          "kernels": {"done": False, "stamp": "stale", "key_id": "k3"},
          # A stage without a key and no stamp (manifest) is "missing" with an empty key id; one with a stamp "nokey".
          "record": {"done": False, "stamp": "missing", "key_id": ""},
          "extra": {"done": False, "stamp": "missing", "key_id": "k5"}, "check": {"done": False, "stamp": "nokey", "key_id": ""}}
STARTED = {"base": 100.0, "core": 101.5, "kernels": 160.0, "record": 400.0, "check": 402.0}


@pytest.fixture(scope="module")
def default_fields():
    with open(os.path.join(REPO, "roles", "report", "vars", "main.yml")) as handle:
        return yaml.safe_load(handle)["report_drift_fields"]


@pytest.fixture(scope="module")
def pins():
    with open(os.path.join(REPO, "roles", "primus", "vars", "releases", "v26.5.yml")) as handle:
        return yaml.safe_load(handle)["primus_pins"]


def statuses(record):
    return {entry["stage"]: entry["status"] for entry in record["stages"]}


def seconds(record):
    return {entry["stage"]: entry["seconds"] for entry in record["stages"]}


# --------------------------------------------------------------------------- one host

def test_a_converged_stage_is_done_a_new_one_built_an_unselected_one_skipped():
    record = fleet_report.run_record(RUN, STATUS, STARTED, 410.0)
    assert statuses(record) == {"base": "done", "core": "built", "kernels": "built", "record": "ran",
                                "extra": "skipped", "check": "ran"}
    assert record["result"] == "ok" and record["failure"] is None
    assert record["counts"]["done"] == 1 and record["counts"]["built"] == 2 and record["counts"]["skipped"] == 1


def test_seconds_run_from_a_stage_start_to_the_next_and_the_last_to_the_end():
    record = fleet_report.run_record(RUN, STATUS, STARTED, 410.0)
    assert seconds(record) == {"base": 1.5, "core": 58.5, "kernels": 240.0, "record": 2.0, "extra": None,
                               "check": 8.0}
    assert record["seconds"] == 310.0


def test_a_stage_without_a_start_after_a_run_that_went_on_ran():
    started = dict(STARTED)
    del started["check"]
    assert statuses(fleet_report.run_record(RUN, STATUS, started, 410.0))["check"] == "ran"


def test_check_mode_says_would_build():
    assert statuses(fleet_report.run_record(RUN, STATUS, STARTED, 410.0, check_mode=True))["core"] == "would build"


def test_a_done_stage_whose_include_was_skipped_is_done_without_seconds():
    started = dict(STARTED)
    del started["base"]
    record = fleet_report.run_record(RUN, STATUS, started, 410.0)
    assert statuses(record)["base"] == "done" and seconds(record)["base"] is None


def test_a_failed_stage_and_the_stages_after_it():
    started = {"base": 100.0, "core": 101.0}
    failed = {"stage": "core", "cause": "pip failed", "log": "/b/logs/core.log", "task": "Install core", "stopped": False}
    record = fleet_report.run_record(RUN, STATUS, started, 999.0, failed)
    assert statuses(record) == {"base": "done", "core": "failed", "kernels": "not reached", "record": "not reached",
                                "extra": "skipped", "check": "not reached"}
    # The failed stage's end is not known (the record is made after the other hosts finished).
    assert seconds(record)["core"] is None and seconds(record)["base"] == 1.0
    assert record["result"] == "failed"


def test_stages_installed_from_the_wheel_store_name_their_builder():
    events = {"kernels": {"stage": "kernels", "origin": "store", "builder": "node1"},
              "tensorstore": {"stage": "deps", "origin": "built", "builder": "node3"}}
    run = dict(RUN, order=RUN["order"] + ["deps"], stages=RUN["stages"] + ["deps"])
    record = fleet_report.run_record(run, STATUS, dict(STARTED, deps=403.0), 410.0, installed=events)
    found = dict((e["stage"], e) for e in record["stages"])
    assert found["kernels"]["status"] == "installed" and found["kernels"]["builder"] == "node1"
    assert found["deps"]["status"] == "ran"   # no verdict for it in STATUS: a stage without a key
    assert found["core"]["status"] == "built"
    plain = fleet_report.run_record(RUN, STATUS, STARTED, 410.0, installed={"kernels": "node2"})
    assert [e["builder"] for e in plain["stages"] if e["stage"] == "kernels"] == ["node2"]


# --------------------------------------------------------------------------- failures

def test_a_failure_is_one_redacted_line_with_its_stage_and_log():
    result = {"msg": "[core] pip install failed: https://alice:s3cretpass@mirror.example/simple refused\n"
                     "HF_TOKEN=hf_abcdefghijkl more\nFull output: /home/me/env/logs/core.log"}
    found = fleet_report.failure(result, {"name": "Install core", "tags": ["core"]}, RUN, {"base": 1, "core": 2},
                                 "/home/me/env/logs")
    assert found["stage"] == "core" and found["task"] == "Install core" and not found["stopped"]
    assert found["cause"] == "[core] pip install failed: https://alice:****@mirror.example/simple refused"
    assert "s3cretpass" not in str(found)
    assert found["log"] == "/home/me/env/logs/core.log"


def test_a_secret_assignment_on_the_first_line_is_redacted_and_control_characters_go():
    found = fleet_report.failure({"msg": "failed with HF_TOKEN=hf_abcdefghijkl and\tPATH=/usr/bin \x1b[31mred"},
                                 {"name": "x", "tags": ["core"]}, RUN, {}, "")
    assert "hf_abcdefghijkl" not in found["cause"] and "HF_TOKEN=****" in found["cause"]
    assert "PATH=/usr/bin" in found["cause"] and "\x1b" not in found["cause"] and "\t" not in found["cause"]


def test_a_long_message_is_cut():
    found = fleet_report.failure({"msg": "x" * 1000}, {"tags": ["core"]}, RUN, {}, "")
    assert len(found["cause"]) == fleet_report.CAUSE_MAX and found["cause"].endswith("...")


def test_a_command_failure_gets_its_last_error_line_and_the_stage_log():
    result = {"msg": "non-zero return code", "rc": 1, "stderr": "building...\nerror: hipcc not found\n"}
    found = fleet_report.failure(result, {"name": "Build", "tags": ["kernels"]}, RUN, {}, "/b/logs/")
    assert found["cause"] == "non-zero return code: error: hipcc not found"
    assert found["log"] == "/b/logs/kernels.log"


def test_a_loop_failure_quotes_the_failed_item():
    result = {"msg": "One or more items failed", "results": [{"failed": False, "msg": "ok"},
                                                             {"failed": True, "msg": "cannot remove /x: busy"}]}
    assert fleet_report.failure(result, {"tags": ["base"]}, RUN, {}, "")["cause"] == "cannot remove /x: busy"


def test_a_failure_before_the_stages_is_preflight_without_a_log():
    found = fleet_report.failure({"msg": "PRIMUS_BASE /x cannot be used"}, {"name": "Check", "tags": ["always", "preflight"]},
                                 RUN, {}, "/b/logs")
    assert found["stage"] == "preflight" and found["log"] == ""


def test_without_a_stage_tag_the_stage_started_last_failed():
    found = fleet_report.failure({"msg": "x"}, {"name": "y", "tags": ["always"]}, RUN, {"base": 1.0, "core": 5.0}, "")
    assert found["stage"] == "core"


def test_a_host_stopped_by_another_hosts_failure():
    found = fleet_report.failure({}, {}, RUN, {"base": 1.0}, "/b/logs")
    assert found["stopped"] and "any_errors_fatal" in found["cause"] and found["stage"] == "base"
    record = fleet_report.run_record(RUN, STATUS, {"base": 1.0}, 5.0, found)
    assert record["result"] == "stopped"


# --------------------------------------------------------------------------- the fleet

def fleet():
    ok = fleet_report.run_record(RUN, STATUS, STARTED, 410.0)
    failure = fleet_report.failure({"msg": "PRIMUS_BASE /locked/b cannot be used by user ci"},
                                   {"name": "Check the inputs", "tags": ["always", "preflight"]}, RUN, {}, "")
    failed = fleet_report.run_record(RUN, {}, {}, 410.0, failure)
    return fleet_report.run_summary({"node1": ok, "node2": failed, "node3": None, "node4": None},
                                    ["node1", "node2", "node3"], "2026-12-04T10:00:00Z")


def test_the_summary_lists_every_host_and_counts_per_stage():
    summary = fleet()
    assert sorted(summary["hosts"]) == ["node1", "node2", "node3", "node4"]
    assert summary["counts"] == {"hosts": 4, "ok": 1, "failed": 1, "no record": 2}
    assert "unreachable" in summary["hosts"]["node3"]["reason"]
    assert "later serial batch" in summary["hosts"]["node4"]["reason"]
    rows = dict((row["stage"], row) for row in summary["stages"])
    assert rows["core"]["built"] == 1 and rows["core"]["not reached"] == 1 and rows["core"]["seconds"] == 58.5
    assert summary["failed"] == [{"host": "node2", "stage": "preflight", "task": "Check the inputs", "stopped": False,
                                  "cause": "PRIMUS_BASE /locked/b cannot be used by user ci", "log": ""}]


def test_the_tables_show_stages_hosts_and_the_failure():
    lines = fleet_report.summary_lines(fleet())
    text = "\n".join(lines)
    assert lines[0] == "Run summary: 4 host(s) - 1 failed, 2 no record, 1 ok"
    header = lines[1].split()
    assert header[:5] == ["stage", "done", "built", "installed", "ran"] and header[-1] == "seconds"
    core = [line for line in lines if line.startswith("core ")][0].split()
    assert core[header.index("built")] == "1" and core[-1] == "58.5"
    assert "not selected on any host: extra" in text
    node2 = [line for line in lines if line.startswith("node2")][0]
    assert "failed" in node2 and "preflight: PRIMUS_BASE /locked/b cannot be used by user ci" in node2


def test_a_large_fleet_lists_only_its_hosts_that_did_not_end_ok_on_the_console():
    ok = fleet_report.run_record(RUN, STATUS, STARTED, 410.0)
    records = dict(("node%03d" % i, ok) for i in range(80))
    records["node999"] = None
    lines = fleet_report.summary_lines(fleet_report.run_summary(records, list(records)), console=True)
    assert [line.split()[0] for line in lines if line.startswith("node")] == ["node999"]
    assert len([line for line in fleet_report.summary_lines(fleet_report.run_summary(records, list(records)))
                if line.startswith("node")]) == 81


# --------------------------------------------------------------------------- drift

def manifest(archs=("gfx942",), torch="2.12.0+rocm7.15.0a20260720", extra=None, fp32="1"):
    dists = {"torch": torch, "pip": "26.3", "packaging": "25.0"}
    dists.update(("amd-torch-device-%s" % arch, "2.12.0+rocm7.15.0a20260720") for arch in archs)
    dists.update(extra or {})
    return {"release": "v26.5", "host": "h", "os": {"id": "debian", "version_id": "12"}, "python": "3.12.1",
            "archs": list(archs), "te_mode": "source", "distributions": dists,
            "plan": {"ck_atomic_fp32": fp32, "pytorch_rocm_arch": ";".join(archs)},
            "build_keys": {"venv": "aaaa", "torch": "t-" + "-".join(archs)}, "checkouts": {},
            "verify": [{"name": "torch", "status": "ok"}]}


def by_field(report):
    return dict((entry["field"], entry) for entry in report["drift"])


def test_the_minority_arch_and_what_follows_from_it_are_the_only_differences(default_fields):
    manifests = {"a": manifest(), "b": manifest(), "c": manifest(("gfx950",), fp32="0")}
    report = fleet_report.drift_report(manifests, default_fields)
    found = by_field(report)
    assert sorted(found) == ["archs", "build_keys.torch", "device_wheels", "distributions.amd-torch-device-gfx942",
                             "distributions.amd-torch-device-gfx950", "plan.ck_atomic_fp32", "plan.pytorch_rocm_arch"]
    assert all(list(entry["differ"]) == ["c"] for entry in found.values())
    assert found["archs"]["majority"] == ["gfx942"] and found["archs"]["differ"] == {"c": ["gfx950"]}
    assert found["distributions.amd-torch-device-gfx942"]["differ"] == {"c": None}
    assert report["hosts"] == ["a", "b", "c"] and not report["errors"]


def test_a_changed_package_names_the_host_the_field_and_both_values(default_fields):
    manifests = {"a": manifest(), "b": manifest(extra={"packaging": "24.2"}), "c": manifest()}
    entry = by_field(fleet_report.drift_report(manifests, default_fields))["distributions.packaging"]
    assert entry["majority"] == "25.0" and entry["differ"] == {"b": "24.2"} and not entry["tie"]
    markdown = fleet_report.drift_markdown(fleet_report.drift_report(manifests, default_fields))
    assert "| distributions.packaging | 25.0 | - | b | 24.2 | majority |" in markdown


def test_a_tie_has_no_majority_and_lists_every_host(default_fields):
    report = fleet_report.drift_report({"a": manifest(), "b": manifest(("gfx950",))}, default_fields)
    entry = by_field(report)["archs"]
    assert entry["tie"] and entry["majority"] is None and sorted(entry["differ"]) == ["a", "b"]
    assert [group["hosts"] for group in entry["values"]] == [["a"], ["b"]]
    assert "| archs | tie |" in fleet_report.drift_markdown(report)


def test_identical_hosts_have_no_drift_and_a_missing_manifest_is_named(default_fields):
    report = fleet_report.drift_report({"a": manifest(), "b": manifest(), "c": None}, default_fields)
    assert report["drift"] == [] and report["no_manifest"] == ["c"] and report["compared"] > 10
    text = fleet_report.drift_markdown(report)
    assert "No host differs" in text and "No manifest from this run (failed or not run): c." in text


def test_a_field_missing_on_one_host_differs_as_absent(default_fields):
    lacking = manifest()
    del lacking["te_mode"]
    entry = by_field(fleet_report.drift_report({"a": manifest(), "b": manifest(), "c": lacking}, default_fields))["te_mode"]
    assert entry["differ"] == {"c": None} and entry["majority"] == "source"


def test_the_release_pins_catch_a_version_every_host_shares(default_fields, pins):
    wrong = {"torch": "2.11.0+rocm7.15.0a20260720"}
    manifests = {"a": manifest(extra=wrong), "b": manifest(extra=wrong)}
    report = fleet_report.drift_report(manifests, default_fields, pins)
    entry = by_field(report)["distributions.torch"]
    assert entry["differ"] == {} and entry["pin"] == "2.12.0+rocm7.15.0a20260720"
    assert entry["off_pin"] == {"a": "2.11.0+rocm7.15.0a20260720", "b": "2.11.0+rocm7.15.0a20260720"}
    assert "| distributions.torch | 2.11.0+rocm7.15.0a20260720 | 2.12.0+rocm7.15.0a20260720 | a |" in \
        fleet_report.drift_markdown(report)
    # On pin: nothing (pip 26.3 and packaging 25.0 are pinned too); a version spelled otherwise is the same version.
    fine = fleet_report.drift_report({"a": manifest(extra={"packaging": "25.0.0"})}, default_fields, pins)
    assert fine["drift"] == []


def test_a_pin_holds_once_its_stage_ran(default_fields, pins):
    # onnxscript is pinned by the te stage only: a host that has not built te is not compared with that pin.
    early = manifest(extra={"onnxscript": "0.6.0"})
    built = manifest(extra={"onnxscript": "0.6.0"})
    built["build_keys"] = dict(built["build_keys"], te="eeee")
    report = fleet_report.drift_report({"a": early, "b": built}, default_fields, pins)
    entry = by_field(report)["distributions.onnxscript"]
    assert entry["pin"] == "0.7.0" and entry["off_pin"] == {"b": "0.6.0"} and entry["differ"] == {}


def test_manifests_of_dict_subclasses_are_read_as_plain_values(default_fields):
    class Tagged(dict):
        """What a templated value can be (a dict subclass): jmespath's functions check exact types."""
    odd = Tagged(manifest())
    odd["distributions"] = Tagged(odd["distributions"])
    report = fleet_report.drift_report({"a": odd, "b": manifest()}, default_fields)
    assert report["errors"] == [] and report["drift"] == []


def test_the_pins_in_the_manifests_shape(pins):
    found = fleet_report.drift_pins(pins)
    # te pins pybind11 (the venv stage installs it without a version): a base without te is not held to that pin.
    assert found["distributions"]["pybind11"] == "3.0.4"
    assert "pybind11" not in fleet_report.drift_pins(pins, ["venv", "torch"])["distributions"]
    assert found["release"] == "v26.5"
    assert found["distributions"]["torch"] == "2.12.0+rocm7.15.0a20260720"
    assert found["distributions"]["transformer-engine-rocm-torch"] == "2.15.0.dev0+rocm7.15.0a20260716.a07e607"
    assert found["distributions"]["wheel"] == "0.45.1" and found["distributions"]["boto3"] == "1.35.42"
    assert "uv" not in found["distributions"]                          # not installed in the venv
    assert not [name for name in found["distributions"] if "device" in name]   # one per arch: compared by majority
    assert found["checkouts"]["flash_attn"] == pins["sources"]["flash_attn"]["ref"]
    assert "grouped_gemm" not in found["checkouts"]                     # a branch: resolved per run
    twice = fleet_report.drift_pins({"a": {"p": ["x==1"]}, "b": {"p": ["x==2", "y[extra]==3"]}})
    assert twice["distributions"] == {"y": "3"}
    # the release's own list of pins a later stage replaces by design (every converged host differs from them);
    # pydeps' datasets==3.6.0 is not among them: Primus's requirements keep it (the stage order of a real node)
    assert pins["drift_superseded"] == ["packaging"]
    assert "packaging" not in found["distributions"] and found["distributions"]["datasets"] == "3.6.0"
    assert fleet_report.drift_pins({"a": {"p": ["Data_Sets==1", "z==2"]}, "drift_superseded": ["data-sets"]})[
        "distributions"] == {"z": "2"}


def test_user_fields_extend_replace_and_remove_defaults(default_fields):
    fields = fleet_report.drift_fields(default_fields, {"torch": "distributions.torch", "verify_failed": "",
                                                        "archs": "join(';', archs)"})
    assert fields["torch"] == "distributions.torch" and "verify_failed" not in fields and fields["archs"] == "join(';', archs)"
    report = fleet_report.drift_report({"a": manifest(), "b": manifest(), "c": manifest(("gfx950",))},
                                       {"torch": "distributions.torch", "arch_text": "join(';', archs)"})
    assert [e["field"] for e in report["drift"]] == ["arch_text"]
    assert report["drift"][0]["differ"] == {"c": "gfx950"}


@pytest.mark.parametrize("fields,words", [
    ({"torch": "distributions.[torch"}, ["primus_drift_fields.torch", "distributions.[torch", "not a valid JMESPath"]),
    ({"torch": 3}, ["primus_drift_fields.torch must be a JMESPath expression", "int"]),
    ({"bad name": "archs"}, ["field name", "bad name"]),
    (["archs"], ["primus_drift_fields must be a mapping", "list"]),
])
def test_a_bad_field_is_refused_naming_it(default_fields, fields, words):
    with pytest.raises(fleet_report.ReportError) as raised:
        fleet_report.drift_fields(default_fields, fields)
    for word in words:
        assert word in str(raised.value)
    with pytest.raises(AnsibleFilterError) as raised:
        report_filters.drift_fields(default_fields, fields)
    assert words[0] in str(raised.value)


def test_an_expression_that_fails_on_one_hosts_manifest_is_reported_not_fatal():
    odd = manifest()
    odd["distributions"] = "not a mapping"
    report = fleet_report.drift_report({"a": manifest(), "b": odd}, {"names": "keys(distributions)"})
    assert report["errors"][0]["field"] == "names" and report["errors"][0]["host"] == "b"
    assert "could not be evaluated" in fleet_report.drift_markdown(report)


def test_the_console_lines_name_field_host_and_value(default_fields):
    report = fleet_report.drift_report({"a": manifest(), "b": manifest(extra={"packaging": "24.2"}), "c": manifest()},
                                       default_fields)
    assert fleet_report.drift_lines(report) == ["drift: 1 of %d values differ" % report["compared"],
                                                "  distributions.packaging: b=24.2"]


# --------------------------------------------------------------------------- the report directory (the action plugin)

def test_the_report_directory_defaults_to_the_users_state_directory(monkeypatch):
    from ansible_collections.primus.trainenv.plugins.action import run_report
    assert run_report.default_dir({"XDG_STATE_HOME": "/home/me/.state"}) == "/home/me/.state/primus-trainenv"
    monkeypatch.setenv("HOME", "/home/me")
    assert run_report.default_dir({}) == "/home/me/.local/state/primus-trainenv"


def test_the_report_directory_must_be_safe_and_the_users_own(tmp_path, monkeypatch):
    from ansible.errors import AnsibleActionFail
    from ansible_collections.primus.trainenv.plugins.action import run_report
    monkeypatch.setenv("HOME", str(tmp_path))
    assert run_report.report_dir("~/reports//") == str(tmp_path / "reports")
    assert run_report.report_dir("") == os.path.join(os.environ.get("XDG_STATE_HOME") or str(tmp_path / ".local" / "state"),
                                                     "primus-trainenv")
    with pytest.raises(AnsibleActionFail) as raised:
        run_report.report_dir("reports")
    assert "primus_report_dir must be an absolute path" in str(raised.value)
    with pytest.raises(AnsibleActionFail) as raised:
        run_report.report_dir(str(tmp_path / "a b"))
    assert "a space (U+0020)" in str(raised.value)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(AnsibleActionFail) as raised:
        run_report.report_dir(str(shared))
    assert "is writable by others (mode 0777)" in str(raised.value) and "a directory you own" in str(raised.value)
    link = tmp_path / "link"
    link.symlink_to(tmp_path)
    with pytest.raises(AnsibleActionFail) as raised:
        run_report.report_dir(str(link))
    assert "is a symbolic link" in str(raised.value)


def test_a_host_name_becomes_a_safe_file_name():
    from ansible_collections.primus.trainenv.plugins.action import run_report
    assert run_report.file_name("node-1.example.com") == "node-1.example.com"
    assert run_report.file_name("../etc/passwd") == "_.._etc_passwd"
    assert run_report.file_name("fe80::1") == "fe80__1"


def test_the_markdown_quotes_an_expression_with_backticks(default_fields):
    text = fleet_report.drift_markdown(fleet_report.drift_report({"a": manifest()}, default_fields))
    assert "device_wheels = `` sort(keys(distributions || `{}`)[?contains(@, '-device-')]) ``" in text
    assert "archs = `archs`" in text


# --------------------------------------------------------------------------- releases side by side

EVENTS = {"flash_attn": {"stage": "flash_attn", "origin": "built"}, "te": {"stage": "te", "origin": "built"},
          "tensorstore": {"stage": "pydeps", "origin": "cache"},
          "aiter": {"stage": "aiter", "origin": "store", "builder": "n1"}}


def test_a_record_counts_where_each_wheel_came_from_and_names_the_release_and_link():
    host = {"release": "v26.5.1", "base": "/h/envs/primus-v26.5.1", "current_link": "/h/envs/primus-current",
            "current_target": "/h/envs/primus-v26.5.1", "other": "ignored"}
    record = fleet_report.run_record(RUN, STATUS, STARTED, 410.0, installed=EVENTS, host=host)
    assert record["wheels"] == {"compiled": 2, "cache": 1, "store": 1}
    assert record["release"] == "v26.5.1" and record["current_target"] == "/h/envs/primus-v26.5.1"
    assert "other" not in record
    lines = fleet_report.summary_lines(fleet_report.run_summary({"n2": record}, ["n2"]))
    table = [line for line in lines if line.startswith("n2 ")][0].split()
    assert table[:3] == ["n2", "ok", "v26.5.1"] and table[7:10] == ["2", "1", "1"], lines
    assert "Releases: v26.5.1 on n2" in lines
    assert "  n2: base /h/envs/primus-v26.5.1; /h/envs/primus-current -> /h/envs/primus-v26.5.1 (this base)" in lines


def test_a_host_of_a_later_batch_keeps_what_the_last_run_knew_of_it():
    before = fleet_report.run_summary({
        "n1": fleet_report.run_record(RUN, STATUS, STARTED, 410.0, host={
            "release": "v26.5", "base": "/b/v26.5", "current_link": "/b/cur", "current_target": "/b/v26.5"}),
        "n2": fleet_report.run_record(RUN, STATUS, STARTED, 410.0, host={"release": "v26.5", "base": "/b/v26.5"})},
        generated="T0")
    during = fleet_report.run_summary({
        "n1": fleet_report.run_record(RUN, STATUS, STARTED, 410.0, host={
            "release": "v26.5.1", "base": "/b/v26.5.1", "current_link": "/b/cur", "current_target": "/b/v26.5.1"}),
        "n2": None}, batch=["n1"], generated="T1")
    during = fleet_report.with_last_known(during, before)
    assert during["hosts"]["n2"]["last_known"] == {"release": "v26.5", "base": "/b/v26.5", "generated": "T0"}
    assert during["releases"] == {"v26.5": ["n2"], "v26.5.1": ["n1"]}
    lines = fleet_report.summary_lines(during)
    assert "Releases: v26.5 on n2; v26.5.1 on n1" in lines
    assert [line for line in lines if line.startswith("n2 ")][0].split()[:4] == ["n2", "no", "record", "(v26.5)"]
    assert "  n2: base /b/v26.5; no current link (as of the run of T0)" in lines
    # a third run that again lacks n2 keeps the same last known state, with the time it was known
    again = fleet_report.with_last_known(fleet_report.run_summary({"n1": None, "n2": None}, ["n1"], "T2"), during)
    assert again["hosts"]["n2"]["last_known"]["generated"] == "T0"
    markdown = fleet_report.drift_markdown({"hosts": ["n1"], "drift": []}, during)
    assert "| n1 | v26.5.1 | /b/v26.5.1 | /b/cur -> /b/v26.5.1 (this base) | this run |" in markdown
    assert "| n2 | v26.5 | /b/v26.5 | - | the run of T0 |" in markdown
    assert fleet_report.drift_lines({"hosts": ["n1"], "drift": []}, summary=during)[0] == \
        "releases: v26.5 on n2; v26.5.1 on n1"
