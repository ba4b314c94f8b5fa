"""stage_stamp, base_lock and node_info's venv/stamps, run as Ansible runs modules (their own process)."""
import json
import os
import socket
import stat
import subprocess
import sys

from module_runner import run_module

from ansible_collections.primus.trainenv.plugins.module_utils import base_lock, stage_state

KEY = {'release': 'v26.5', 'python': '3.12', 'packages': ['pytest']}


INSTALLED = {'torch': '2.12.0+rocm7.15.0a20260720', 'PyYAML': '6.0.3'}


def venv_of_this_python(tmpdir):
    """A real venv (made without pip: fast) with the distributions of INSTALLED (their dist-info only)."""
    path = str(tmpdir.join('venv'))
    subprocess.run([sys.executable, '-m', 'venv', '--without-pip', path], check=True)
    purelib = subprocess.run([os.path.join(path, 'bin', 'python'), '-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])'],
                             capture_output=True, text=True, check=True).stdout.strip()
    for name, version in INSTALLED.items():
        info = os.path.join(purelib, '%s-%s.dist-info' % (name, version))
        os.makedirs(info)
        with open(os.path.join(info, 'METADATA'), 'w') as handle:
            handle.write('Metadata-Version: 2.1\nName: %s\nVersion: %s\n' % (name, version))
    return path


# --- stage_stamp ------------------------------------------------------------------------------

def test_stamp_is_written_once_with_the_installed_versions(tmpdir):
    venv = venv_of_this_python(tmpdir)
    state = str(tmpdir.join('base', 'state'))
    args = dict(path=state, stage='torch', release='v26.5', key=KEY, venv=venv,
                distributions=['torch==2.12.0+rocm7.15.0a20260720', 'pyyaml'], outputs={'rocm_sdk': True})
    first = run_module('stage_stamp', args, tmpdir, check_mode=False, diff=True)
    assert first['changed'] is True, first
    path = os.path.join(state, 'torch.json')
    with open(path) as handle:
        written = json.load(handle)
    assert written == first['stamp']
    assert written['outputs'] == {'rocm_sdk': True,
                                  'distributions': {'torch': '2.12.0+rocm7.15.0a20260720', 'pyyaml': '6.0.3'}}
    assert written['key_id'] == stage_state.key_id(KEY) and written['host'] == socket.gethostname()
    assert written['finished'].endswith('Z') and written['stage'] == 'torch' and written['format'] == 1
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    assert stat.S_IMODE(os.stat(state).st_mode) == 0o755
    assert first['diff']['before'] == '' and json.loads(first['diff']['after']) == written
    # A converged run: same key and outputs, nothing written (the file is the same inode, same time).
    before = os.stat(path)
    again = run_module('stage_stamp', args, tmpdir, check_mode=False)
    assert again['changed'] is False and os.stat(path).st_mtime_ns == before.st_mtime_ns
    assert os.stat(path).st_ino == before.st_ino
    # Another key: rewritten; check mode only says so.
    other = dict(args, key=dict(KEY, archs=['gfx950']))
    planned = run_module('stage_stamp', other, tmpdir, check_mode=True)
    assert planned['changed'] is True and os.stat(path).st_mtime_ns == before.st_mtime_ns
    rewritten = run_module('stage_stamp', other, tmpdir, check_mode=False)
    assert rewritten['changed'] is True and rewritten['previous']['key_id'] == written['key_id']
    assert sorted(os.listdir(state)) == ['torch.json'], 'no temporary file left'


def test_stamp_records_the_seconds_of_the_run_that_built_the_result(tmpdir):
    state = str(tmpdir.join('state'))
    args = dict(path=state, stage='torch', release='v26.5', key=KEY, outputs={'rocm_sdk': True}, seconds=312.44)
    first = run_module('stage_stamp', args, tmpdir, check_mode=False)
    assert first['changed'] is True and first['stamp']['outputs'] == {'rocm_sdk': True, 'seconds': 312.4}
    # The same result from a later, faster run: the stamp (and the build's time) is kept.
    again = run_module('stage_stamp', dict(args, seconds=0.8), tmpdir, check_mode=False)
    assert again['changed'] is False and again['stamp']['outputs']['seconds'] == 312.4
    with open(os.path.join(state, 'torch.json')) as handle:
        assert json.load(handle)['outputs']['seconds'] == 312.4
    # Another result: rewritten with this run's time.
    other = run_module('stage_stamp', dict(args, outputs={'rocm_sdk': False}, seconds=5), tmpdir, check_mode=False)
    assert other['changed'] is True and other['stamp']['outputs'] == {'rocm_sdk': False, 'seconds': 5.0}
    bad = run_module('stage_stamp', dict(args, seconds=-1), tmpdir, check_mode=False)
    assert bad.get('failed') and 'negative' in bad['msg']


