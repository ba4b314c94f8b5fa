# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""tests/prerequisites.sh, the system check `make test` runs first: the real script under bash,
with `id`, `apt-get` and `apt-cache` replaced by recording stand-ins (a unit test must not
install packages on the machine). The probes and the package list are the Makefile's own."""

import os
import re
import shutil
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
SCRIPT = os.path.join(ROOT, 'tests', 'prerequisites.sh')

FAKE_ID = '#!/bin/sh\necho {uid}\n'
# apt-get records its arguments, its stdin and DEBIAN_FRONTEND; "installing" a package creates
# the probe file named in $PROVIDES (package=path ...), as a real install would.
FAKE_APT_GET = r'''#!/bin/bash
{ printf '%s|' "$*" "DEBIAN_FRONTEND=${DEBIAN_FRONTEND:-}"; [ -t 0 ] && echo tty || { read -r -t 1 line; echo "stdin=${line:-empty}"; }; } >>"$LOG"
[ "$1" = install ] || exit 0
for pkg in "$@"; do
  for pair in $PROVIDES; do
    [ "${pair%%=*}" = "$pkg" ] && touch "${pair#*=}"
  done
done
exit 0
'''
FAKE_APT_CACHE = r'''#!/bin/bash
# policy PACKAGE: a candidate for the packages in $CANDIDATES
for pkg in $CANDIDATES; do
  if [ "$pkg" = "$2" ]; then printf '%s:\n  Installed: (none)\n  Candidate: 3.12.3-1\n' "$2"; exit 0; fi
done
printf '%s:\n  Installed: (none)\n  Candidate: (none)\n' "$2"
'''


def makefile_packages(variable='TEST_SYSTEM_PACKAGES'):
    """A package list of the Makefile, its $(VARIABLE) references expanded."""
    with open(os.path.join(ROOT, 'Makefile')) as handle:
        text = handle.read()
    match = re.search(r'^%s := ((?:.*\\\n)*.*)$' % variable, text, re.M)
    entries = []
    for word in match.group(1).replace('\\\n', ' ').split():
        reference = re.match(r'^\$\((\w+)\)$', word)
        entries += makefile_packages(reference.group(1)) if reference else [word]
    return entries


@pytest.fixture
def fake(tmpdir):
    def run(entries, uid=0, py312='', py310='', provides='', candidates='', apt=True, real_path=False, extra=None):
        bindir = tmpdir.join('bin').ensure(dir=True)
        bindir.join('id').write(FAKE_ID.format(uid=uid))
        bindir.join('id').chmod(0o755)
        if apt:
            for name, body in (('apt-get', FAKE_APT_GET), ('apt-cache', FAKE_APT_CACHE)):
                bindir.join(name).write(body)
                bindir.join(name).chmod(0o755)
        # Only these tools: the machine's own apt-get must never be reachable from a test.
        tools = tmpdir.join('tools').ensure(dir=True)
        for tool in ('bash', 'grep', 'touch', 'cat', 'git'):
            if not tools.join(tool).check():
                os.symlink(shutil.which(tool), str(tools.join(tool)))
        log = tmpdir.join('apt.log')
        if real_path:   # the stand-ins first, so the real apt-get is shadowed
            assert apt
            tools = os.environ['PATH']
        env = {'PATH': '%s:%s' % (bindir, tools), 'PY312': py312, 'PY310': py310, 'LOG': str(log),
               'PROVIDES': provides, 'CANDIDATES': candidates}
        env.update(extra or {})
        proc = subprocess.run(['bash', SCRIPT] + entries, env=env, capture_output=True, text=True, timeout=60,
                              check=False)
        calls = log.read().splitlines() if log.check() else []
        return proc, calls
    return run


def python_without_venv(tmpdir):
    """A python whose `import ensurepip, venv` fails, as a distribution python without python3.X-venv."""
    path = tmpdir.join('python-no-venv')
    path.write('#!/bin/sh\nexit 1\n')
    path.chmod(0o755)
    return str(path)


