"""Stages pydeps, boto, cleanup and torchrec, run by an unprivileged user against the simulated world:
tensorstore 0.1.45 (sdist only) built once per build key into the wheel cache, nltk's failed download
a visible warning, the boto pins, tilelang removed, the optional torchrec with the ROCm index as an
extra index; a converged re-run changes nothing."""
import collections
import glob
import json
import os
import sys

import pytest

from harness import REPO, installed, record_timing

sys.path.insert(0, os.path.join(REPO, ".collections"))
from ansible_collections.primus.trainenv.plugins.filter.stages import stage_key_id  # noqa: E402

pytestmark = pytest.mark.functional
Converged = collections.namedtuple("Converged", "base cache first cleanup second")

STAGES = "venv,torch,pydeps,boto,cleanup"


def tensorstore_wheel_dir(cache, base):
    """The cache directory the pydeps stamp's build key names."""
    with open(os.path.join(base, "state", "pydeps.json")) as handle:
        key = json.load(handle)["key"]["wheel_builds"]["tensorstore==0.1.45"]
    return os.path.join(cache, "wheels", "tensorstore", stage_key_id(key))


@pytest.fixture(scope="module")
def converged(playbook, target, world, golden):
    """A copy of a base converged with venv,torch (tests/functional/bases.py), converged with pydeps,boto; tilelang then installed by hand (as mamba
    would); cleanup; and the whole set run again. The wheel cache is this module's own."""
    base = golden("pip-stages")
    cache = target.base("pip-stages-cache")
    extra = {"primus_cache_dir": cache}
    first = playbook("venv,torch,pydeps,boto", base, extra=extra)
    assert first.rc == 0, first
    record_timing("venv,torch,pydeps,boto on a copy of a venv,torch base (unprivileged, SSH)", first.seconds)
    pip = target.bash('"$PY" -m pip install --no-deps --index-url "$INDEX" tilelang',
                      env={"PIP_CONFIG_FILE": os.devnull, "PY": os.path.join(base, "venv", "bin", "python"),
                           "INDEX": world["indexes"]["pypi"]})
    assert pip.returncode == 0, pip.stderr
    assert "tilelang" in installed(target, base)
    cleanup = playbook("cleanup", base, extra=extra)
    assert cleanup.rc == 0, cleanup
    second = playbook(STAGES, base, extra=extra)
    assert second.rc == 0, second
    record_timing("%s converged (unprivileged, SSH)" % STAGES, second.seconds)
    return Converged(base, cache, first, cleanup, second)


def test_tensorstore_is_built_once_into_the_wheel_cache_of_its_key(converged, target):
    wheel_dir = tensorstore_wheel_dir(converged.cache, converged.base)
    assert os.listdir(wheel_dir) == ["tensorstore-0.1.45-cp312-cp312-linux_x86_64.whl"]
    build = converged.first.task("Build the wheel from the sdist - tensorstore")
    assert build["result"]["changed"] is True, build
    # Installed from that wheel (PEP 610 records the file), not built again by pip in the venv.
    (direct,) = glob.glob(os.path.join(converged.base, "venv", "lib", "python3.12", "site-packages",
                                       "tensorstore-0.1.45.dist-info", "direct_url.json"))
    with open(direct) as handle:
        assert json.load(handle)["url"] == "file://" + os.path.join(wheel_dir, os.listdir(wheel_dir)[0])
    assert installed(target, converged.base)["tensorstore"] == "0.1.45"
    proc = target.run([os.path.join(converged.base, "venv", "bin", "python"), "-c", "import tensorstore._tensorstore"])
    assert proc.returncode == 0, proc.stderr


def test_the_plan_says_tensorstore_is_built_once_per_key(converged):
    shown = converged.first.task("Show how the sdist-only pins are installed")["result"]["results"][0]["msg"]
    assert shown.startswith("[pydeps] tensorstore==0.1.45 has no cp312 wheel: it is built from its sdist once per "
                            "build key "), shown
    assert tensorstore_wheel_dir(converged.cache, converged.base) in shown and "bazel" in shown


def test_a_second_base_reuses_the_cached_wheel(converged, playbook, target, golden):
    base = golden("pip-stages-2")
    run = playbook("venv,torch,pydeps", base, extra={"primus_cache_dir": converged.cache})
    assert run.rc == 0, run
    assert run.task("Build the wheel from the sdist - tensorstore")["status"] == "skipped"
    assert not [t for t in run.changed_tasks() if "wheel" in t.lower() and "Install" not in t]
    wheel_dir = tensorstore_wheel_dir(converged.cache, base)
    assert wheel_dir == tensorstore_wheel_dir(converged.cache, converged.base)
    assert len(os.listdir(wheel_dir)) == 1
    with open(os.path.join(base, "state", "pydeps.json")) as handle:
        assert json.load(handle)["outputs"]["built"] == []
    assert installed(target, base)["tensorstore"] == "0.1.45"