def test_stamp_refuses_a_stage_that_did_not_install_what_it_names(tmpdir):
    venv = venv_of_this_python(tmpdir)
    state = str(tmpdir.join('state'))
    result = run_module('stage_stamp', dict(path=state, stage='torch', release='v26.5', key=KEY, venv=venv,
                                            distributions=['torch==2.12.0+rocm7.15.0a20260720', 'apex', 'PyYAML']),
                        tmpdir, check_mode=False)
    assert result['failed'] is True and result['missing'] == ['apex']
    assert result['msg'] == 'stage torch cannot be recorded as done: apex not installed in %s' % venv
    assert not os.path.exists(state)


def test_stamp_in_check_mode_before_the_venv_exists(tmpdir):
    result = run_module('stage_stamp', dict(path=str(tmpdir.join('state')), stage='venv', release='v26.5', key=KEY,
                                            venv=str(tmpdir.join('no-venv')), distributions=['pip']),
                        tmpdir, check_mode=True)
    assert result['changed'] is True and 'does not exist yet' in result['msg']
    assert not tmpdir.join('state').exists()


def test_stamp_refuses_bad_names(tmpdir):
    result = run_module('stage_stamp', dict(path=str(tmpdir), stage='../torch', release='v26.5', key=KEY), tmpdir,
                        check_mode=False)
    assert result['failed'] is True and "'../torch' is not a stage name" in result['msg']
    result = run_module('stage_stamp', dict(path=str(tmpdir), stage='torch', release='v26.5', key=KEY,
                                            distributions=['torch']), tmpdir, check_mode=False)
    assert result['failed'] is True and 'venv is required with distributions' in result['msg']
    result = run_module('stage_stamp', dict(path=str(tmpdir), stage='torch', release='v26.5', key=KEY, venv='/v',
                                            distributions=['--target=/etc']), tmpdir, check_mode=False)
    assert result['failed'] is True and "'--target=/etc' does not start with a distribution name" in result['msg']


# --- node_info: stamps and the venv -----------------------------------------------------------

def test_node_info_reads_the_stamps_and_the_venv(tmpdir):
    base = tmpdir.join('base')
    state = base.join('state')
    state.ensure(dir=True)
    stamp = stage_state.make_stamp('venv', 'v26.5', KEY, {}, 'n1', 'T')
    state.join('venv.json').write(json.dumps(stamp))
    result = run_module('node_info', dict(path=str(base), venv=str(base.join('venv')), state_dir=str(state)), tmpdir)
    assert result['stamps'] == {'venv': dict(stamp, problem='')}
    assert result['venv']['kind'] == 'absent' and result['venv']['debris'] == []
    venv = str(base.join('venv'))
    subprocess.run([sys.executable, '-m', 'venv', '--without-pip', venv], check=True)
    result = run_module('node_info', dict(path=str(base), venv=venv), tmpdir)
    assert result['venv']['kind'] == 'foreign' and 'cannot be adopted: no pip' in result['venv']['problem']
    assert 'stamps' not in result
    # A relative base is not looked into (preflight explains it).
    result = run_module('node_info', dict(path='envs/x', venv='envs/x/venv', state_dir='envs/x/state'), tmpdir)
    assert result['venv']['kind'] == 'absent' and result['stamps'] == {}


# --- base_lock (the module half; the action plugin is exercised by the functional tests) ------

def owner(run_id, inventory_host='node1'):
    return dict(run_id=run_id, inventory_host=inventory_host, controller_host='login1', controller_pid=4242,
                controller_user='trainer', controller_pid_start='1', controller_boot_id='b', controller_machine_id='m')


def test_lock_module_acquire_refuse_release(tmpdir):
    base = str(tmpdir.join('home', 'envs', 'base'))
    first = run_module('base_lock', dict(path=base, owner=owner('r1')), tmpdir, check_mode=False)
    assert first['acquired'] is True and first['changed'] is False   # creating the base is no change (issue 25)
    assert first['created'] == [str(tmpdir.join('home')), str(tmpdir.join('home', 'envs')), base]
    holder = first['holder']
    assert holder['run_id'] == 'r1' and holder['node_host'] == socket.gethostname() and holder['base'] == base
    assert holder['user'] and holder['since'].endswith('Z') and holder['controller_pid'] == 4242
    with open(base_lock.lock_path(base)) as handle:
        assert json.load(handle) == holder
    again = run_module('base_lock', dict(path=base, owner=owner('r1')), tmpdir, check_mode=False)
    assert again['acquired'] is True and again['changed'] is False
    refused = run_module('base_lock', dict(path=base, owner=owner('r2')), tmpdir, check_mode=False)
    assert refused['acquired'] is False and refused['holder'] == holder and 'failed' not in refused
    not_ours = run_module('base_lock', dict(path=base, owner=owner('r2'), state='released'), tmpdir, check_mode=False)
    assert not_ours['released'] is False and os.path.exists(base_lock.lock_path(base))
    assert any('is not this run' in str(w) for w in not_ours.get('warnings', []))
    checked = run_module('base_lock', dict(path=base, owner=owner('r1'), state='released'), tmpdir, check_mode=True)
    assert checked['released'] is True and os.path.exists(base_lock.lock_path(base))
    released = run_module('base_lock', dict(path=base, owner=owner('r1'), state='released'), tmpdir, check_mode=False)
    assert released['released'] is True and released['changed'] is False
    assert os.listdir(base) == []