def test_the_makefile_list_covers_what_ci_installed_before():
    packages = [entry.split(':', 1)[0] for entry in makefile_packages()]
    for package in ('shellcheck', 'git', 'make', 'g++', 'openssh-server', 'openssh-client', 'util-linux',
                    'environment-modules', 'ca-certificates'):
        assert package in packages
    assert all(':' in entry for entry in makefile_packages())


def test_on_this_machine_everything_is_there_and_nothing_is_installed(fake, tmpdir):
    """The real probes of the Makefile: make test's own precondition on this machine."""
    proc, calls = fake(makefile_packages(), py312='/bin/true', py310='/bin/true', real_path=True)
    assert proc.returncode == 0, proc.stderr
    assert calls == [] and proc.stderr == ''


def test_not_root_stops_with_the_exact_apt_get_line(fake, tmpdir):
    proc, calls = fake(['openssh-server:%s' % tmpdir.join('sshd'), 'git:git', 'g++:/nonexistent/g++'],
                       uid=1000, py312='/bin/true', py310='/bin/true')
    assert proc.returncode == 1
    assert calls == []
    assert 'missing system packages: openssh-server g++' in proc.stderr
    assert '\n    apt-get install -y --no-install-recommends openssh-server g++\n' in proc.stderr


def test_root_installs_what_is_missing_without_a_terminal(fake, tmpdir):
    sshd = tmpdir.join('sshd')
    proc, calls = fake(['openssh-server:%s' % sshd, 'git:git'], py312='/bin/true', py310='/bin/true',
                       provides='openssh-server=%s' % sshd)
    assert proc.returncode == 0, proc.stderr
    assert calls == ['update -qq|DEBIAN_FRONTEND=noninteractive|stdin=empty',
                     'install -y --no-install-recommends openssh-server -qq|DEBIAN_FRONTEND=noninteractive|stdin=empty']
    assert sshd.check()


def test_root_fails_when_the_install_did_not_provide_it(fake, tmpdir):
    proc, calls = fake(['openssh-server:%s' % tmpdir.join('sshd')], py312='/bin/true', py310='/bin/true')
    assert proc.returncode == 1
    assert 'still missing after apt-get install: openssh-server' in proc.stderr
    assert len(calls) == 2


def test_root_without_apt_gets_the_list_and_stops(fake, tmpdir):
    proc, calls = fake(['openssh-server:%s' % tmpdir.join('sshd')], py312='/bin/true', py310='/bin/true', apt=False)
    assert proc.returncode == 1
    assert 'apt-get install -y --no-install-recommends openssh-server' in proc.stderr


def test_a_python_without_its_venv_module_needs_the_venv_package(fake, tmpdir):
    proc, _calls = fake(['git:git'], uid=1000, py312=python_without_venv(tmpdir), py310='/bin/true')
    assert proc.returncode == 1
    assert 'apt-get install -y --no-install-recommends python3.12-venv' in proc.stderr


def test_a_missing_python_comes_from_apt_when_apt_has_it(fake, tmpdir):
    proc, calls = fake(['git:git'], py312='', py310='/bin/true', candidates='python3.12')
    assert proc.returncode == 0, proc.stderr
    assert calls[-1].startswith('install -y --no-install-recommends python3.12 python3.12-venv -qq|')


def test_a_missing_python_apt_does_not_have_is_explained(fake, tmpdir):
    proc, calls = fake(['git:git'], py312='/bin/true', py310='', candidates='python3.12')
    assert proc.returncode == 1
    assert 'no Python 3.10 found, and apt has no python3.10 package' in proc.stderr
    assert 'make test PY310=/path/to/python3.10' in proc.stderr
    assert [c for c in calls if c.startswith('install')] == []


