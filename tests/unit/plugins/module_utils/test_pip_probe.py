"""The probe: one run of the venv's python prints its distributions and marker environment."""
import json
import os
import shutil
import stat
import subprocess
import sys
import time
from importlib import metadata

import pytest
from packaging.requirements import Requirement

from ansible_collections.primus.trainenv.plugins.module_utils._pip.probe import (
    PROBE_MARKER, PROBE_SCRIPT, RACY_SECONDS, SNAPSHOT_NAME, ProbeError, drop_snapshot, load_snapshot, parse_probe,
    probe_command, probe_from_data, probe_payload, save_snapshot)


def write_dist(site, name, version, requires=(), direct_url=None, dirname=None, extras=()):
    info = site / (dirname or "%s-%s.dist-info" % (name.replace("-", "_"), version))
    info.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", "Name: %s" % name, "Version: %s" % version]
    lines += ["Provides-Extra: %s" % e for e in extras]
    lines += ["Requires-Dist: %s" % r for r in requires]
    (info / "METADATA").write_text("\n".join(lines) + "\n")
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url))
    return info


def run_script(site):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = str(site)
    proc = subprocess.run([sys.executable, "-c", PROBE_SCRIPT], capture_output=True, text=True, env=env, check=True)
    return proc.stdout


def test_real_probe_of_this_interpreter_lists_its_distributions():
    proc = subprocess.run(probe_command(sys.executable), capture_output=True, text=True, check=True)
    probe = parse_probe(proc.stdout)
    assert probe.dists["ansible-core"].version == metadata.version("ansible-core")
    assert probe.dists["pytest"].version == metadata.version("pytest")
    assert probe.version == tuple(sys.version_info[:3])
    assert probe.markers["python_version"] == "%d.%d" % sys.version_info[:2]
    assert probe.markers["sys_platform"] == sys.platform
    assert set(probe.markers) >= {"implementation_name", "implementation_version", "os_name", "platform_machine",
                                  "platform_release", "platform_system", "platform_version",
                                  "python_full_version", "platform_python_implementation"}
    assert any(os.path.isdir(d) for d in probe.site_dirs)


def test_isolated_mode_ignores_pythonpath_and_cwd(tmp_path):
    write_dist(tmp_path, "only-on-pythonpath", "1.0")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    proc = subprocess.run(probe_command(sys.executable), capture_output=True, text=True, env=env, cwd=str(tmp_path),
                          check=True)
    assert "only-on-pythonpath" not in parse_probe(proc.stdout).dists


def test_probe_script_reads_requires_direct_url_and_skips_pip_leftovers(tmp_path):
    write_dist(tmp_path, "Foo_Bar", "2.0", requires=["baz>=1", "qux; extra == 'x'"], extras=["X"],
               direct_url={"url": "https://h/r.git", "vcs_info": {"vcs": "git", "commit_id": "a" * 40}})
    write_dist(tmp_path, "torch", "2.12.0+rocm7.15.0a20260720")
    write_dist(tmp_path, "torch", "2.12.0+cpu", dirname="~orch-2.12.0+cpu.dist-info")
    probe = parse_probe(run_script(tmp_path))
    dist = probe.dists["foo-bar"]
    assert (dist.name, dist.version) == ("Foo_Bar", "2.0")
    assert dist.requires == ["baz>=1", "qux; extra == 'x'"]
    assert dist.provides_extra == {"x"}
    assert dist.direct_url["vcs_info"]["commit_id"] == "a" * 40
    assert dist.stamp is not None and dist.path.endswith("Foo_Bar-2.0.dist-info")
    assert probe.dists["torch"].version == "2.12.0+rocm7.15.0a20260720"
    assert probe.versions()["torch"] == ("torch", "2.12.0+rocm7.15.0a20260720")


def test_first_distribution_on_sys_path_wins():
    out = "%s\n%s\n" % (PROBE_MARKER, json.dumps({"dists": [["Torch", "2.0", None, None, "/a", 1],
                                                            ["torch", "1.0", None, None, "/b", 2]]}))
    assert parse_probe(out).dists["torch"].version == "2.0"


