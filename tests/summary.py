"""Summarise a `make test` run from what its suites reported, and give the verdict.

    python3 tests/summary.py [tests/output]

Reads, for each suite of `make test` (standard library only, so it runs without .venv):
  unit, world, functional, docs   the JUnit XML pytest wrote (<name>.xml); molecule: molecule/junit.py's
  lint                     ansible-lint's SARIF file (lint.sarif) and its console output (lint.txt)
  sanity                   ansible-test's JUnit XML, one file per sanity test (sanity/*.xml), and its
                           console output (sanity.txt)
  every suite              <name>.status, written by `make test`: "rc=N start=T end=T" (its exit
                           status and wall time; absent when the suite was run by hand)
and timings.txt (durations the functional tests measured), test.start (when `make test` began).
It prints each suite's verdict and wall time, the total against the 45-minute budget and the slowest test cases of the
JUnit reports (these inform; nothing asserts a duration).

A suite failed when its exit status is not 0, when its report lists a failure or an error, or when
it ran no test; it is missing when it left no report. The exit status is 1 when any suite failed or
is missing, else 0.
"""
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

SUITES = (('unit', 'junit'), ('lint', 'lint'), ('docs', 'junit'), ('sanity', 'sanity'), ('world', 'junit'),
          ('functional', 'junit'), ('molecule', 'junit'))
REPORTS = {'junit': ('{name}.xml',), 'lint': ('lint.sarif', 'lint.txt'), 'sanity': ('sanity', 'sanity.txt')}
ANSI = re.compile(r'\x1b\[[0-9;]*[A-Za-z]|\x1b\]8;[^\x1b\x07]*(?:\x1b\\|\x07)')
SHOWN = 20   # failures listed per suite
SLOWEST = 10   # the slowest test cases listed
BUDGET = 45 * 60   # seconds: the time `make test` must stay within from a clean clone on 2 cores (CI allows 90 minutes)


class Suite:
    def __init__(self, name):
        self.name = name
        self.state = 'passed'          # passed | failed | missing
        self.counts = ''
        self.failures = []             # one line each
        self.notes = []
        self.seconds = None
        self.span = None               # (start, end) of its run
        self.rc = None

    def fail(self, line=None):
        self.state = 'failed'
        if line:
            self.failures.append(line)


def first_line(text):
    for line in (text or '').strip().splitlines():
        if line.strip():
            return line.strip()
    return ''


def newest_mtime(paths):
    """The newest modification time of the existing paths (a directory: its files), or None."""
    times = []
    for path in paths:
        if os.path.isdir(path):
            times += [os.path.getmtime(os.path.join(path, f)) for f in os.listdir(path)]
        elif os.path.exists(path):
            times.append(os.path.getmtime(path))
    return max(times) if times else None


def read_status(path, suite, report_mtime):
    """rc and wall time from <name>.status; EPOCHREALTIME may use a decimal comma. A status file
    older than the suite's report belongs to an earlier run (the suite was run again by hand)."""
    if not os.path.exists(path):
        return
    if report_mtime is not None and os.path.getmtime(path) < report_mtime - 1:
        suite.notes.append('%s is from an earlier run than the report: not used' % os.path.basename(path))
        return
    with open(path) as handle:
        fields = dict(item.split('=', 1) for item in handle.read().split() if '=' in item)
    try:
        suite.rc = int(fields['rc'])
    except (KeyError, ValueError):
        suite.notes.append('unreadable status file %s' % path)
        return
    try:
        suite.span = (float(fields['start'].replace(',', '.')), float(fields['end'].replace(',', '.')))
        suite.seconds = suite.span[1] - suite.span[0]
    except (KeyError, ValueError):
        pass


def junit_cases(path):
    """Every <testcase> of a JUnit file as (id, outcome, message); outcome: passed|failed|error|skipped."""
    root = ET.parse(path).getroot()
    cases = []
    for case in root.iter('testcase'):
        classname, name = case.get('classname', ''), case.get('name', '')
        ident = '%s::%s' % (classname, name) if classname and classname != name else name
        outcome, message = 'passed', ''
        for tag in ('failure', 'error', 'skipped'):
            child = case.find(tag)
            if child is not None:
                outcome = {'failure': 'failed', 'error': 'error', 'skipped': 'skipped'}[tag]
                message = first_line(child.get('message')) or first_line(child.text)
                break
        cases.append((ident, outcome, message))
    return root, cases


