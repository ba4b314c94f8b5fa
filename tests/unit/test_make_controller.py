# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""`make controller` on a machine whose only Python is 3.11 (a stock Debian 12, no pyenv): the real Makefile in
a copy of its files, run by the real make with a PATH that holds only bash, make, env and that python3
(issue 25). It must stop before making anything, with the exact command that gets a 3.12 from uv's PyPI wheel."""

import os
import shutil
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))


def real_python(version):
    """The real interpreter behind python<version> (a pyenv shim needs pyenv: not on the test's PATH)."""
    found = shutil.which('python' + version)
    if not found:
        return None
    proc = subprocess.run([found, '-c', 'import sys; print(sys.executable)'], capture_output=True, text=True,
                          check=False)
    return proc.stdout.strip() if proc.returncode == 0 else None


def machine(tmp_path, python3=None):
    """A copy of the Makefile and its controller requirements, and a bin directory for PATH."""
    repo, bindir = tmp_path / 'repo', tmp_path / 'bin'
    (repo / 'requirements').mkdir(parents=True)
    bindir.mkdir()
    shutil.copy(os.path.join(ROOT, 'Makefile'), str(repo / 'Makefile'))
    shutil.copy(os.path.join(ROOT, 'requirements', 'controller.txt'), str(repo / 'requirements'))
    for command in ('bash', 'make', 'env'):
        os.symlink(shutil.which(command), str(bindir / command))
    if python3:
        os.symlink(python3, str(bindir / 'python3'))
    return repo, bindir


def make_controller(repo, bindir):
    env = {'PATH': str(bindir), 'HOME': str(repo), 'PYENV_ROOT': str(repo / 'no-pyenv'), 'LANG': 'C.UTF-8'}
    return subprocess.run(['make', '--no-print-directory', 'controller'], cwd=str(repo), env=env, capture_output=True,
                          text=True, check=False)


def test_only_python_3_11_stops_with_the_command_that_makes_a_3_12_with_uv(tmp_path):
    python311 = real_python('3.11')
    if not python311:
        pytest.skip('no Python 3.11 on this machine')
    repo, bindir = machine(tmp_path, python311)
    proc = make_controller(repo, bindir)
    assert proc.returncode != 0, proc.stdout
    py, uv = str(bindir / 'python3'), str(repo / '.uv')
    assert ('Neither Python 3.12 nor 3.10 found (not in pyenv, not on PATH; python3 is %s, Python 3.11).' % py
            in proc.stderr), proc.stderr
    command = ("  %s -m venv --without-pip %s && %s tests/bootstrap_pip.py %s/bin/python 'pip==26.3' "
               "'https://pypi.org/simple' && %s/bin/pip install --quiet uv && %s/bin/uv python install 3.12 && "
               'make controller PY312="$(%s/bin/uv python find 3.12)"\n' % (py, uv, py, uv, uv, uv, uv))
    assert command in proc.stderr, proc.stderr
    assert not os.path.exists(str(repo / '.venv')) and not os.path.exists(uv), 'nothing was made'
    # The command's own steps are the Makefile's: bootstrap_pip.py is the script `make controller` uses itself.
    assert os.path.exists(os.path.join(ROOT, 'tests', 'bootstrap_pip.py'))


def test_no_python_at_all_names_the_settings(tmp_path):
    repo, bindir = machine(tmp_path)
    proc = make_controller(repo, bindir)
    assert proc.returncode != 0
    assert 'Neither Python 3.12 nor 3.10 found (not in pyenv, not on PATH).' in proc.stderr, proc.stderr
    assert 'Set PY312=/path/to/python3.12 (or PY310=/path/to/python3.10)' in proc.stderr