def test_reinstalled_compares_dist_info_directories():
    def probe(stamp, version="1.0"):
        return parse_probe("%s\n%s" % (PROBE_MARKER, json.dumps(
            {"dists": [["a", version, [], None, "/s/a-1.0.dist-info", stamp], ["b", "1", [], None, "/s/b", 5]]})))
    assert probe(1).reinstalled(probe(2)) == ["a"]
    assert probe(1).reinstalled(probe(1)) == []
    assert probe(1).reinstalled(probe(2, "2.0")) == []  # a version change is an upgrade, not a reinstall


@pytest.mark.parametrize("out, message", [
    ("", "printed no result"),
    ("noise\n%s\n" % PROBE_MARKER, "empty result"),
    ("%s\n{not json\n" % PROBE_MARKER, "invalid JSON"),
    ("%s\n{}\n" % PROBE_MARKER, "no distribution list"),
])
def test_bad_probe_output_is_explained(out, message):
    with pytest.raises(ProbeError, match=message):
        parse_probe(out)


def test_noise_before_the_marker_is_ignored():
    out = "sitecustomize says hi\n%s\n%s\n" % (PROBE_MARKER, json.dumps({"dists": [["pip", "23.2.1"]]}))
    assert parse_probe(out).dists["pip"].version == "23.2.1"


def test_probe_agrees_with_importlib_metadata_on_a_real_environment():
    proc = subprocess.run(probe_command(sys.executable), capture_output=True, text=True, check=True)
    probe = parse_probe(proc.stdout)
    code = ("import json, importlib.metadata as m\nseen = {}\n"
            "for d in m.distributions():\n"
            "    n = d.metadata['Name']\n"
            "    k = n.lower().replace('_', '-').replace('.', '-')\n"
            "    if n and k not in seen: seen[k] = [d.version, sorted(d.requires or [])]\n"
            "print(json.dumps(seen))")
    expected = json.loads(subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True,
                                         check=True).stdout)
    got = dict((k, [d.version, sorted(d.requires)]) for k, d in probe.dists.items())
    assert got == expected and len(got) > 10


def test_only_the_header_block_is_read(tmp_path):
    info = tmp_path / "fancy-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_bytes(
        b"Metadata-Version: 2.1\r\nName: fancy\r\nVersion: 1.0\r\nRequires-Dist: real-dep (>=1)\r\n"
        b"Summary: a summary that is\r\n  folded over two lines\r\nProvides-Extra: cli\r\n\r\n"
        b"# Fancy\r\n\r\nRequires-Dist: not-a-header-but-readme-text\r\n" + b"x" * 100000 + b"\r\n")
    probe = parse_probe(run_script(tmp_path))
    dist = probe.dists["fancy"]
    assert dist.requires == ["real-dep (>=1)"]
    assert dist.provides_extra == {"cli"}


def test_egg_info_directories_and_files_are_found(tmp_path):
    egg = tmp_path / "legacy_pkg.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: legacy-pkg\nVersion: 0.9\n")
    (egg / "requires.txt").write_text("six>=1.0\n\n[cli]\nclick\n")
    (tmp_path / "single_file-2.0-py3.12.egg-info").write_text("Metadata-Version: 1.1\nName: single-file\nVersion: 2.0\n")
    probe = parse_probe(run_script(tmp_path))
    assert probe.dists["legacy-pkg"].version == "0.9"
    assert probe.dists["legacy-pkg"].requires == ["six>=1.0", 'click ; extra == "cli"']  # pip's own spelling
    assert probe.dists["single-file"].version == "2.0"


