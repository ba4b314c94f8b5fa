"""pip's dry-run installation report: the plan, and who brings a forbidden distribution."""
import json

import pytest

from ansible_collections.primus.trainenv.plugins.module_utils._pip.probe import PROBE_MARKER, parse_probe
from ansible_collections.primus.trainenv.plugins.module_utils._pip.report import (
    ReportError, describe_forbidden, forbidden_hits, parse_report, plan_actions, predicted_after, version_action)

ROCM = "2.12.0+rocm7.15.0a20260720"

# Real reports (pip 23.2.1 and 25.2, `pip install --dry-run --report F`), trimmed of "environment"
# and of the per-file "hashes" map; the rest is byte-for-byte what pip wrote.
REPORT_FRESH_CUDA_APP_PIP23 = '{"version": "1", "pip_version": "23.2.1", "install": [{"download_info": {"url": "http://127.0.0.1:8765/files/cuda_app-1.0-py3-none-any.whl", "archive_info": {"hash": "sha256=082203b0cf439f4fe5a58792fcad5e33290e9bec91981e50dbb8408233c01441"}}, "is_direct": false, "requested": true, "metadata": {"metadata_version": "2.1", "name": "cuda-app", "version": "1.0", "summary": "stand-in for cuda-app (primus.trainenv test world)", "requires_dist": ["torch"]}}, {"download_info": {"url": "http://127.0.0.1:8765/files/torch-2.13.0-py3-none-any.whl", "archive_info": {"hash": "sha256=ed9520016183299c893778ea5c630e3b51d095e31edc1dce34e5507aadfe1e72"}}, "is_direct": false, "requested": false, "metadata": {"metadata_version": "2.1", "name": "torch", "version": "2.13.0", "summary": "stand-in for torch (primus.trainenv test world)", "requires_dist": ["nvidia-cublas-cu12==12.1"]}}, {"download_info": {"url": "http://127.0.0.1:8765/files/nvidia_cublas_cu12-12.1-py3-none-any.whl", "archive_info": {"hash": "sha256=d29e4d4a3db610dca16bb1b41d60f5f76e18c557dc0ed91fb2aefe8761090b1d"}}, "is_direct": false, "requested": false, "metadata": {"metadata_version": "2.1", "name": "nvidia-cublas-cu12", "version": "12.1", "summary": "stand-in for nvidia-cublas-cu12 (primus.trainenv test world)"}}]}'  # noqa: E501
REPORT_REPLACE_TORCH_PIP25 = '{"version": "1", "pip_version": "25.2", "install": [{"download_info": {"url": "http://127.0.0.1:8765/files/torch-2.12.0%2Brocm7.15.0a20260720-py3-none-any.whl", "archive_info": {"hash": "sha256=5a414a89471f5c22944a9c096194a847ca2a938ca23b81fd6529171afae87961"}}, "is_direct": false, "is_yanked": false, "requested": true, "metadata": {"metadata_version": "2.1", "name": "torch", "version": "2.12.0+rocm7.15.0a20260720", "summary": "stand-in for torch (primus.trainenv test world)"}}, {"download_info": {"url": "http://127.0.0.1:8765/files/hub-1.0-py3-none-any.whl", "archive_info": {"hash": "sha256=6cc03e9fb9c8d63fcb2cbbaca8178f140224e25532cd73a417a8871411b0cf65"}}, "is_direct": false, "is_yanked": false, "requested": true, "metadata": {"metadata_version": "2.1", "name": "hub", "version": "1.0", "summary": "stand-in for hub (primus.trainenv test world)", "requires_dist": ["inq==1.0; extra == \\"cli\\"", "torch"]}, "requested_extras": ["cli"]}]}'  # noqa: E501


def probe(*dists):
    rows = [[d[0], d[1], d[2] if len(d) > 2 else [], None, "/s/%s" % d[0], 1, []] for d in dists]
    markers = {"python_version": "3.12", "sys_platform": "linux", "platform_machine": "x86_64",
               "implementation_name": "cpython", "os_name": "posix", "platform_system": "Linux",
               "python_full_version": "3.12.1", "platform_python_implementation": "CPython",
               "implementation_version": "3.12.1", "platform_release": "6", "platform_version": "#1"}
    return parse_probe("%s\n%s" % (PROBE_MARKER, json.dumps({"dists": rows, "markers": markers})))


