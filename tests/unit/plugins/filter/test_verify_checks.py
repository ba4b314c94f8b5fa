"""verify's import checks: one command runs each in a process of its own (roles/verify/vars/main.yml, verify_checks_code),
and check_results turns its JSON into the verdicts - a crash of one check cannot hide another's result."""
import json
import os
import subprocess
import sys

import yaml

from ansible_collections.primus.trainenv.plugins.filter.checks import check_results

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))

with open(os.path.join(ROOT, 'roles', 'verify', 'vars', 'main.yml')) as handle:
    VARS = yaml.safe_load(handle)

CHECKS = [
    {'name': 'fine', 'stage': 'torch', 'code': 'import sys; print("argv " + " ".join(sys.argv[1:]))', 'args': ['2.12', 'x y']},
    {'name': 'aborts', 'stage': 'te', 'code': 'import os; print("before"); os.abort()'},
    {'name': 'raises', 'stage': 'aiter', 'code': 'raise SystemExit("flydsl has no vector")'},
    {'name': 'warns', 'stage': 'turbo', 'code': 'import sys; sys.stderr.write("CK and HIP ops are disabled\\n")',
     'stderr_forbids': 'CK and HIP ops are disabled'},
    {'name': 'after', 'stage': 'mamba', 'code': 'print("still run")'},
    {'name': 'unbuilt', 'stage': 'primus', 'code': 'print(1)'},
]
DONE = ['torch', 'te', 'aiter', 'turbo', 'mamba']


def run_checks(checks, python=sys.executable):
    proc = subprocess.run([python, '-c', VARS['verify_checks_code'], json.dumps(checks)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    return {'rc': proc.returncode, 'stdout': proc.stdout, 'stderr': proc.stderr}


def test_each_check_runs_in_its_own_process_and_a_crash_hides_nothing():
    run = run_checks([c for c in CHECKS if c['stage'] in DONE])
    assert run['rc'] == 0
    verdicts = dict((v['name'], v) for v in check_results(run, CHECKS, DONE, {'primus': {'reason': 'stale'}}))
    assert verdicts['fine'] == {'name': 'fine', 'stage': 'torch', 'status': 'ok', 'detail': 'argv 2.12 x y'}
    assert verdicts['aborts']['status'] == 'failed' and verdicts['aborts']['detail'] == 'exit status -6'
    assert verdicts['raises'] == dict(verdicts['raises'], status='failed', detail='flydsl has no vector')
    assert verdicts['warns'] == dict(verdicts['warns'], status='failed', detail='stderr says: CK and HIP ops are disabled')
    assert verdicts['after']['status'] == 'ok'
    assert verdicts['unbuilt'] == {'name': 'unbuilt', 'stage': 'primus', 'status': 'not built', 'detail': 'stage primus: stale'}


def test_a_runner_that_cannot_run_fails_every_check_it_was_to_run():
    failed = {'rc': 127, 'stdout': '', 'stderr': 'env: no-such-python: No such file or directory\n'}
    verdicts = check_results(failed, CHECKS, ['torch', 'te'])
    assert [(v['name'], v['status']) for v in verdicts[:2]] == [('fine', 'failed'), ('aborts', 'failed')]
    assert verdicts[0]['detail'] == 'the checks could not be run: env: no-such-python: No such file or directory'
    garbled = check_results({'rc': 0, 'stdout': 'not json'}, CHECKS, ['torch'])
    assert garbled[0]['status'] == 'failed' and garbled[0]['detail'] == 'the checks could not be run: it printed no results'


def test_the_results_of_a_loop_are_still_read():
    loop = [{'item': CHECKS[0], 'rc': 0, 'stdout_lines': ['ok 1'], 'stderr': ''}]
    assert check_results(loop, CHECKS[:1], ['torch']) == [{'name': 'fine', 'stage': 'torch', 'status': 'ok', 'detail': 'ok 1'}]