def test_egg_info_extras_come_from_requires_txt_sections_like_pip(tmp_path):
    egg = tmp_path / "legacy_pkg.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: legacy-pkg\nVersion: 0.9\n")
    (egg / "requires.txt").write_text("six>=1.0\n\n[cli]\nclick\n\n[gpu:python_version >= '3']\ncupy\n\n[empty]\n")
    dist = parse_probe(run_script(tmp_path)).dists["legacy-pkg"]
    # pip adds every section that holds a requirement as Provides-Extra; the extra is not "undeclared"
    assert dist.provides_extra == {"cli", "gpu"}


def test_name_and_version_come_from_the_dist_info_directory_name_like_pip(tmp_path):
    write_dist(tmp_path, "alpha", "2.0", dirname="alpha-1.0.dist-info")   # METADATA says 2.0, pip says 1.0
    write_dist(tmp_path, "other-name", "3.0", dirname="beta-3.0.dist-info")
    probe = parse_probe(run_script(tmp_path))
    assert probe.dists["alpha"].version == "1.0"
    assert "beta" in probe.dists and "other-name" not in probe.dists


def test_of_two_dist_info_directories_of_one_project_the_first_in_directory_order_wins(tmp_path):
    write_dist(tmp_path, "dup", "1.0")
    write_dist(tmp_path, "dup", "2.0")
    first = next(n for n in os.listdir(str(tmp_path)) if n.startswith("dup-"))   # importlib.metadata's order
    assert parse_probe(run_script(tmp_path)).dists["dup"].version == first[len("dup-"):-len(".dist-info")]
    from importlib.metadata import distributions
    assert [d.version for d in distributions(path=[str(tmp_path)]) if d.metadata["Name"] == "dup"][0] == \
        first[len("dup-"):-len(".dist-info")]


def test_probe_reports_the_tag_facts_of_the_interpreter():
    tags = parse_probe(subprocess.run(probe_command(sys.executable), capture_output=True, text=True,
                                      check=True).stdout).data["tags"]
    assert tags["python"] == list(sys.version_info[:2]) and tags["impl"] == "cp"
    assert tags["abi"] == "cp%d%d" % sys.version_info[:2] and tags["platform"].startswith("linux_")


def test_metadata_spelling_is_kept_for_display_where_it_agrees_with_the_directory(tmp_path):
    write_dist(tmp_path, "Cuda-App", "1.0", dirname="cuda_app-1.0.dist-info")
    dist = parse_probe(run_script(tmp_path)).dists["cuda-app"]
    assert (dist.name, dist.version) == ("Cuda-App", "1.0")


# ---- the snapshot: the probe's result for later tasks, while nothing it read has changed ----------

def snapshot_venv(tmp_path, age=10):
    """A venv-like directory (pyvenv.cfg, site-packages with two distributions), every mtime `age` seconds old."""
    venv = tmp_path / "venv"
    site = venv / "site"
    site.mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    write_dist(site, "alpha", "1.0", requires=["beta>=1"])
    write_dist(site, "beta", "2.0")
    (site / "extra.pth").write_text(str(tmp_path / "nowhere") + "\n")
    backdate(site, age)
    return str(venv), site


def backdate(path, age):
    when = time.time() - age
    for root, dirs, files in os.walk(str(path)):
        for name in dirs + files:
            os.utime(os.path.join(root, name), (when, when))
    os.utime(str(path), (when, when))


def probe_data(site):
    return probe_payload(run_script(site))


def test_a_snapshot_is_stored_and_read_back_while_nothing_changed(tmp_path):
    venv, site = snapshot_venv(tmp_path)
    data = probe_data(site)
    read = set(k[0] for k in data["keys"])
    assert {str(site), str(site / "extra.pth"), str(site / "alpha-1.0.dist-info" / "METADATA")} <= read
    assert save_snapshot(venv, sys.executable, data, time.time()) == "saved"
    mode = os.stat(os.path.join(venv, SNAPSHOT_NAME)).st_mode
    assert stat.S_IMODE(mode) == 0o600
    loaded, why = load_snapshot(venv, sys.executable)
    assert why is None and probe_from_data(loaded).dists["alpha"].requires == ["beta>=1"]