def junit_suite(suite, path):
    if not os.path.exists(path):
        suite.state = 'missing'
        suite.notes.append('no report %s' % path)
        return
    try:
        root, cases = junit_cases(path)
    except (ET.ParseError, OSError) as exc:
        suite.fail('unreadable report %s: %s' % (path, exc))
        return
    tally = {'passed': 0, 'failed': 0, 'error': 0, 'skipped': 0}
    for ident, outcome, message in cases:
        tally[outcome] += 1
        if outcome in ('failed', 'error'):
            suite.fail('%s %s%s' % ('FAILED' if outcome == 'failed' else 'ERROR', ident,
                                    ' - ' + message if message else ''))
    # Errors outside any test case (collection errors) are counted on the <testsuite> only.
    suite_errors = sum(int(s.get('errors', 0) or 0) for s in root.iter('testsuite'))
    if suite_errors > tally['error']:
        suite.fail('%d error(s) outside the test cases (collection or fixture errors)' % (suite_errors - tally['error']))
    suite.counts = '%d tests: %d passed, %d failed, %d errors, %d skipped' % (
        len(cases), tally['passed'], tally['failed'], tally['error'], tally['skipped'])
    if tally['passed'] == 0:
        suite.fail('ran no test')
    if suite.seconds is None:
        times = [float(s.get('time', 0) or 0) for s in root.iter('testsuite')]
        suite.seconds = sum(times) if times else None


def console_text(path):
    """A tool's console output as it was tee'd, without colours and links ('' when absent)."""
    if not os.path.exists(path):
        return ''
    with open(path, errors='replace') as handle:
        return ANSI.sub('', handle.read())


def lint_suite(suite, out):
    sarif = os.path.join(out, 'lint.sarif')
    text = console_text(os.path.join(out, 'lint.txt'))
    if not os.path.exists(sarif):
        suite.state = 'missing'
        suite.notes.append('no report %s' % sarif)
        if text:
            suite.notes.append(first_line(text.splitlines()[-1] if text.strip() else ''))
        return
    try:
        with open(sarif) as handle:
            runs = json.load(handle)['runs']
        results = [result for run in runs for result in run.get('results', [])]
    except (ValueError, KeyError, OSError) as exc:
        suite.fail('unreadable report %s: %s' % (sarif, exc))
        return
    levels = {}
    for result in results:
        level = result.get('level', 'error')
        levels[level] = levels.get(level, 0) + 1
        if level == 'error':
            location = (result.get('locations') or [{}])[0].get('physicalLocation', {})
            where = location.get('artifactLocation', {}).get('uri', '?')
            line = location.get('region', {}).get('startLine')
            suite.fail('%s %s%s - %s' % (result.get('ruleId', '?'), where, ':%s' % line if line else '',
                                         result.get('message', {}).get('text', '')))
    verdict = re.search(r'^(Passed|Failed): (\d+) failure\(s\), (\d+) warning\(s\)[^\n]*', text, re.M)
    suite.counts = '%d violations, %d warnings (profile production)' % (levels.get('error', 0), levels.get('warning', 0))
    if verdict:
        suite.notes.append('ansible-lint: %s' % verdict.group(0))
        if verdict.group(1) == 'Failed' and suite.state == 'passed':
            suite.fail('ansible-lint reported: %s' % verdict.group(0))
    for line in text.splitlines():
        if line.startswith('[ERROR]'):
            suite.notes.append('ansible-lint printed: %s' % line.strip())


def sanity_suite(suite, out):
    junit_dir = os.path.join(out, 'sanity')
    text = console_text(os.path.join(out, 'sanity.txt'))
    files = sorted(f for f in os.listdir(junit_dir) if f.endswith('.xml')) if os.path.isdir(junit_dir) else []
    tally = {'passed': [], 'failed': [], 'error': [], 'skipped': []}
    for name in files:
        try:
            _root, cases = junit_cases(os.path.join(junit_dir, name))
        except (ET.ParseError, OSError) as exc:
            suite.fail('unreadable report %s: %s' % (name, exc))
            continue
        for ident, outcome, message in cases:
            test = ident.split('::')[-1]
            tally[outcome].append(test)
            if outcome in ('failed', 'error'):
                suite.fail('FAILED %s - %s' % (test, message))
            elif outcome == 'skipped' and message and message != 'No tests applicable.':
                suite.notes.append('skipped %s: %s' % (test, message))
    # ansible-test's own list of failed tests ("The N sanity test(s) listed below (out of M) failed").
    listed = re.search(r'The (\d+) sanity test\(s\) listed below \(out of (\d+)\) failed\.[^\n]*\n((?:[^\n]+\n?)*)', text)
    if listed:
        for test in listed.group(3).split():
            if test not in tally['failed'] and test.replace('-python-', ' --python ') not in tally['failed']:
                suite.fail('FAILED %s (listed by ansible-test)' % test)
    if not files:
        if text.strip() or suite.rc:
            suite.fail('no sanity results in %s%s' % (junit_dir, '; last output: ' + text.strip().splitlines()[-1]
                                                      if text.strip() else ''))
        else:
            suite.state = 'missing'
            suite.notes.append('no reports in %s' % junit_dir)
        return
    total = sum(len(v) for v in tally.values())
    suite.counts = '%d sanity tests: %d passed, %d failed, %d skipped' % (
        total, len(tally['passed']), len(tally['failed']) + len(tally['error']), len(tally['skipped']))
    if not tally['passed']:
        suite.fail('ran no test')