# The entry points that run part of the tests check their own system packages first, as make test does: on a fresh
# machine `make test-offline` once ended in a FileNotFoundError for ssh-keygen in every test.
GOALS = {
    'test-offline': ('SCENARIO_SYSTEM_PACKAGES', '3.12 3.10'),
    'test-faults': ('SCENARIO_SYSTEM_PACKAGES', '3.12 3.10'),
    'molecule': ('SCENARIO_SYSTEM_PACKAGES', '3.12'),
    'test-fleet': ('SCENARIO_SYSTEM_PACKAGES', '3.12'),
    'functional': ('TEST_SYSTEM_PACKAGES', '3.12 3.10'),
    'bench': ('WORLD_SYSTEM_PACKAGES', '3.12'),
    'bench-fleet': ('WORLD_SYSTEM_PACKAGES', '3.12'),
    'demo': ('WORLD_SYSTEM_PACKAGES', '3.12'),
}


def test_the_partial_lists_are_parts_of_make_test_s():
    everything = makefile_packages()
    for variable in ('WORLD_SYSTEM_PACKAGES', 'SCENARIO_SYSTEM_PACKAGES'):
        assert set(makefile_packages(variable)) <= set(everything), variable
    scenario = [entry.split(':', 1)[0] for entry in makefile_packages('SCENARIO_SYSTEM_PACKAGES')]
    for package in ('openssh-server', 'openssh-client', 'util-linux', 'git', 'make', 'g++', 'python3'):
        assert package in scenario
    world = [entry.split(':', 1)[0] for entry in makefile_packages('WORLD_SYSTEM_PACKAGES')]
    assert {'git', 'make', 'g++', 'ca-certificates'} <= set(world)


@pytest.mark.parametrize('goal', sorted(GOALS))
def test_each_goal_checks_its_packages_before_anything_else(goal):
    """What make would run for the goal, first line first (make -n): the check of that goal's packages."""
    env = dict(os.environ, MAKEFLAGS='', MAKELEVEL='')
    proc = subprocess.run(['make', '-n', '--no-print-directory', goal], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    first = [line for line in proc.stdout.splitlines() if line.strip()][0]
    variable, pythons = GOALS[goal]
    assert 'tests/prerequisites.sh ' in first, first
    assert "PREREQUISITES_PYTHONS='%s'" % pythons in first, first
    assert "PREREQUISITES_GOAL='make %s'" % goal in first, first
    assert first.split('tests/prerequisites.sh ', 1)[1].split() == makefile_packages(variable)


def test_not_root_a_fresh_machine_gets_the_apt_get_line_of_its_goal(fake, tmpdir):
    """test-offline's own list on a machine without ssh-keygen, make or g++ (this fixture's PATH has neither), not
    root: it stops naming the goal and prints the apt-get line, and apt is not called."""
    entries = makefile_packages('SCENARIO_SYSTEM_PACKAGES')
    proc, calls = fake(entries, uid=1000, py312='/bin/true', py310='/bin/true',
                       extra={'PREREQUISITES_GOAL': 'make test-offline', 'PREREQUISITES_PYTHONS': '3.12 3.10'})
    assert proc.returncode == 1
    assert calls == []
    missing = re.search(r'make test-offline: missing system packages: (.*)', proc.stderr).group(1).split()
    assert 'openssh-client' in missing and 'make' in missing and 'g++' in missing, proc.stderr
    assert 'then run make test-offline again' in proc.stderr
    assert '    apt-get install -y --no-install-recommends %s\n' % ' '.join(missing) in proc.stderr


def test_as_root_a_goal_needs_only_its_own_pythons(fake, tmpdir):
    """molecule needs Python 3.12 only: without a 3.10 it neither fails nor asks apt for one."""
    proc, calls = fake(['git:git'], py312='/bin/true', py310='', extra={'PREREQUISITES_PYTHONS': '3.12'})
    assert proc.returncode == 0, proc.stderr
    assert calls == [] and proc.stderr == ''