@pytest.mark.parametrize("change", ["install", "remove", "edit_metadata", "add_direct_url", "edit_pth"])
def test_any_change_to_what_the_probe_read_invalidates_the_snapshot(tmp_path, change):
    venv, site = snapshot_venv(tmp_path)
    assert save_snapshot(venv, sys.executable, probe_data(site), time.time()) == "saved"
    info = site / "beta-2.0.dist-info"
    if change == "install":
        write_dist(site, "gamma", "1.0")
    elif change == "remove":
        shutil.rmtree(str(info))
    elif change == "edit_metadata":   # same size: only the stat's times tell
        text = (info / "METADATA").read_text()
        (info / "METADATA").write_text(text.replace("Version: 2.0", "Version: 3.0"))
    elif change == "add_direct_url":
        (info / "direct_url.json").write_text('{"url": "file:///x", "dir_info": {"editable": true}}')
    else:
        (site / "extra.pth").write_text(str(tmp_path / "elsewhere") + "\n")
    loaded, why = load_snapshot(venv, sys.executable)
    assert loaded is None and why.startswith("stale")
    # the next probe sees the change (and, its files being fresh, is not stored: a change in the same tick is invisible)
    fresh = probe_data(site)
    assert save_snapshot(venv, sys.executable, fresh, time.time()) == "racy"


def test_a_fresh_change_is_not_stored_but_an_old_one_is(tmp_path):
    venv, site = snapshot_venv(tmp_path, age=0)
    assert save_snapshot(venv, sys.executable, probe_data(site), time.time()) == "racy"
    assert not os.path.exists(os.path.join(venv, SNAPSHOT_NAME))
    backdate(site, RACY_SECONDS + 1)
    assert save_snapshot(venv, sys.executable, probe_data(site), time.time()) == "saved"


def test_a_snapshot_of_another_interpreter_probe_format_or_owner_is_not_trusted(tmp_path):
    venv, site = snapshot_venv(tmp_path)
    assert save_snapshot(venv, sys.executable, probe_data(site), time.time()) == "saved"
    other = tmp_path / "python-other"
    other.write_text("")
    assert load_snapshot(venv, str(other))[1].startswith("stale")
    path = os.path.join(venv, SNAPSHOT_NAME)
    stored = json.loads(open(path).read())
    stored["key"]["format"] = "0" * 16
    with open(path, "w") as handle:
        json.dump(stored, handle)
    assert load_snapshot(venv, sys.executable)[1].startswith("stale")
    os.chmod(path, 0o666)
    assert load_snapshot(venv, sys.executable)[1].startswith("not trusted")
    os.remove(path)
    os.symlink(str(tmp_path / "elsewhere.json"), path)
    assert load_snapshot(venv, sys.executable)[1].startswith("not trusted")
    drop_snapshot(venv)
    assert load_snapshot(venv, sys.executable) == (None, "none")


def test_a_chmod_of_the_shared_interpreter_keeps_the_snapshot_but_a_new_binary_does_not(tmp_path):
    venv, site = snapshot_venv(tmp_path)
    python = tmp_path / "python3"
    python.write_bytes(b"#!/bin/sh\n")
    assert save_snapshot(venv, str(python), probe_data(site), time.time()) == "saved"
    os.chmod(str(python), 0o755)   # its ctime moves; what it runs does not
    assert load_snapshot(venv, str(python))[1] is None
    python.write_bytes(b"#!/bin/sh\necho other\n")
    assert load_snapshot(venv, str(python))[1].startswith("stale")


# ---- odd installed metadata, read as pip 26.3's own metadata backend reads it -----------------------

PIP_VIEW = r'''
import json, sys
from pip._internal.metadata.importlib import Environment
out = {}
for dist in Environment.from_paths([sys.argv[1]]).iter_all_distributions():
    extras = sorted(dist.iter_provided_extras())
    out[dist.canonical_name] = [str(dist.version), sorted(str(r) for r in dist.iter_dependencies(extras)), extras]
print(json.dumps(out))
'''


