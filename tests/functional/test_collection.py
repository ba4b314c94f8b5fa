"""The collection as users meet it: the playbook's tags, its syntax on both supported
controllers, and the built tarball installed into an empty collections path."""
import glob
import os
import re
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STAGES = ("venv torch flash_attn te torchtune torchao pydeps grouped_gemm causal_conv1d mamba "
          "primus aiter turbo boto cleanup manifest torchrec").split()
ROLE_ORDER = ("primus preflight venv torch flash_attn te torchtune torchao pydeps grouped_gemm causal_conv1d "
              "mamba primus_repo aiter turbo boto cleanup manifest torchrec verify").split()


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
    match = re.search(r"TASK TAGS: \[([^\]]*)\]", output)
    assert match, output
    return {t.strip() for t in match.group(1).split(",")}


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
def test_roles_follow_the_seed_stage_order():
    with open(os.path.join(REPO, "playbooks", "primus.yml")) as handle:
        roles = re.findall(r"role: primus\.trainenv\.(\w+)", handle.read())
    assert roles == ROLE_ORDER


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


@pytest.mark.functional
def test_built_collection_installs_and_lists_the_same_tags(tmp_path):
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
    out = run([os.path.join(bindir, "ansible-playbook"), "primus.trainenv.primus", "--list-tags"],
              cwd=str(elsewhere), env=clean_env(ANSIBLE_COLLECTIONS_PATH=str(dest)))
    assert listed_tags(out) == listed_tags(run([os.path.join(bindir, "ansible-playbook"), "playbooks/primus.yml", "--list-tags"]))


@pytest.mark.functional
def test_make_controller_on_a_machine_with_only_python310_without_ensurepip(tmp_path, python310_no_ensurepip):
    """The README's set-up on Ubuntu 22.04 without python3.10-venv and without root: no Python 3.12
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