def test_lock_module_takes_over_only_the_named_run(tmpdir):
    base = str(tmpdir.join('base'))
    run_module('base_lock', dict(path=base, owner=owner('dead')), tmpdir, check_mode=False)
    wrong = run_module('base_lock', dict(path=base, owner=owner('me'), takeover='someone-else'), tmpdir, check_mode=False)
    assert wrong['acquired'] is False and wrong['holder']['run_id'] == 'dead'
    taken = run_module('base_lock', dict(path=base, owner=owner('me'), takeover='dead'), tmpdir, check_mode=False)
    assert taken['acquired'] is True and taken['taken_over']['run_id'] == 'dead' and taken['holder']['run_id'] == 'me'


def test_lock_module_check_mode_creates_nothing(tmpdir):
    base = str(tmpdir.join('base'))
    result = run_module('base_lock', dict(path=base, owner=owner('r1')), tmpdir, check_mode=True)
    assert result['acquired'] is True and result['changed'] is False and not os.path.exists(base)


def test_lock_module_checked_reads_the_lock_and_changes_nothing(tmpdir):
    base = str(tmpdir.join('base'))
    free = run_module('base_lock', dict(path=base, owner=owner('r1'), state='checked'), tmpdir, check_mode=False)
    assert free['acquired'] is True and free['changed'] is False and not os.path.exists(base)
    run_module('base_lock', dict(path=base, owner=owner('r1')), tmpdir, check_mode=False)
    with open(base_lock.lock_path(base)) as handle:
        before = handle.read()
    held = run_module('base_lock', dict(path=base, owner=owner('r2'), state='checked'), tmpdir, check_mode=False)
    assert held['acquired'] is False and held['changed'] is False and held['holder']['run_id'] == 'r1'
    with open(base_lock.lock_path(base)) as handle:
        assert handle.read() == before
    assert sorted(os.listdir(base)) == ['.primus.lock']


def test_node_info_reads_the_base_s_lock(tmpdir):
    base = str(tmpdir.join('base'))
    assert run_module('node_info', dict(path=base), tmpdir)['lock'] == {}
    assert run_module('node_info', dict(path='rel/base'), tmpdir)['lock'] == {}
    taken = run_module('base_lock', dict(path=base, owner=owner('r1')), tmpdir, check_mode=False)
    assert run_module('node_info', dict(path=base), tmpdir)['lock'] == taken['holder']
    with open(base_lock.lock_path(base), 'w') as handle:
        handle.write('not json')
    garbage = run_module('node_info', dict(path=base), tmpdir)['lock']
    assert garbage == {'kind': 'file', 'problem': 'it is not a JSON lock record'}


def test_lock_module_needs_its_action_plugin_owner(tmpdir):
    result = run_module('base_lock', dict(path=str(tmpdir), owner={}), tmpdir, check_mode=False)
    assert result['failed'] is True and 'through its action plugin' in result['msg']
    result = run_module('base_lock', dict(path='rel/base', owner=owner('r1')), tmpdir, check_mode=False)
    assert result['failed'] is True and "'rel/base' is not absolute" in result['msg']


def test_node_info_reports_the_filesystem_host_and_os(tmpdir):
    from ansible_collections.primus.trainenv.plugins.module_utils import mountinfo
    result = run_module('node_info', dict(path=str(tmpdir.join('not', 'yet'))), tmpdir, check_mode=True)
    with open('/proc/self/mountinfo') as handle:
        expected = mountinfo.mount_of(os.path.realpath(str(tmpdir)), mountinfo.parse(handle.read()))
    assert result['filesystem'] == expected and result['filesystem']['fstype']
    assert result['hostname'] == socket.gethostname()
    assert set(result['os']) == {'id', 'version_id', 'pretty_name'}
    if os.path.exists('/etc/os-release'):
        assert result['os']['id'] and '"' not in result['os']['pretty_name']
    relative = run_module('node_info', dict(path='relative/base'), tmpdir, check_mode=True)
    assert relative['filesystem'] == dict(mount_point='', fstype='', source='', network=False)
