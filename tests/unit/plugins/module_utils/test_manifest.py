"""manifest: the per-node record scrubs environment dumps and secrets, ignores volatile fields, summarises;
write_manifest writes it atomically and only when the record changes."""
import hashlib
import json
import os
import stat
import sys

import pytest

from ansible_collections.primus.trainenv.plugins.module_utils import manifest as mf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'modules'))
from module_runner import run_module  # noqa: E402

TOKEN = 'hf_Zq8LmN3pRt7vXy2Ab4Cd'
# A real `env` dump as the upstream manifest stage writes it (env.txt), secrets included.
ENV_TXT = ('SHELL=/bin/bash\nHF_TOKEN=%s\nPWD=/home/trainer\nLOGNAME=trainer\nHOME=/home/trainer\n'
           'WANDB_API_KEY=0123456789abcdef0123\nPATH=/home/trainer/envs/primus-env/venv/bin:/usr/bin:/bin\n_=/usr/bin/env\n'
           % TOKEN)


def base_data(**extra):
    data = dict(release='v26.5', host='node1', os='Ubuntu 22.04.4 LTS', glibc='2.35', glibcxx='3.4.30',
                python='3.12.1', archs=['gfx942', 'gfx950'], te_mode='source',
                distributions={'torch': '2.12.0+rocm7.15.0a20260720', 'transformer-engine': '2.8.0+abc',
                               'SecretStorage': '3.3.3'},
                checkouts={'Primus': 'b511d1b66b0068715308ea9bfe8ba147ea1a3860'},
                build_keys={'te': '1b2c3d4e5f607182'}, timings={'torch': 312.4, 'te': 2710.0, 'venv': 4},
                verify={'import_torch': True, 'import_mamba_ssm': 'failed', 'tokenizer_loads': {'ok': True}})
    data.update(extra)
    return data


def test_a_token_in_a_url_is_redacted_everywhere_it_appears():
    url = 'https://trainer:%s@hf.example.com/simple' % TOKEN
    data = base_data(verify={'index': url, 'note': 'fetched with %s' % TOKEN},
                     checkouts={'Primus': 'b511d1b6', 'git+https://%s@github.com/x/y.git' % TOKEN: 'abc1234'})
    clean, stripped, secrets = mf.scrub(data)
    text = json.dumps(clean)
    assert TOKEN not in text and TOKEN in secrets
    assert clean['verify']['index'] == 'https://trainer:****@hf.example.com/simple'
    assert clean['verify']['note'] == 'fetched with ****'
    assert 'git+https://****@github.com/x/y.git' in clean['checkouts']
    assert stripped == []


def test_environment_dumps_are_stripped_in_every_form():
    data = base_data(env={'PATH': '/usr/bin', 'HOME': '/root'},
                     verify={'env_txt_copy': ENV_TXT, 'lines': ENV_TXT.splitlines(), 'import_torch': True,
                             'ansible_env': {'X': '1'}, 'as_mapping': {'HOME': '/h', 'USER': 'u', 'HF_TOKEN': TOKEN}})
    clean, stripped, secrets = mf.scrub(data)
    assert 'env' not in clean
    assert clean['verify'] == {'import_torch': True}
    assert sorted(s['key'] for s in stripped) == ['env', 'verify.ansible_env', 'verify.as_mapping',
                                                  'verify.env_txt_copy', 'verify.lines']
    assert {s['reason'] for s in stripped} == {'looks like an environment dump'}
    # the dump's secret values are known, so a copy elsewhere is masked too
    assert TOKEN in secrets and '0123456789abcdef0123' in secrets and '/usr/bin' not in secrets


def test_secret_named_keys_are_stripped_but_names_in_name_maps_are_not():
    data = base_data(verify={'hf_token': TOKEN, 'db_password': 'hunter2hunter2', 'tokenizer_loads': True,
                             'nested': {'WANDB_API_KEY': 'abcdefgh12345678', 'ok': True}})
    clean, stripped, secrets = mf.scrub(data)
    assert clean['verify'] == {'tokenizer_loads': True, 'nested': {'ok': True}}
    assert sorted(s['key'] for s in stripped) == ['verify.db_password', 'verify.hf_token', 'verify.nested.WANDB_API_KEY']
    assert clean['distributions']['SecretStorage'] == '3.3.3'   # a distribution name, not a secret
    assert {TOKEN, 'hunter2hunter2', 'abcdefgh12345678'} <= secrets


def test_the_callers_secret_variables_are_masked_wherever_they_appear():
    extra = mf.environment_secrets({'HF_TOKEN': TOKEN, 'PATH': '/usr/bin:/bin', 'GITHUB_TOKEN': 'short'})
    assert extra == {TOKEN}
    clean = mf.scrub(base_data(verify={'log_tail': 'login as %s ok' % TOKEN}), extra)[0]
    assert clean['verify']['log_tail'] == 'login as **** ok'