def test_parse_real_reports(pk):
    planned = parse_report(pk, REPORT_FRESH_CUDA_APP_PIP23)
    assert [(p.name, p.version, p.requested) for p in planned] == [
        ("cuda-app", "1.0", True), ("torch", "2.13.0", False), ("nvidia-cublas-cu12", "12.1", False)]
    assert planned[1].requires == ["nvidia-cublas-cu12==12.1"]
    planned = parse_report(pk, REPORT_REPLACE_TORCH_PIP25)
    assert planned[0].version == ROCM and planned[1].extras == ["cli"]
    assert planned[0].url.endswith("torch-2.12.0%2Brocm7.15.0a20260720-py3-none-any.whl")


@pytest.mark.parametrize("text, message", [
    ("not json", "unreadable report"),
    ('{"version": "1"}', 'no "install" list'),
    ('{"version": "2", "install": []}', "unsupported pip report version"),
    ('{"version": "1", "install": [{"metadata": {}}]}', "without name/version"),
])
def test_bad_reports(pk, text, message):
    with pytest.raises(ReportError, match=message):
        parse_report(pk, text)


@pytest.mark.parametrize("before, after, action", [
    (None, "1.0", "install"), ("1.0", "1.1", "upgrade"), ("1.1", "1.0", "downgrade"),
    ("2.12.0+cpu", ROCM, "replace"), (ROCM, "2.12.0+cpu", "replace"), ("1.0", "1.0.0", "reinstall"),
])
def test_version_action(pk, before, after, action):
    assert version_action(pk, before, after) == action


def test_plan_against_installed(pk):
    planned = parse_report(pk, REPORT_REPLACE_TORCH_PIP25)
    plan = plan_actions(pk, planned, probe(("torch", "2.12.0+cpu")))
    assert plan == [
        {"name": "hub", "version": "1.0", "installed": None, "action": "install", "requested": True},
        {"name": "torch", "version": ROCM, "installed": "2.12.0+cpu", "action": "replace", "requested": True}]
    after = predicted_after(probe(("torch", "2.12.0+cpu"), ("pip", "23.2.1")), planned)
    assert after == {"torch": ("torch", ROCM), "hub": ("hub", "1.0"), "pip": ("pip", "23.2.1")}


def test_forbidden_names_distribution_and_chain(pk):
    planned = parse_report(pk, REPORT_FRESH_CUDA_APP_PIP23)
    hits = forbidden_hits(pk, ["nvidia-*"], planned, probe(("pip", "23.2.1")))
    assert hits == [{"name": "nvidia-cublas-cu12", "version": "12.1", "pattern": "nvidia-*",
                     "required_by": ["torch 2.13.0"],
                     "chain": ["required by torch 2.13.0", "required by cuda-app 1.0", "requested by this task"],
                     "new": True}]
    assert describe_forbidden(hits) == [
        "nvidia-cublas-cu12 12.1 (forbidden by nvidia-*): required by torch 2.13.0, required by cuda-app 1.0, "
        "requested by this task"]


def test_forbidden_by_version_pattern_and_already_installed(pk):
    planned = parse_report(pk, REPORT_FRESH_CUDA_APP_PIP23)
    assert [h["name"] for h in forbidden_hits(pk, ["torch==2.13*"], planned, probe())] == ["torch"]
    assert forbidden_hits(pk, ["torch==*+cu*"], planned, probe()) == []
    hits = forbidden_hits(pk, ["nvidia-*"], [], probe(("nvidia-nccl-cu12", "2.0")))
    assert hits[0]["chain"] == ["already installed in the venv"] and hits[0]["new"] is False
    assert forbidden_hits(pk, [], planned, probe()) == []


def test_forbidden_required_by_an_installed_distribution(pk):
    # torch (installed, stays) requires a missing nvidia wheel; the task's plan brings it in.
    report = json.loads(REPORT_FRESH_CUDA_APP_PIP23)
    report["install"] = [report["install"][2]]
    planned = parse_report(pk, json.dumps(report))
    hits = forbidden_hits(pk, ["nvidia-*"], planned, probe(("torch", "2.13.0", ["nvidia-cublas-cu12==12.1"])))
    assert hits[0]["required_by"] == ["torch 2.13.0"]
    assert hits[0]["chain"] == ["required by torch 2.13.0 (installed)"]


def test_replacing_a_forbidden_installed_build_is_not_a_hit(pk):
    planned = parse_report(pk, REPORT_REPLACE_TORCH_PIP25)
    assert forbidden_hits(pk, ["torch==*+cpu"], planned, probe(("torch", "2.12.0+cpu"))) == []
