"""The fleet's wheel store (issue 20): one build per build key, every other node installs that wheel.

Several inventory hosts of one run, all the same unprivileged target user over SSH, each with its own PRIMUS_BASE,
build and cache directories (so no node sees another's wheel cache) and its own GPU host: two MI300X (gfx942), one
MI355X (gfx950). Compiles are counted from the world's build records: every setup.py run of a stand-in writes a
fresh build id into the world_build.json its wheel carries, so two nodes with the same id installed one compile.
"""
import hashlib
import json
import os

import pytest

from harness import record_timing

pytestmark = pytest.mark.functional

STAGES = "venv,torch,torchtune,causal_conv1d"
# torchtune's build does not depend on the arch list; causal_conv1d's does.
PACKAGE = {"torchtune": "torchtune", "causal_conv1d": "causal_conv1d", "grouped_gemm": "grouped_gemm"}


def site(base):
    return os.path.join(base, "venv", "lib", "python3.12", "site-packages")


def build_id(base, stage):
    with open(os.path.join(site(base), PACKAGE[stage], "world_build.json")) as handle:
        return json.load(handle)["build"]["id"]


def stamp(base, stage):
    with open(os.path.join(base, "state", stage + ".json")) as handle:
        return json.load(handle)


def sha256(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def entries(store, component):
    """{key id: (wheel file, its recorded sha256 line)} of a component in a store (a key's empty directory - its
    builder failed - is no entry)."""
    found = {}
    top = os.path.join(store, component)
    for key in sorted(os.listdir(top)) if os.path.isdir(top) else []:
        names = sorted(os.listdir(os.path.join(top, key)))
        if not names:
            continue
        wheels = [n for n in names if n.endswith(".whl")]
        assert len(wheels) == 1 and names == [wheels[0], wheels[0] + ".sha256"], names
        with open(os.path.join(top, key, wheels[0] + ".sha256")) as handle:
            found[key] = (wheels[0], handle.read())
    return found


def wheels_in_cache(node):
    top = os.path.join(node["cache"], "wheels")
    return sorted(os.path.relpath(os.path.join(d, f), top) for d, _s, files in os.walk(top) for f in files if f.endswith(".whl"))


@pytest.fixture(scope="module")
def fleet(target, tmp_path_factory):
    """Five nodes of the same target (n4 and n5 join later); the controller's store in a temp dir."""
    store = str(tmp_path_factory.mktemp("fleet") / "wheel-store")
    root = target.base("fleet")
    nodes = {}
    for name, gpu in (("n1", "mi300x"), ("n2", "mi300x"), ("n3", "mi355x"), ("n4", "mi300x"), ("n5", "mi355x")):
        host_dir = os.path.join(target.hosts_dir, gpu)
        nodes[name] = {
            "base": os.path.join(root, name, "base"), "cache": os.path.join(root, name, "cache"),
            "vars": {"primus_base": os.path.join(root, name, "base"), "primus_cache_dir": os.path.join(root, name, "cache"),
                     "primus_build_dir": os.path.join(root, name, "build"),
                     "primus_rocminfo": os.path.join(host_dir, "bin", "rocminfo"),
                     "primus_kfd_nodes_path": os.path.join(host_dir, "sys", "class", "kfd", "kfd", "topology", "nodes")}}
    # The nodes' parent directory, the target user's own.
    assert target.run(["mkdir", "-p", root]).returncode == 0
    yield {"store": store, "root": root, "nodes": nodes}
    target.run(["rm", "-rf", root])


def hosts(fleet, *names, **extra):
    return {name: dict(fleet["nodes"][name]["vars"], **extra) for name in names}


@pytest.fixture(scope="module")
def first(playbook, fleet):
    run = playbook(STAGES, hosts=hosts(fleet, "n1", "n2", "n3"), extra={"primus_wheel_store": fleet["store"]})
    record_timing("fleet of 3 (2 x gfx942, 1 x gfx950): %s, one build per key (unprivileged, SSH)" % STAGES, run.seconds)
    return run


def test_each_build_key_is_compiled_once_and_the_other_nodes_install_its_wheel(first, fleet):
    assert first.rc == 0, first
    n1, n2, n3 = (fleet["nodes"][n]["base"] for n in ("n1", "n2", "n3"))
    # Counted from the world's records: the arch-independent torchtune one compile for all three, causal_conv1d one
    # per arch (n1 builds for n2, n3 for itself).
    assert len({build_id(b, "torchtune") for b in (n1, n2, n3)}) == 1
    assert build_id(n1, "causal_conv1d") == build_id(n2, "causal_conv1d") != build_id(n3, "causal_conv1d")
    # The stamps say who compiled.
    assert [stamp(b, "torchtune")["outputs"]["built"] for b in (n1, n2, n3)] == [True, False, False]
    assert [stamp(b, "causal_conv1d")["outputs"]["built"] for b in (n1, n2, n3)] == [True, False, True]
    # n2 never cloned: its build directory has no tree of either component.
    build2 = fleet["nodes"]["n2"]["vars"]["primus_build_dir"]
    assert not [n for n in os.listdir(build2) if n.startswith(("torchtune", "causal_conv1d"))] if os.path.isdir(build2) else True


def test_the_store_holds_one_wheel_per_key_with_its_sha256(first, fleet):
    assert first.rc == 0, first
    store = fleet["store"]
    tune, conv = entries(store, "torchtune"), entries(store, "causal_conv1d")
    assert len(tune) == 1 and len(conv) == 2, (tune, conv)
    for component, found in (("torchtune", tune), ("causal_conv1d", conv)):
        for key, (wheel, line) in found.items():
            assert line == "%s  %s\n" % (sha256(os.path.join(store, component, key, wheel)), wheel)
            # The store's wheel is the one each node of the key has in its own wheel cache.
            for node in fleet["nodes"].values():
                cached = os.path.join(node["cache"], "wheels", component, key, wheel)
                if os.path.exists(cached):
                    assert sha256(cached) == sha256(os.path.join(store, component, key, wheel))


def test_each_node_records_where_its_wheels_came_from(first):
    assert first.rc == 0, first
    events = {}
    for result in first.results:
        if result["status"] == "ok" and "Remember the wheel - " in result["task"]:
            events.setdefault(result["host"], {}).update(result["result"]["ansible_facts"]["source_build_store_events"])
    assert events["n1"]["torchtune"]["origin"] == "built" and events["n1"]["torchtune"]["builder"] == "n1"
    for node in ("n2", "n3"):
        assert events[node]["torchtune"]["origin"] == "store" and events[node]["torchtune"]["builder"] == "n1"
        assert len(events[node]["torchtune"]["sha256"]) == 64
    assert events["n2"]["causal_conv1d"]["builder"] == "n1" and events["n3"]["causal_conv1d"]["origin"] == "built"
    # The copies were checked against the stored sha256 before they landed in the wheel cache.
    copies = [r for r in first.results if "Copy the stored wheel into this node's wheel cache, checking its sha256" in r["task"]
              and r["status"] != "skipped"]
    assert sorted((r["host"], r["status"]) for r in copies) == [("n2", "ok"), ("n2", "ok"), ("n3", "ok")]


@pytest.fixture(scope="module")
def joined(first, playbook, fleet):
    """n4 (gfx942) and n5 (gfx950) join the converged fleet; the stored gfx950 causal_conv1d wheel was tampered with."""
    assert first.rc == 0, first
    gfx950_key = stamp(fleet["nodes"]["n3"]["base"], "causal_conv1d")["key_id"]
    wheel = entries(fleet["store"], "causal_conv1d")[gfx950_key][0]
    tampered = os.path.join(fleet["store"], "causal_conv1d", gfx950_key, wheel)
    with open(tampered, "ab") as handle:
        handle.write(b"\0")
    run = playbook(STAGES, hosts=hosts(fleet, "n1", "n2", "n3", "n4", "n5"), extra={"primus_wheel_store": fleet["store"]})
    record_timing("fleet of 3 converged + 2 joining nodes installing from the store", run.seconds)
    return run, tampered


def wheels_paths(cache, component):
    top = os.path.join(cache, "wheels", component)
    return [os.path.join(d, f) for d, _s, files in os.walk(top) for f in files if f.endswith(".whl")]


def test_a_converged_fleet_changes_nothing_and_a_joining_node_compiles_nothing(joined, fleet):
    run, _tampered = joined
    for node in ("n1", "n2", "n3"):
        assert run.stats[node]["changed"] == 0 and run.stats[node]["failed"] == 0, run
    assert run.stats["n4"]["failed"] == 0, run
    n1, n4 = fleet["nodes"]["n1"]["base"], fleet["nodes"]["n4"]["base"]
    # n4 installed the wheels n1 built in the first run: no compile of its own.
    assert build_id(n4, "torchtune") == build_id(n1, "torchtune")
    assert build_id(n4, "causal_conv1d") == build_id(n1, "causal_conv1d")
    assert stamp(n4, "causal_conv1d")["outputs"]["built"] is False


def test_a_stored_wheel_whose_sha256_differs_is_refused_and_nothing_is_installed(joined, fleet):
    run, tampered = joined
    assert run.rc != 0 and run.stats["n5"]["failed"] == 1, run
    failed = [r for r in run.failed() if r["host"] == "n5"]
    message = failed[-1]["result"]["msg"]
    assert "Stop - the stored wheel cannot be installed - causal_conv1d" in failed[-1]["task"]
    assert "its sha256 is not the one stored beside it" in message and "rm -rf '%s'" % os.path.dirname(tampered) in message
    # The refused copy never reached n5's wheel cache, and n5's torchtune (an intact entry) came from the store.
    assert wheels_paths(fleet["nodes"]["n5"]["cache"], "causal_conv1d") == []
    assert build_id(fleet["nodes"]["n5"]["base"], "torchtune") == build_id(fleet["nodes"]["n1"]["base"], "torchtune")


def test_a_builder_that_fails_stops_the_nodes_waiting_for_its_key_naming_it(first, playbook, fleet, target):
    """grouped_gemm on n1..n3 with the store shared by the nodes: n1's build is held and times out; n2 (the same key)
    stops at once naming n1, n3 (gfx950) builds its own key and stores it in the shared directory."""
    assert first.rc == 0, first
    shared = os.path.join(fleet["root"], "shared-store")
    assert target.run(["mkdir", "-p", shared]).returncode == 0
    n1 = fleet["nodes"]["n1"]["vars"]
    # The world's hold file of n1's grouped_gemm tree (<build dir>/grouped_gemm-<8 hex digits of the base's path>).
    hold = hashlib.sha256(n1["primus_base"].encode("utf-8")).hexdigest()[:8]
    hold_file = os.path.join(n1["primus_build_dir"], ".world-hold-grouped_gemm-" + hold)
    assert target.run(["mkdir", "-p", n1["primus_build_dir"]]).returncode == 0
    assert target.run(["touch", hold_file]).returncode == 0
    group = hosts(fleet, "n1", "n2", "n3", primus_wheel_store_shared=shared)
    group["n1"].update(source_build_timeout=20, source_build_poll=2)
    try:
        run = playbook("grouped_gemm", hosts=group, extra={"primus_wheel_store": fleet["store"]})
    finally:
        target.run(["rm", "-f", hold_file])
    record_timing("fleet: a builder whose build fails, its group stops", run.seconds)
    assert run.rc != 0, run
    assert run.stats["n1"]["failed"] == 1 and run.stats["n2"]["failed"] == 1 and run.stats["n3"]["failed"] == 0, run
    stop = [r for r in run.failed() if r["host"] == "n2"][-1]
    assert "Stop - the builder of this build key failed - grouped_gemm" in stop["task"]
    key = stamp(fleet["nodes"]["n3"]["base"], "grouped_gemm")["key_id"]
    assert "no wheel for key " in stop["result"]["msg"] and "of grouped_gemm: builder host n1 failed" in stop["result"]["msg"]
    # n2 compiled nothing and waited no longer than n1's failure: its stop is the next task after n1's build failed.
    assert not os.path.exists(os.path.join(fleet["nodes"]["n2"]["base"], "state", "grouped_gemm.json"))
    # n3's key is in the shared store, not on the controller.
    assert list(entries(shared, "grouped_gemm")) == [key]
    assert not os.path.exists(os.path.join(fleet["store"], "grouped_gemm"))
