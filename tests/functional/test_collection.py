"""The collection as users meet it: the playbook's tags, its syntax on both supported
controllers, and the built tarball installed into an empty collections path."""
import glob
import os
import re
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import sys  # noqa: E402
sys.path.insert(0, os.path.join(REPO, "tests"))
import stage_registry  # noqa: E402

STAGES = stage_registry.views()["order"]


def controllers():
    dirs = os.environ.get("PRIMUS_TEST_CONTROLLERS", os.path.join(REPO, ".venv", "bin")).split()
    return [d for d in dirs if os.path.exists(os.path.join(d, "ansible-playbook"))]


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRIMUS_", "ANSIBLE_"))}
    env.update(extra)
    return env


def run(cmd, cwd=REPO, env=None):
    proc = subprocess.run(cmd, cwd=cwd, env=env or clean_env(), capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.returncode == 0, "%s failed (rc=%d):\n%s\n%s" % (cmd, proc.returncode, proc.stdout, proc.stderr)
    return proc.stdout


def listed_tags(output):
    """The task tags of every play of the listing."""
    found = re.findall(r"TASK TAGS: \[([^\]]*)\]", output)
    assert found, output
    return {t.strip() for match in found for t in match.split(",") if t.strip()}


def core_version(bindir):
    out = run([os.path.join(bindir, "ansible-playbook"), "--version"])
    return re.search(r"core ([0-9.]+)", out).group(1)


@pytest.mark.functional
def test_both_supported_controllers_are_tested():
    versions = sorted(core_version(d).rsplit(".", 1)[0] for d in controllers())
    assert versions == ["2.17", "2.21"], "expected ansible-core 2.17 and 2.21 controllers, found %s" % versions


@pytest.mark.functional
@pytest.mark.parametrize("bindir", controllers())
def test_list_tags_without_primus_base(bindir):
    out = run([os.path.join(bindir, "ansible-playbook"), "playbooks/primus.yml", "--list-tags"])
    tags = listed_tags(out)
    assert set(STAGES) <= tags, sorted(set(STAGES) - tags)
    assert {"preflight", "verify", "always", "never"} <= tags


@pytest.mark.functional
@pytest.mark.parametrize("bindir", controllers())
def test_syntax_check(bindir):
    out = run([os.path.join(bindir, "ansible-playbook"), "playbooks/primus.yml", "--syntax-check"])
    assert "playbook: playbooks/primus.yml" in out


@pytest.mark.functional
def test_no_become_anywhere():
    offenders = []
    for pattern in ("roles/**/*.yml", "playbooks/**/*.yml", "molecule/**/*.yml", "inventory/**/*.yml"):
        for path in glob.glob(os.path.join(REPO, pattern), recursive=True):
            with open(path) as handle:
                for number, line in enumerate(handle, 1):
                    if re.match(r"\s*become(_user|_method)?\s*:", line) and not re.match(r"\s*become:\s*false\s*$", line):
                        offenders.append("%s:%d: %s" % (os.path.relpath(path, REPO), number, line.strip()))
    assert not offenders, offenders


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The built tarball installed into an empty collections path: (collections dir, an empty working dir)."""
    tmp_path = tmp_path_factory.mktemp("installed")
    bindir = os.path.join(REPO, ".venv", "bin")
    run([os.path.join(bindir, "ansible-galaxy"), "collection", "build", "--output-path", str(tmp_path), REPO])
    tarballs = glob.glob(str(tmp_path / "primus-trainenv-*.tar.gz"))
    assert len(tarballs) == 1, tarballs
    listing = run(["tar", "-tzf", tarballs[0]])
    assert "roles/primus/vars/releases/v26.5.yml" in listing
    assert ".collections" not in listing and ".venv" not in listing
    dest = tmp_path / "collections"
    # Outside the clone: its ansible.cfg would show the clone itself as already installed.
    run([os.path.join(bindir, "ansible-galaxy"), "collection", "install", "-p", str(dest), tarballs[0]], cwd=str(tmp_path))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    return dest, elsewhere


@pytest.mark.functional
def test_built_collection_installs_and_lists_the_same_tags(installed):
    dest, elsewhere = installed
    bindir = os.path.join(REPO, ".venv", "bin")
    out = run([os.path.join(bindir, "ansible-playbook"), "primus.trainenv.primus", "--list-tags"],
              cwd=str(elsewhere), env=clean_env(ANSIBLE_COLLECTIONS_PATH=str(dest)))
    assert listed_tags(out) == listed_tags(run([os.path.join(bindir, "ansible-playbook"), "playbooks/primus.yml", "--list-tags"]))


@pytest.mark.functional
def test_installed_collection_runs_preflight_on_localhost_without_an_inventory(installed, tmp_path):
    """docs/install.md: `ansible-playbook primus.trainenv.primus` with no inventory builds on localhost, rather than
    ending green with "no hosts matched". No -i, no ansible.cfg: the default inventory does not exist here."""
    dest, elsewhere = installed
    assert not os.path.exists("/etc/ansible/hosts") or not open("/etc/ansible/hosts").read().strip()
    base = tmp_path / "envs" / "primus-env"
    proc = subprocess.run([os.path.join(REPO, ".venv", "bin", "ansible-playbook"), "primus.trainenv.primus",
                           "--tags", "preflight", "-e", "primus_min_free_gib=1"],
                          cwd=str(elsewhere), env=clean_env(ANSIBLE_COLLECTIONS_PATH=str(dest), PRIMUS_BASE=str(base),
                                                            ANSIBLE_NOCOLOR="1"),
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    recap = re.search(r"^localhost\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=0\s+failed=0", proc.stdout, re.M)
    assert recap and int(recap.group(1)) > 20 and recap.group(2) == "0", proc.stdout[-3000:]
    assert "into %s" % base in proc.stdout, "the plan was shown"
    assert "no hosts matched" not in proc.stdout
    assert not (tmp_path / "envs").exists(), "--tags preflight creates nothing (and takes no lock)"
    # Ansible's warnings are only the two of an inventory-less run, which its configuration alone silences (docs/install.md);
    # none comes from the playbook (a duplicate localhost entry, a deprecation from a filter's deep copy).
    assert warnings(proc.stderr) == [ANSIBLE_NO_INVENTORY, ANSIBLE_EMPTY_HOSTS, NO_GPU], proc.stderr


ANSIBLE_NO_INVENTORY = "[WARNING]: No inventory was parsed, only implicit localhost is available"
ANSIBLE_EMPTY_HOSTS = ("[WARNING]: provided hosts list is empty, only localhost is available. Note that the implicit "
                       "localhost does not match 'all'")
NO_GPU = ("[WARNING]: no GPU detected; defaulting PYTORCH_ROCM_ARCH=gfx942;gfx950 (override with primus_arch_override "
          "or by exporting PYTORCH_ROCM_ARCH)")


def warnings(stderr):
    """Each warning of Ansible's stderr as one line (a long one is wrapped at the terminal's width)."""
    found, current = [], None
    for line in stderr.splitlines():
        if line.startswith("["):
            current = line.strip()
            found.append(current)
        elif current is not None and line.strip():
            found[-1] += " " + line.strip()
    return [w for w in found if w.startswith(("[WARNING]", "[DEPRECATION WARNING]"))]


@pytest.mark.functional
def test_installed_collection_without_an_inventory_warns_of_nothing_with_the_readmes_two_settings(installed, tmp_path):
    """docs/install.md: ANSIBLE_LOCALHOST_WARNING=False and ANSIBLE_INVENTORY_UNPARSED_WARNING=False silence the two warnings
    Ansible itself prints for a run without an inventory; the playbook adds none."""
    dest, elsewhere = installed
    proc = subprocess.run([os.path.join(REPO, ".venv", "bin", "ansible-playbook"), "primus.trainenv.primus",
                           "--tags", "preflight", "-e", "primus_min_free_gib=1", "-e", "primus_arch_override=gfx942"],
                          cwd=str(elsewhere), env=clean_env(ANSIBLE_COLLECTIONS_PATH=str(dest), ANSIBLE_NOCOLOR="1",
                                                            PRIMUS_BASE=str(tmp_path / "base"),
                                                            ANSIBLE_LOCALHOST_WARNING="False",
                                                            ANSIBLE_INVENTORY_UNPARSED_WARNING="False"),
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert re.search(r"^localhost\s+: ok=\d+\s+changed=0\s+unreachable=0\s+failed=0", proc.stdout, re.M), proc.stdout[-2000:]
    assert warnings(proc.stderr) == [], proc.stderr


@pytest.mark.functional
def test_an_inventory_without_hosts_fails_instead_of_ending_green(installed, tmp_path):
    dest, elsewhere = installed
    empty = tmp_path / "fleet.yml"
    empty.write_text("all:\n  children:\n    gpu_nodes:\n      hosts: {}\n")
    proc = subprocess.run([os.path.join(REPO, ".venv", "bin", "ansible-playbook"), "-i", str(empty),
                           "primus.trainenv.primus", "--tags", "preflight"],
                          cwd=str(elsewhere), env=clean_env(ANSIBLE_COLLECTIONS_PATH=str(dest), ANSIBLE_NOCOLOR="1",
                                                            PRIMUS_BASE=str(tmp_path / "base")),
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert "The inventory %s holds no host, so there is nothing to build on." % empty in proc.stdout, proc.stdout[-3000:]
    assert "leave out -i to build on this machine" in proc.stdout
    assert not (tmp_path / "base").exists()


@pytest.mark.functional
def test_make_controller_on_a_machine_with_only_python310_without_ensurepip(tmp_path, python310_no_ensurepip):
    """The README's set-up (docs/install.md) on Ubuntu 22.04 without python3.10-venv and without root: no Python 3.12
    (PY312=), a 3.10 whose ensurepip and pip are missing. `make controller` makes the ansible-core 2.17
    controller anyway (a venv without pip, pip from its wheel on PyPI), and it runs the playbook."""
    assert subprocess.run([python310_no_ensurepip, "-c", "import ensurepip"], capture_output=True,
                          check=False).returncode != 0
    venv = tmp_path / "controller"
    env = {k: v for k, v in clean_env(PIP_CONFIG_FILE=os.devnull).items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    made = subprocess.run(["make", "--no-print-directory", "controller", "PY312=", "PY310=" + python310_no_ensurepip,
                           "VENV=" + str(venv)], cwd=REPO, env=env, capture_output=True, text=True, timeout=900,
                          check=False)
    assert made.returncode == 0, made.stdout + made.stderr
    assert "has no ensurepip" in made.stdout and "-m venv --without-pip" not in made.stderr
    version = run([str(venv / "bin" / "ansible-playbook"), "--version"])
    assert re.search(r"core 2\.17\.", version) and "python version = 3.10" in version, version
    assert set(STAGES) <= listed_tags(run([str(venv / "bin" / "ansible-playbook"), "playbooks/primus.yml", "--list-tags"]))