def summarise(out):
    suites = []
    for name, kind in SUITES:
        suite = Suite(name)
        reports = [os.path.join(out, f.format(name=name)) for f in REPORTS[kind]]
        read_status(os.path.join(out, name + '.status'), suite, newest_mtime(reports))
        if kind == 'junit':
            junit_suite(suite, os.path.join(out, name + '.xml'))
        elif kind == 'lint':
            lint_suite(suite, out)
        else:
            sanity_suite(suite, out)
        if suite.rc and suite.state == 'passed':
            suite.fail('exited with status %d although its report lists no failure' % suite.rc)
        elif suite.rc and suite.state == 'missing':
            suite.state = 'failed'
            suite.failures.insert(0, 'exited with status %d before writing its report' % suite.rc)
        suites.append(suite)
    return suites


def slowest(out, count=SLOWEST):
    """The count slowest test cases of the suites' JUnit reports: [(seconds, suite, test id)], slowest first."""
    cases = []
    for name, kind in SUITES:
        path = os.path.join(out, name + '.xml')
        if kind != 'junit' or not os.path.exists(path):
            continue
        try:
            root = ET.parse(path).getroot()
        except (ET.ParseError, OSError):
            continue
        for case in root.iter('testcase'):
            classname, test = case.get('classname', ''), case.get('name', '')
            try:
                seconds = float(case.get('time', 0) or 0)
            except ValueError:
                continue
            ident = '%s::%s' % (classname, test) if classname and classname != test else test
            # pytest-xdist's group suffix (@group) and the tests.<suite>. prefix say nothing the suite column does not.
            cases.append((seconds, name, re.sub(r'^tests\.(?:functional|unit|docs)\.', '', ident.split('@')[0])))
    return sorted(cases, key=lambda case: -case[0])[:count]


def run_start(out):
    """When `make test` started its suites (test.start, written before the controller venvs are made), or None."""
    try:
        with open(os.path.join(out, 'test.start')) as handle:
            return float(handle.read().strip().replace(',', '.'))
    except (OSError, ValueError):
        return None


def seconds_text(seconds):
    if seconds is None:
        return '-'
    return '%dm%02ds' % divmod(int(round(seconds)), 60) if seconds >= 60 else '%.1fs' % seconds


def main(argv):
    out = argv[1] if len(argv) > 1 else os.path.join('tests', 'output')
    suites = summarise(out)
    print('\n== make test summary (%s) ==' % out)
    for suite in suites:
        print('%-11s %-7s %8s  %s' % (suite.name, suite.state.upper(), seconds_text(suite.seconds),
                                      suite.counts or '; '.join(suite.notes[:1])))
        for line in suite.failures[:SHOWN]:
            print('    ' + line)
        if len(suite.failures) > SHOWN:
            print('    ... and %d more' % (len(suite.failures) - SHOWN))
        for note in (suite.notes if suite.counts else suite.notes[1:]):
            print('    note: ' + note)
    # Wall time from the first suite's start to the last one's end (suites run side by side overlap).
    # The total counts from test.start when `make test` wrote it (the controller venvs are made in it too).
    spans = [s.span for s in suites if s.span is not None]
    if spans:
        start = run_start(out) or min(span[0] for span in spans)
        total = max(span[1] for span in spans) - start
        share = '%d%%' % round(100 * total / BUDGET)
        print('%-11s %-7s %8s  %s of the %d-minute budget' % ('total', '', seconds_text(total), share, BUDGET // 60))
    cases = slowest(out)
    if cases:
        print('\n== the %d slowest tests ==' % len(cases))
        for seconds, name, ident in cases:
            print('%8s  %-10s %s' % (seconds_text(seconds), name, ident))
    timings = os.path.join(out, 'timings.txt')
    if os.path.exists(timings):
        print('\n== measured ==')
        with open(timings) as handle:
            print(handle.read().rstrip())
    bad = [s for s in suites if s.state != 'passed']
    if bad:
        print('\nRESULT: FAILED - %s' % ', '.join('%s %s' % (s.name, s.state) for s in bad))
        return 1
    print('\nRESULT: PASSED - %d suites' % len(suites))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
