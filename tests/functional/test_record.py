"""The record of a base: per-stage timings in the stamps, the manifest (every item, no secrets) and verify,
on a base converged with the cheap stages (venv, torch) by an unprivileged user over SSH."""
import hashlib
import json
import os
import re

import pytest

import stage_registry

pytestmark = pytest.mark.functional

TOKEN = "hf_FAKEtoken0123456789abcdefSECRET"
URL_TOKEN = "pypiFAKEpassw0rd9876"
ROCM = "2.12.0+rocm7.15.0a20260720"


@pytest.fixture(scope="module")
def recorded(playbook, target, world, tmp_path_factory):
    """venv,torch,manifest with a secret in the controller's environment and an index URL with credentials."""
    pins = str(tmp_path_factory.mktemp("pins") / "pins-with-credentials.yml")
    with open(world["pins"]) as handle:
        text = handle.read()
    text, count = re.subn(r"(\n    pypi: http://)", r"\g<1>trainer:%s@" % URL_TOKEN, text)
    assert count == 1, "the world's pins file names its PyPI index once"
    with open(pins, "w") as handle:
        handle.write(text)
    base = target.base("record")
    run = playbook("venv,torch,manifest", base, extra={"primus_release_file": pins},
                   env={"HF_TOKEN": TOKEN, "WANDB_API_KEY": TOKEN})
    assert run.rc == 0, run.output[-4000:]
    with open(os.path.join(base, "manifest", "manifest.json")) as handle:
        manifest = json.load(handle)
    return base, run, manifest, pins


def test_the_manifest_holds_every_item(recorded, target):
    base, run, manifest, _pins = recorded
    assert manifest["release"] == "v26.5" and manifest["host"] and manifest["format"] == 1
    assert manifest["os"]["id"] and manifest["os"]["name"]
    assert re.match(r"^2\.\d+$", manifest["glibc"]) and re.match(r"^3\.4\.\d+$", manifest["glibcxx"])
    assert re.match(r"^3\.12\.\d+$", manifest["python"])
    assert manifest["archs"] == ["gfx942"] and manifest["te_mode"] == "not built"
    assert manifest["distributions"]["torch"] == ROCM and manifest["distributions"]["setuptools"] == "75.1.0"
    stamps = {}
    for stage in ("venv", "torch"):
        with open(os.path.join(base, "state", stage + ".json")) as handle:
            stamps[stage] = json.load(handle)
    assert manifest["build_keys"] == {s: stamps[s]["key_id"] for s in stamps}
    # Each stamp carries how long its stage took; the manifest's timings are those.
    assert manifest["timings"] == {s: stamps[s]["outputs"]["seconds"] for s in stamps}
    assert all(0 < seconds < run.seconds for seconds in manifest["timings"].values()), manifest["timings"]
    with open(os.path.join(base, "env.sh"), "rb") as handle:
        assert manifest["env_sh"] == {"path": os.path.join(base, "env.sh"),
                                      "sha256": hashlib.sha256(handle.read()).hexdigest()}
    assert manifest["checkouts"] == {}, "no git-built stage ran"
    assert "verify" not in manifest
    with open(os.path.join(base, "manifest", "summary.txt")) as handle:
        summary = handle.read()
    assert "torch %s" % ROCM in summary and "Build time:" in summary
    assert "stage timings (of the run that built each): " in run.stdout
    assert re.search(r"JIT caches: aiter's in its package in the venv .*: PRIMUS_BASE is on \S+ .*not a network", run.stdout)


def test_no_secret_reaches_manifest_logs_or_state(recorded):
    base, run, _manifest, _pins = recorded
    found = []
    for sub in ("manifest", "logs", "state"):
        for root, _dirs, files in os.walk(os.path.join(base, sub)):
            for name in files:
                with open(os.path.join(root, name), "rb") as handle:
                    data = handle.read()
                for secret in (TOKEN, URL_TOKEN):
                    if secret.encode() in data:
                        found.append((os.path.join(root, name), secret))
    assert found == []
    assert os.listdir(os.path.join(base, "logs")), "the pip logs were written (and checked)"
    assert URL_TOKEN not in run.stdout


def test_a_converged_rerun_keeps_the_record(recorded, playbook):
    base, first, manifest, pins = recorded
    again = playbook("venv,torch,manifest", base, extra={"primus_release_file": pins})
    assert again.rc == 0 and again.stats["node1"]["changed"] == 0, again.changed_tasks()
    with open(os.path.join(base, "manifest", "manifest.json")) as handle:
        assert json.load(handle) == manifest, "the timings of the run that built each stage are kept"


def test_verify_on_a_partial_base_fails_naming_the_stages_to_build(recorded, playbook):
    base, _run, _manifest, pins = recorded
    run = playbook("verify", base, extra={"primus_release_file": pins})
    assert run.rc != 0
    missing = [s for s in stage_registry.built_stages() if s not in ("venv", "torch")]
    assert "Not built on this base: " + ", ".join(missing) in run.output
    assert "--tags " + ",".join(missing) in run.output
    with open(os.path.join(base, "manifest", "manifest.json")) as handle:
        results = {r["name"]: r for r in json.load(handle)["verify"]}
    assert results["torch_hip"]["status"] == "ok" and "HIP" in results["torch_hip"]["detail"]
    assert results["torch_pinned"]["status"] == "ok" and results["env_sh"]["status"] == "ok"
    assert results["env_sh"]["detail"] == "sources cleanly; python is %s" % os.path.join(base, "venv")
    for name in ("transformer_engine", "flash_attn", "aiter", "primus_turbo", "flydsl_vector", "mamba_ssm",
                 "tilelang_absent", "helpers_cpp"):
        assert results[name]["status"] == "not built", results[name]


def test_verify_names_an_env_sh_that_does_not_source(recorded, playbook, target):
    base, _run, _manifest, pins = recorded
    env_sh = os.path.join(base, "env.sh")
    with open(env_sh) as handle:
        good = handle.read()
    try:
        # As if PRIMUS_BASE held a different env.sh: it refuses (return 1) in a clean shell.
        target.run(["sed", "-i", "s|^_primus_built_for=.*|_primus_built_for=/elsewhere|", env_sh])
        run = playbook("verify", base, extra={"primus_release_file": pins})
        assert run.rc != 0
        assert re.search(r"Check env_sh \(stage torch\) failed: env -i bash -c .* exited 1: \[env\]", run.output), run.output[-3000:]
    finally:
        target.run(["sh", "-c", 'cat > "$1"', "sh", env_sh], input_text=good)
