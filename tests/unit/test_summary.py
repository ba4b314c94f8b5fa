# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""tests/summary.py reports what the runs reported, and fails when a suite failed or is missing.

Inputs are real: pytest's JUnit XML is written by a real pytest run over a small test module made
here (passes, a failure, a fixture error, a skip, a collection error); ansible-lint's console output
and SARIF file and ansible-test sanity's console output and per-test JUnit files were captured from
real runs over this collection (tests/unit/data/summary: a clean lint run, one with five violations,
a sanity run with pep8 and line-endings failing, and one where every test passed).
"""

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
SUMMARY = os.path.join(ROOT, 'tests', 'summary.py')
DATA = os.path.join(os.path.dirname(__file__), 'data', 'summary')

PASSING = '''
import pytest

def test_one():
    assert 1 + 1 == 2

@pytest.mark.parametrize("n", [1, 2, 3])
def test_many(n):
    assert n > 0
'''
FAILING = PASSING + '''
def test_broken():
    assert "rocm" == "cuda", "torch was replaced"

@pytest.fixture
def boom():
    raise RuntimeError("fixture blew up")

def test_with_a_broken_fixture(boom):
    pass

@pytest.mark.skip(reason="needs a GPU")
def test_skipped():
    pass
'''


REPORTS = {
    'passing': (PASSING, 0),
    'failing': (FAILING, 1),
    'collection-error': ('import no_such_module_here\n\ndef test_x():\n    pass\n', 2),
    'only-skips': ('import pytest\n\n@pytest.mark.skip(reason="x")\ndef test_x():\n    pass\n', 0),
}


@pytest.fixture(scope='module')
def reports(tmp_path_factory):
    """Real pytest runs over small test modules: {kind: path of the JUnit XML pytest wrote}."""
    base = tmp_path_factory.mktemp('junit')
    paths = {}
    for kind, (source, expected_rc) in REPORTS.items():
        work = base / kind
        work.mkdir()
        (work / ('test_%s.py' % kind.replace('-', '_'))).write_text(source)
        paths[kind] = str(base / (kind + '.xml'))
        proc = subprocess.run([sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', str(work),
                               '--junitxml=%s' % paths[kind]], capture_output=True, text=True, check=False,
                              cwd=str(work), timeout=120)
        assert proc.returncode == expected_rc, proc.stdout + proc.stderr
    return paths


def junit(out, name, reports, kind):
    shutil.copy(reports[kind], str(out.join(name + '.xml')))


def status(out, name, rc, seconds=12.5):
    out.join(name + '.status').write('rc=%d start=1764694800.250000 end=%.6f\n' % (rc, 1764694800.25 + seconds))


def lint(out, kind, rc):
    shutil.copy(os.path.join(DATA, 'lint-%s.txt' % kind), str(out.join('lint.txt')))
    shutil.copy(os.path.join(DATA, 'lint-%s.sarif' % kind), str(out.join('lint.sarif')))
    status(out, 'lint', rc, 33.0)


def sanity(out, kind, rc):
    shutil.rmtree(str(out.join('sanity')), ignore_errors=True)
    shutil.copytree(os.path.join(DATA, 'sanity-%s' % kind), str(out.join('sanity')))
    shutil.copy(os.path.join(DATA, 'sanity-%s.txt' % kind), str(out.join('sanity.txt')))
    status(out, 'sanity', rc, 92.0)


@pytest.fixture
def out(tmpdir, reports):
    """tests/output of a run where every suite passed."""
    out = tmpdir.join('out').ensure(dir=True)
    for name in ('unit', 'world', 'functional', 'molecule', 'docs'):
        junit(out, name, reports, 'passing')
        status(out, name, 0)
    lint(out, 'pass', 0)
    sanity(out, 'pass', 0)
    return out


def summary(out):
    proc = subprocess.run([sys.executable, SUMMARY, str(out)], capture_output=True, text=True, check=False, timeout=60)
    return proc.returncode, proc.stdout


def row(text, suite):
    return next(line for line in text.splitlines() if line.startswith(suite + ' '))


def test_every_suite_passed(out):
    rc, text = summary(out)
    assert rc == 0, text
    assert row(text, 'unit').split()[:2] == ['unit', 'PASSED']
    assert '4 tests: 4 passed, 0 failed, 0 errors, 0 skipped' in row(text, 'unit')
    assert '12.5s' in row(text, 'functional')
    assert row(text, 'molecule').split()[:2] == ['molecule', 'PASSED']
    assert row(text, 'lint').split()[1:6] == ['PASSED', '33.0s', '0', 'violations,', '0']
    assert row(text, 'sanity').split()[1:] == [
        'PASSED', '1m32s', '24', 'sanity', 'tests:', '22', 'passed,', '0', 'failed,', '2', 'skipped']
    assert 'RESULT: PASSED - 7 suites' in text
    # What ansible-lint printed besides its verdict is shown, not hidden (a module's doc did not parse).
    assert "note: ansible-lint printed: [ERROR]: Unable to parse documentation in python file" in text
    assert 'Running sanity test' not in text


def test_the_total_is_the_wall_time_of_suites_run_side_by_side(out):
    """unit and world side by side (10 s and 30 s from t), then functional from t+30 s for 100 s: 130 s in all."""
    for name, start, seconds in (('unit', 0, 10), ('world', 0, 30), ('functional', 30, 100), ('molecule', 130, 0),
                                 ('lint', 0, 1), ('docs', 0, 1), ('sanity', 0, 1)):
        out.join(name + '.status').write('rc=0 start=%.6f end=%.6f\n' % (1764694800.25 + start, 1764694800.25 + start + seconds))
    rc, text = summary(out)
    assert rc == 0, text
    assert row(text, 'total').split() == ['total', '2m10s', '5%', 'of', 'the', '45-minute', 'budget']
    # From when make test began (test.start: the controller venvs are made before the first suite starts).
    out.join('test.start').write('1764694740,250000\n')
    rc, text = summary(out)
    assert row(text, 'total').split()[:3] == ['total', '3m10s', '7%']
    out.join('functional.status').write('rc=0 start=1764694830.25 end=1764697800.25\n')
    rc, text = summary(out)
    assert row(text, 'total').split()[:3] == ['total', '51m00s', '113%'] and rc == 0   # it informs, it does not fail


def test_the_slowest_tests_of_the_junit_reports_are_listed_slowest_first(out):
    cases = ''.join('<testcase classname="tests.functional.test_x" name="test_%d@group" time="%d.5"/>' % (i, i * 10)
                    for i in range(12))
    out.join('functional.xml').write('<testsuites><testsuite name="pytest" errors="0">%s</testsuite></testsuites>' % cases)
    out.join('unit.xml').write('<testsuites><testsuite name="pytest" errors="0"><testcase classname="tests.unit.t" '
                               'name="test_slow" time="95"/></testsuite></testsuites>')
    rc, text = summary(out)
    assert rc == 0, text
    listed = text.split('== the 10 slowest tests ==\n')[1].split('\n\n')[0].splitlines()
    assert [line.split() for line in listed[:3]] == [
        ['1m50s', 'functional', 'test_x::test_11'], ['1m40s', 'functional', 'test_x::test_10'],
        ['1m35s', 'unit', 't::test_slow']]
    assert len(listed) == 10 and listed[-1].split()[-1] == 'test_x::test_3'


def test_a_failing_pytest_suite_lists_its_failures(out, reports):
    junit(out, 'functional', reports, 'failing')
    status(out, 'functional', 1)
    rc, text = summary(out)
    assert rc == 1
    assert row(text, 'functional').split()[:2] == ['functional', 'FAILED']
    assert '7 tests: 4 passed, 1 failed, 1 errors, 1 skipped' in row(text, 'functional')
    assert 'FAILED test_failing::test_broken - AssertionError: torch was replaced' in text
    assert "ERROR test_failing::test_with_a_broken_fixture - failed on setup with \"RuntimeError: fixture blew up\"" in text
    assert 'RESULT: FAILED - functional failed' in text


def test_a_collection_error_is_a_failure(out, reports):
    junit(out, 'unit', reports, 'collection-error')
    status(out, 'unit', 2)
    rc, text = summary(out)
    assert rc == 1
    assert 'ERROR test_unit - ' in text or 'collection' in text, text
    assert 'unit        FAILED' in text


def test_a_nonzero_exit_with_a_clean_report_is_a_failure(out):
    status(out, 'world', 3)
    rc, text = summary(out)
    assert rc == 1
    assert 'exited with status 3 although its report lists no failure' in text


def test_a_suite_without_a_report_is_missing(out):
    out.join('world.xml').remove()
    out.join('world.status').remove()
    rc, text = summary(out)
    assert rc == 1
    assert row(text, 'world').split()[:2] == ['world', 'MISSING']
    assert 'RESULT: FAILED - world missing' in text


def test_a_suite_that_died_before_its_report(out):
    out.join('unit.xml').remove()
    status(out, 'unit', 2)
    rc, text = summary(out)
    assert rc == 1
    assert 'exited with status 2 before writing its report' in text


def test_a_suite_that_ran_nothing_failed(out, reports):
    junit(out, 'world', reports, 'only-skips')
    rc, text = summary(out)
    assert rc == 1
    assert 'ran no test' in text


def test_lint_violations_are_counted_and_listed(out):
    lint(out, 'fail', 2)
    rc, text = summary(out)
    assert rc == 1
    assert row(text, 'lint').split()[1:] == ['FAILED', '33.0s', '5', 'violations,', '0', 'warnings', '(profile', 'production)']
    assert 'name[missing] roles/boto/tasks/main.yml:6 - Task/Handler: shell echo hi' in text
    assert 'no-changed-when roles/boto/tasks/main.yml:7 - Task/Handler: lower case name' in text
    assert "note: ansible-lint: Failed: 5 failure(s), 0 warning(s)" in text


def test_lint_exit_status_alone_fails_it(out):
    status(out, 'lint', 1)
    rc, text = summary(out)
    assert rc == 1
    assert 'lint        FAILED' in text


def test_sanity_failures_are_named_per_test(out):
    sanity(out, 'fail', 1)
    rc, text = summary(out)
    assert rc == 1
    assert row(text, 'sanity').split()[1:] == ['FAILED', '1m32s', '24', 'sanity', 'tests:', '20', 'passed,', '2', 'failed,', '2',
                                               'skipped']
    assert 'FAILED pep8 - The test `ansible-test sanity --test pep8` failed with 1 error:' in text
    assert 'FAILED line-endings - ' in text
    assert '(listed by ansible-test)' not in text   # its own list and the JUnit files agree


def test_sanity_failure_listed_by_ansible_test_without_its_junit_file(out):
    sanity(out, 'fail', 1)
    out.join('sanity', 'ansible-test-sanity-pep8.xml').remove()
    rc, text = summary(out)
    assert rc == 1
    assert 'FAILED pep8 (listed by ansible-test)' in text


def test_sanity_without_results(out):
    shutil.rmtree(str(out.join('sanity')))
    rc, text = summary(out)
    assert rc == 1
    assert 'no sanity results in' in text


@pytest.mark.parametrize('name', ['unit', 'functional'])
def test_an_unreadable_report_is_a_failure(out, name):
    out.join(name + '.xml').write('<testsuites><testsuite')
    rc, text = summary(out)
    assert rc == 1
    assert 'unreadable report' in text


def test_measured_timings_are_printed(out):
    out.join('timings.txt').write('venv,torch on an empty base                                   36.2 s\n')
    rc, text = summary(out)
    assert rc == 0
    assert '== measured ==\nvenv,torch on an empty base' in text


def test_decimal_comma_in_wall_times(out):
    out.join('unit.status').write('rc=0 start=1764694800,250000 end=1764694834,750000\n')
    rc, text = summary(out)
    assert rc == 0
    assert '34.5s' in row(text, 'unit')


def test_a_status_from_an_earlier_run_is_not_paired_with_a_newer_report(out, reports):
    """`make test` once, then `make functional` by hand: the old status must not speak for the new report."""
    status(out, 'functional', 2)
    os.utime(str(out.join('functional.status')), (1700000000, 1700000000))
    junit(out, 'functional', reports, 'passing')
    rc, text = summary(out)
    assert rc == 0, text
    assert 'note: functional.status is from an earlier run than the report: not used' in text
