"""write_files: one round trip for several generated files; atomic, only what differs, honest check/diff."""
import os
import stat

from module_runner import run_module


def mode_of(path):
    return stat.S_IMODE(os.stat(str(path)).st_mode)


def test_writes_new_files_and_their_parents(tmpdir):
    env_sh, module = tmpdir.join('base', 'env.sh'), tmpdir.join('base', 'modulefiles', 'primus', 'v26.5')
    result = run_module('write_files', dict(files=[dict(path=str(env_sh), content='export A=1\n'),
                                                   dict(path=str(module), content='#%Module1.0\n', mode='0600')]),
                        tmpdir, check_mode=False, diff=True)
    assert result['changed'] is True and result['written'] == [str(env_sh), str(module)]
    assert env_sh.read() == 'export A=1\n' and mode_of(env_sh) == 0o644
    assert module.read() == '#%Module1.0\n' and mode_of(module) == 0o600
    assert result['diff'][0] == dict(before_header=str(env_sh), after_header=str(env_sh), before='', after='export A=1\n')
    assert not [p for p in os.listdir(str(env_sh.dirpath())) if p.startswith('.env.sh.')], 'no temporary file left'


def test_same_content_and_mode_changes_nothing(tmpdir):
    path = tmpdir.join('env.sh')
    path.write('export A=1\n')
    os.chmod(str(path), 0o644)
    before = os.stat(str(path))
    result = run_module('write_files', dict(files=[dict(path=str(path), content='export A=1\n')]), tmpdir,
                        check_mode=False)
    assert result['changed'] is False and result['unchanged'] == [str(path)] and result['written'] == []
    assert os.stat(str(path)).st_ino == before.st_ino


def test_a_mode_difference_alone_is_a_change(tmpdir):
    path = tmpdir.join('env.sh')
    path.write('x\n')
    os.chmod(str(path), 0o666)
    result = run_module('write_files', dict(files=[dict(path=str(path), content='x\n')]), tmpdir, check_mode=False)
    assert result['changed'] is True and mode_of(path) == 0o644


def test_check_mode_reports_and_writes_nothing(tmpdir):
    path = tmpdir.join('pip-constraints.txt')
    path.write('torch==2.12.0+cpu\n')
    result = run_module('write_files', dict(files=[dict(path=str(path), content='torch==2.12.0+rocm7.15.0a20260720\n'),
                                                   dict(path=str(tmpdir.join('new', 'f')), content='y\n')]),
                        tmpdir, check_mode=True, diff=True)
    assert result['changed'] is True and len(result['written']) == 2
    assert result['diff'][0]['before'] == 'torch==2.12.0+cpu\n'
    assert path.read() == 'torch==2.12.0+cpu\n' and not tmpdir.join('new').exists()


def test_bad_input_fails_clearly_and_writes_nothing(tmpdir):
    result = run_module('write_files', dict(files=[dict(path='relative/env.sh', content='x')]), tmpdir, check_mode=False)
    assert result['failed'] is True and "'relative/env.sh' is not absolute" in result['msg']
    result = run_module('write_files', dict(files=[dict(path=str(tmpdir.join('f')), content='x', mode='rw-r--r--')]),
                        tmpdir, check_mode=False)
    assert result['failed'] is True and 'is not octal' in result['msg'] and not tmpdir.join('f').exists()


def test_a_path_that_cannot_be_written_fails_with_the_path(tmpdir):
    # A regular file where a parent directory should be: fails for every user, root included.
    tmpdir.join('base').write('not a directory')
    target = tmpdir.join('base', 'env.sh')
    result = run_module('write_files', dict(files=[dict(path=str(target), content='x')]), tmpdir, check_mode=False)
    assert result['failed'] is True and str(target) in result['msg']
    assert tmpdir.join('base').read() == 'not a directory'


def test_nothing_is_writable_by_others_even_under_umask_000(tmpdir):
    deep = tmpdir.join('base', 'modulefiles', 'primus', 'v26.5')
    result = run_module('write_files', dict(files=[dict(path=str(deep), content='#%Module1.0\n'),
                                                   dict(path=str(tmpdir.join('base', 'env.sh')), content='x\n')]),
                        tmpdir, check_mode=False, umask=0)
    assert result['changed'] is True, result
    for path in (tmpdir.join('base'), tmpdir.join('base', 'modulefiles'), tmpdir.join('base', 'modulefiles', 'primus')):
        assert mode_of(path) == 0o755, path
    assert mode_of(deep) == 0o644 and mode_of(tmpdir.join('base', 'env.sh')) == 0o644


def test_a_world_writable_mode_is_refused(tmpdir):
    for args in (dict(files=[dict(path=str(tmpdir.join('f')), content='x', mode='0666')]),
                 dict(files=[dict(path=str(tmpdir.join('d', 'f')), content='x')], dir_mode='0777')):
        result = run_module('write_files', args, tmpdir, check_mode=False)
        assert result['failed'] is True and 'would let every user write it' in result['msg'], result
    assert not tmpdir.join('f').exists() and not tmpdir.join('d').exists()