def odd_site(site):
    """Installed metadata pip reads in its own way (each a case the probe once read differently)."""
    info = site / "nometa-1.0.dist-info"              # no METADATA at all: pip still sees nometa 1.0
    info.mkdir(parents=True)
    (info / "RECORD").write_text("")
    info = site / "pkginfo-2.0.dist-info"             # PKG-INFO instead of METADATA
    info.mkdir()
    (info / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: pkginfo\nVersion: 2.0\nRequires-Dist: six\n")
    info = write_dist(site, "reqtxt", "1.0")          # a dist-info whose requires.txt pip reads (no Requires-Dist)
    (info / "requires.txt").write_text("inq==0.3.4\n[CLI_Tool:python_version >= '3']\nclick\n")
    # two directories of one project: importlib.metadata yields a directory's entries grouped by the project of the
    # directory name (groups in order of first appearance), so grpN.dist-info (METADATA: twinN 1.0) comes before
    # twinN-2.0.dist-info where grpN-9.dist-info is listed first (40 triples: some are, in any file system's order)
    for index in range(40):
        write_dist(site, "grp%d" % index, "9", dirname="grp%d-9.dist-info" % index)
        write_dist(site, "twin%d" % index, "2.0", dirname="twin%d-2.0.dist-info" % index)
        write_dist(site, "twin%d" % index, "1.0", dirname="grp%d.dist-info" % index)
    write_dist(site, "emptyver", "3.0", dirname="emptyver-.dist-info")  # an empty version: METADATA's
    egg = site / "eggx-1.0-py3.12.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: eggx\nVersion: 1.0\nProvides-Extra: other\n")
    (egg / "requires.txt").write_text("[cli]\ninq==0.3.4\n")   # cli is not an extra: PKG-INFO declares others


def test_odd_installed_metadata_is_read_exactly_as_pip_reads_it(tmp_path):
    site = tmp_path / "site"
    odd_site(site)
    linked = tmp_path / "src" / "linked"                  # a legacy develop install: site/linked.egg-link -> there
    linked.mkdir(parents=True)
    (linked / "linked.egg-info").mkdir()
    (linked / "linked.egg-info" / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: linked\nVersion: 0.5\n")
    (site / "linked.egg-link").write_text(str(linked) + "\n.\n")
    pip_view = json.loads(subprocess.run([sys.executable, "-c", PIP_VIEW, str(site)], capture_output=True, text=True,
                                         check=True).stdout)
    probe = parse_probe(run_script(site))
    ours = {}
    for key in pip_view:
        dist = probe.dists[key]
        extras = sorted(dist.provides_extra)
        deps = []
        for text in dist.requires:   # pip's iter_dependencies(extras) on the probe's requirements
            req = Requirement(text)
            if req.marker is None or (not extras and req.marker.evaluate({"extra": ""})) or \
                    any(req.marker.evaluate({"extra": e}) for e in extras):
                deps.append(str(req))
        ours[key] = [dist.version, sorted(deps), extras]
    assert ours == pip_view
    listing = os.listdir(str(site))
    regrouped = [i for i in range(40) if listing.index("grp%d-9.dist-info" % i) < listing.index("twin%d-2.0.dist-info" % i)
                 < listing.index("grp%d.dist-info" % i)]
    assert regrouped, "no grpN-9, twinN-2.0, grpN listing order: the grouping is not exercised"
    assert all(pip_view["twin%d" % i][0] == "1.0" for i in regrouped)   # not the first in directory order
    assert pip_view["nometa"][0] == "1.0" and pip_view["emptyver"][0] == "3.0" and pip_view["pkginfo"][1] == ["six"]
    assert pip_view["reqtxt"][1] == ['click; python_version >= "3" and extra == "cli-tool"', "inq==0.3.4"]
    assert "linked" in pip_view and pip_view["eggx"][2] == ["other"]