def test_an_ordinary_environment_table_is_not_a_dump():
    # one login variable is not a dump (an arch list, PYTORCH_ROCM_ARCH recorded by a check)
    assert not mf.looks_like_env_dump({'PYTORCH_ROCM_ARCH': 'gfx942', 'PATH': '/x'})
    assert not mf.looks_like_env_dump('PATH=/usr/bin\nMAX_JOBS=8\n')
    assert mf.looks_like_env_dump('export PATH=/usr/bin\nexport HOME=/root\n')
    assert mf.looks_like_env_dump(['declare -x HOME="/root"', 'declare -x USER="root"'])


@pytest.mark.parametrize('data, message', [
    (dict(relase='v26.5'), "data has unknown key(s) relase; the manifest records release, host"),
    (dict(archs='gfx942'), "data.archs must be a list of gfx names, got str 'gfx942'"),
    (dict(distributions={'torch': 2.12}), 'data.distributions.torch must be version strings, got 2.12'),
    (dict(timings={'te': -1}), 'data.timings.te is negative'),
    (dict(timings={'te': True}), 'data.timings.te must be seconds (numbers), got True'),
    (dict(verify='ok'), 'data.verify must be a mapping of check -> result or a list of results'),
])
def test_bad_data_is_refused_clearly(data, message):
    with pytest.raises(mf.ManifestError) as info:
        mf.validate(data)
    assert message in str(info.value)


def test_volatile_fields_do_not_make_a_different_record():
    one = mf.build(base_data(env_sh='/b/env.sh'), 'ab' * 32, '2026-12-02T10:00:00Z')
    two = mf.build(base_data(env_sh='/b/env.sh', timings={'torch': 1.0}), 'ab' * 32, '2026-12-03T10:00:00Z')
    assert mf.same_record(one, two)
    assert not mf.same_record(one, mf.build(base_data(env_sh='/b/env.sh', te_mode='wheel'), 'ab' * 32,
                                            '2026-12-02T10:00:00Z'))
    assert not mf.same_record(one, mf.build(base_data(env_sh='/b/env.sh'), 'cd' * 32, '2026-12-02T10:00:00Z'))
    assert not mf.same_record(None, one)
    assert mf.parse(mf.to_json(one)) == one
    assert mf.parse('{"format": 99}') is None and mf.parse('not json') is None


def test_summary_is_short_and_says_what_matters():
    text = mf.summary(mf.build(base_data(env_sh='/b/env.sh'), 'ab' * 32, '2026-12-02T10:00:00Z'))
    lines = text.splitlines()
    assert lines[0] == 'Primus training environment v26.5 on node1'
    assert lines[1] == 'OS: Ubuntu 22.04.4 LTS | glibc 2.35 | GLIBCXX 3.4.30 | Python 3.12.1'
    assert lines[2] == 'GPU archs: gfx942;gfx950 | TransformerEngine mode: source'
    assert lines[3] == ('Distributions: 3 installed; torch 2.12.0+rocm7.15.0a20260720, '
                        'transformer-engine 2.8.0+abc')
    assert 'Checkouts: Primus b511d1b66b00' in lines
    assert 'env.sh: /b/env.sh (sha256 abababababababab)' in lines
    assert 'Build time: 50m 26s total; slowest: te 45m 10s, torch 5m 12s, venv 4s' in lines
    assert 'Verify: 2 passed, 1 failed (import_mamba_ssm)' in lines
    assert len(lines) <= 12


def test_verify_results_in_list_form():
    assert mf.verify_outcomes([{'name': 'torch', 'status': 'ok'}, {'name': 'te', 'failed': True}, 'x']) == [
        ('torch', True), ('te', False), ('check 3', None)]


# --- the module ---------------------------------------------------------------------------------------------------

def mode_of(path):
    return stat.S_IMODE(os.stat(str(path)).st_mode)


def module_args(tmpdir, **data):
    env_sh = tmpdir.join('base', 'env.sh')
    if not env_sh.exists():
        env_sh.write('export PRIMUS_BASE=/b\n', ensure=True)
    return dict(dir=str(tmpdir.join('base', 'manifest', 'node1')), data=base_data(env_sh=str(env_sh), **data))