def test_a_failed_nltk_download_is_a_visible_warning(converged):
    for run in (converged.first, converged.second):   # asked again on every run until the data is there
        warning = run.task("Warn that the nltk data could not be downloaded")
        assert warning["status"] == "ok", warning
        msg = warning["result"]["msg"]
        assert msg.startswith("[pydeps] WARNING: nltk could not download punkt_tab into %s/nltk_data (" % converged.base)
        assert "Error loading punkt_tab" in msg and "re-run --tags pydeps" in msg
    assert "[pydeps] WARNING: nltk could not download punkt_tab" in converged.first.stdout
    download = converged.first.task("Download the nltk data")
    assert download["result"]["cmd"][-3:] == ["-d", converged.base + "/nltk_data", "punkt_tab"]
    assert download["result"]["changed"] is False


def test_env_sh_exports_nltk_data_of_the_base(converged, target):
    proc = target.bash('export PRIMUS_BASE=%s NLTK_DATA=/mine/nltk; source "$PRIMUS_BASE/env.sh" 2>/dev/null; '
                       'printf %%s "$NLTK_DATA"' % converged.base)
    assert proc.stdout == "/mine/nltk:%s/nltk_data" % converged.base, proc.stderr


def test_boto_pins_installed_and_tilelang_removed(converged, target):
    have = installed(target, converged.base)
    assert (have["boto3"], have["botocore"]) == ("1.35.42", "1.35.99")
    assert "tilelang" not in have
    removed = converged.cleanup.task("Uninstall tilelang")["result"]
    assert removed["changed"] is True and [d["name"] for d in removed["removed"]] == ["tilelang"]
    with open(os.path.join(converged.base, "state", "cleanup.json")) as handle:
        assert json.load(handle)["outputs"]["removed"] == ["tilelang"]


def test_the_expected_botocore_warning_is_explained_once_when_the_stage_runs(converged):
    words = ("[boto] Expected: pip may report that aiobotocore (from Primus's requirements) requires a newer botocore, "
             "but botocore 1.35.99")
    assert converged.first.output.count(words) == 1, words
    assert words not in converged.second.output, "a stage that is done explains nothing"


def test_a_converged_rerun_changes_nothing(converged):
    assert converged.second.stats["node1"]["changed"] == 0, converged.second.changed_tasks()
    # boto is done with nothing else to do: its include is skipped as a whole (no task of its role runs). pydeps runs
    # (the world's nltk data server is unreachable, so it asks again), and its stamp is not written again.
    assert converged.second.task("Stage boto")["status"] == "skipped"
    assert not [r for r in converged.second.results if "primus.trainenv.boto" in r["task"]]
    assert converged.second.task("Record stage pydeps as done")["status"] == "skipped"


def test_torchrec_only_when_asked_with_the_rocm_index_as_an_extra_index(converged, playbook, target, world):
    assert not os.path.exists(os.path.join(converged.base, "state", "torchrec.json"))   # not a default stage
    log = os.path.join(world["root"], "server.log")
    start = os.path.getsize(log)
    run = playbook("torchrec", converged.base, extra={"primus_cache_dir": converged.cache})
    assert run.rc == 0, run
    companions = run.task("Install torchrec's companions")["result"]
    assert "--extra-index-url=%s" % world["indexes"]["torch"] in companions["cmd"]
    assert "--index-url=%s" % world["indexes"]["pypi"] in companions["cmd"]
    with open(log) as handle:
        handle.seek(start)
        asked = handle.read()
    assert "GET /rocm/whl-multi-arch/tensordict/" in asked   # pip asked the extra index too
    have = installed(target, converged.base)
    assert have["torchmetrics"] == "1.0.3" and "torchrec" in have and "tensordict" in have and "iopath" in have
    assert "mlperf-logging" in have
    assert have["torch"] == "2.12.0+rocm7.15.0a20260720"   # the constraints file kept the ROCm torch
    assert not [name for name in have if name.startswith(("nvidia-cublas", "nvidia-cuda-"))]
    again = playbook("torchrec", converged.base, extra={"primus_cache_dir": converged.cache})
    assert again.rc == 0 and again.stats["node1"]["changed"] == 0, again.changed_tasks()
