"""verify's import checks: one command runs each in a process of its own (roles/verify/vars/main.yml, verify_checks_code),
and check_results turns its JSON into the verdicts - a crash of one check cannot hide another's result."""
import json
import os
import subprocess
import sys

import yaml

from ansible_collections.primus.trainenv.plugins.filter.checks import check_processes, check_results, launch_result

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


def test_the_same_command_runs_programs_of_their_own_and_each_result_has_the_shape_of_a_command_result(tmpdir):
    """env.sh in a clean shell and the launch check are argv entries of the one command; a program that cannot be
    started is that check's failure only (rc 127 and why), not the runner's."""
    script = tmpdir.join('check.sh')
    script.write('echo "launch: torch"\necho "launch: mamba_ssm"\nkill -ABRT $$\n')
    plan = [CHECKS[0], {'name': 'launch', 'argv': ['bash', str(script)]},
            {'name': 'env_sh', 'argv': ['env', '-i', 'PATH=/usr/bin:/bin', 'bash', '--norc', '-c', 'echo /the/venv']},
            {'name': 'gone', 'argv': [str(tmpdir.join('no-such-program'))]}]
    run = run_checks(plan)
    assert run['rc'] == 0, run
    got = check_processes(run, ['env_sh', 'launch', 'gone'])
    assert (got['env_sh']['rc'], got['env_sh']['stdout_lines']) == (0, ['/the/venv'])
    assert got['launch']['rc'] == -6
    assert launch_result(got['launch'], [])['detail'].startswith('the process was killed by SIGABRT (exit status -6) '
                                                                 'while importing mamba_ssm')
    assert got['gone']['rc'] == 127 and 'no-such-program' in got['gone']['stderr_lines'][-1]
    # The import checks' verdicts read the same run and ignore the other entries.
    assert [v['name'] for v in check_results(run, CHECKS[:1], ['torch'])] == ['fine']


def test_check_processes_of_a_runner_that_failed():
    failed = check_processes({'rc': 1, 'stdout': '', 'stderr': 'Traceback\nImportError: no json\n'}, ['env_sh', 'launch'])
    assert sorted(failed) == ['env_sh', 'launch']
    assert failed['launch']['rc'] == 1 and failed['launch']['stderr_lines'] == ['the checks could not be run: ImportError: no json']
    assert check_processes({'rc': 0, 'stdout': '[]'}, ['env_sh'])['env_sh']['stderr'] == 'the checks command did not run it'


def test_a_crash_names_the_library_installed_twice():
    crashed = {'rc': -6, 'stdout_lines': ['launch-copies: _rocm_sdk_core/lib/libamd_comgr.so.3 '
                                          '_rocm_sdk_devel/lib/libamd_comgr.so.3', 'launch: torch'],
               'stderr_lines': ['LLVM ERROR: inconsistency in registered CommandLine options']}
    detail = launch_result(crashed, [])['detail']
    assert detail.startswith('the process was killed by SIGABRT (exit status -6) while importing torch: LLVM ERROR')
    assert ('; libamd_comgr.so.3 installed as separate files (_rocm_sdk_core/lib/libamd_comgr.so.3, '
            '_rocm_sdk_devel/lib/libamd_comgr.so.3)') in detail
    # Copies that did not crash anything are not blamed.
    fine = dict(crashed, rc=0, stdout_lines=crashed['stdout_lines'] + ['launch: the stack imports in one process'])
    assert launch_result(fine, [])['detail'] == 'the stack imports in one process'


def test_the_launch_code_reports_separate_copies_and_not_linked_ones(tmp_path):
    site = tmp_path / 'site'
    for top in ('_rocm_sdk_core', '_rocm_sdk_devel'):
        (site / top / 'lib').mkdir(parents=True)
    (site / '_rocm_sdk_devel' / 'lib' / 'libamd_comgr.so.3').write_text('devel')
    (site / '_rocm_sdk_core' / 'lib' / 'libamd_comgr.so.3').write_text('core')
    (site / '_rocm_sdk_devel' / 'lib' / 'libhsa.so.1').write_text('one')
    os.symlink('../../_rocm_sdk_devel/lib/libhsa.so.1', str(site / '_rocm_sdk_core' / 'lib' / 'libhsa.so.1'))
    code = VARS['verify_launch_code'].split('step("torch")')[0]
    code = code.replace('sysconfig.get_paths()["purelib"]', repr(str(site)))
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ['launch-copies: _rocm_sdk_core/lib/libamd_comgr.so.3 _rocm_sdk_devel/lib/libamd_comgr.so.3']