def test_module_writes_both_files_atomically_with_modes_and_the_env_sh_hash(tmpdir):
    args = module_args(tmpdir)
    result = run_module('write_manifest', args, tmpdir, check_mode=False, diff=True, umask=0)
    assert result['changed'] is True, result
    manifest = tmpdir.join('base', 'manifest', 'node1', 'manifest.json')
    assert result['path'] == str(manifest) and result['written'] == [str(manifest), result['summary_path']]
    doc = json.loads(manifest.read())
    assert doc['env_sh'] == {'path': args['data']['env_sh'],
                             'sha256': hashlib.sha256(b'export PRIMUS_BASE=/b\n').hexdigest()}
    assert doc['format'] == 1 and doc['checkouts'] == args['data']['checkouts']
    assert result['checksum'] == hashlib.sha256(manifest.read_binary()).hexdigest()
    assert mode_of(manifest) == 0o644 and mode_of(result['summary_path']) == 0o644
    assert mode_of(tmpdir.join('base', 'manifest')) == 0o755 and mode_of(manifest.dirpath()) == 0o755
    assert tmpdir.join('base', 'manifest', 'node1', 'summary.txt').read().startswith('Primus training environment v26.5')
    assert sorted(os.listdir(str(manifest.dirpath()))) == ['manifest.json', 'summary.txt']
    assert result['diff'][0]['before'] == ''


def test_module_rerun_with_new_timings_changes_nothing(tmpdir):
    args = module_args(tmpdir)
    first = run_module('write_manifest', args, tmpdir, check_mode=False)
    manifest = tmpdir.join('base', 'manifest', 'node1', 'manifest.json')
    inode = os.stat(str(manifest)).st_ino
    args['data']['timings'] = {'torch': 0.4, 'te': 0.2}     # a converged run: stages skipped in seconds
    again = run_module('write_manifest', args, tmpdir, check_mode=False)
    assert again['changed'] is False and again['written'] == []
    assert again['checksum'] == first['checksum'] and os.stat(str(manifest)).st_ino == inode
    assert json.loads(manifest.read())['timings'] == {'torch': 312.4, 'te': 2710.0, 'venv': 4}


def test_module_a_changed_env_sh_or_record_rewrites_with_diff_check_mode_writes_nothing(tmpdir):
    args = module_args(tmpdir)
    run_module('write_manifest', args, tmpdir, check_mode=False)
    manifest = tmpdir.join('base', 'manifest', 'node1', 'manifest.json')
    before = manifest.read()
    tmpdir.join('base', 'env.sh').write('export PRIMUS_BASE=/b\nexport PRIMUS_SKIP_PIP=1\n')
    planned = run_module('write_manifest', args, tmpdir, check_mode=True, diff=True)
    assert planned['changed'] is True and manifest.read() == before
    assert planned['diff'][0]['before'] == before and '"sha256"' in planned['diff'][0]['after']
    done = run_module('write_manifest', args, tmpdir, check_mode=False)
    assert done['changed'] is True and json.loads(manifest.read())['env_sh']['sha256'] != json.loads(before)['env_sh']['sha256']


def test_module_a_token_never_reaches_the_files_or_the_result(tmpdir):
    url = 'https://trainer:%s@rocm.example.com/whl' % TOKEN
    args = module_args(tmpdir, verify={'index': url, 'env': ENV_TXT, 'import_torch': True})
    args['_ansible_inject_invocation'] = True    # the result echoes the task's arguments, as with ansible -v
    result = run_module('write_manifest', args, tmpdir, check_mode=False, env={'WANDB_API_KEY': 'wandb0123456789'})
    assert result['changed'] is True, result
    assert result['stripped'] == [{'key': 'verify.env', 'reason': 'looks like an environment dump'}]
    assert 'manifest: left out data.verify.env: looks like an environment dump' in json.dumps(result.get('warnings'))
    for name in ('manifest.json', 'summary.txt'):
        text = tmpdir.join('base', 'manifest', 'node1', name).read()
        assert TOKEN not in text and '0123456789abcdef0123' not in text
    assert json.loads(tmpdir.join('base', 'manifest', 'node1', 'manifest.json').read())['verify']['index'] == \
        'https://trainer:****@rocm.example.com/whl'
    assert 'verify' in result['invocation']['module_args']['data']
    assert TOKEN not in json.dumps(result)      # the task's own arguments (invocation) included


def test_module_refuses_bad_input_and_writes_nothing(tmpdir):
    args = module_args(tmpdir, relase='v26.5')
    result = run_module('write_manifest', args, tmpdir, check_mode=False)
    assert result['failed'] is True and 'unknown key(s) relase' in result['msg']
    args = module_args(tmpdir)
    args['data']['env_sh'] = str(tmpdir.join('nowhere', 'env.sh'))
    result = run_module('write_manifest', args, tmpdir, check_mode=False)
    assert result['failed'] is True and 'does not exist' in result['msg'] and 'write env.sh before' in result['msg']
    assert not tmpdir.join('base', 'manifest').exists()
