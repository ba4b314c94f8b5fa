"""git_checkout: real git on local repositories (one with a submodule) - the clone, its output in the log as git
prints it, a converged checkout left alone, a kept checkout moved to another commit (edits reset, untracked files
kept), check mode, credentials redacted, bad input refused; and command.stream's delivery of a progress line (ended
by a carriage return) while the command still runs."""
import os
import pwd
import subprocess
import sys

import pytest

from module_runner import COLLECTIONS, run_module

sys.path.insert(0, COLLECTIONS)
from ansible_collections.primus.trainenv.plugins.module_utils._pip.command import stream  # noqa: E402

GIT_ENV = {'GIT_AUTHOR_NAME': 't', 'GIT_AUTHOR_EMAIL': 't@example.invalid', 'GIT_COMMITTER_NAME': 't',
           'GIT_COMMITTER_EMAIL': 't@example.invalid', 'GIT_CONFIG_NOSYSTEM': '1', 'HOME': '/nonexistent',
           # A local path as a submodule URL (git 2.38.1 refuses the file transport for submodules by default).
           'GIT_CONFIG_COUNT': '1', 'GIT_CONFIG_KEY_0': 'protocol.file.allow', 'GIT_CONFIG_VALUE_0': 'always'}


def git(*args, cwd=None):
    proc = subprocess.run(['git'] + list(args), cwd=cwd, env=dict(os.environ, **GIT_ENV), capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def commit_file(repo, name, text, message):
    with open(os.path.join(repo, name), 'w') as handle:
        handle.write(text)
    git('add', name, cwd=repo)
    git('commit', '-q', '-m', message, cwd=repo)
    return git('rev-parse', 'HEAD', cwd=repo)


@pytest.fixture
def remotes(tmpdir):
    """A repository 'main' whose second commit adds a submodule 'sub' (from the repository 'sub')."""
    sub, main = str(tmpdir.join('sub')), str(tmpdir.join('main'))
    for path in (sub, main):
        git('init', '-q', '-b', 'main', path)
    commit_file(sub, 'sub.txt', 'sub\n', 'sub')
    first = commit_file(main, 'setup.py', 'one\n', 'first')
    git('submodule', 'add', '-q', sub, 'third_party/sub', cwd=main)
    second = commit_file(main, 'setup.py', 'two\n', 'second with a submodule')
    return dict(main=main, first=first, second=second)


def checkout(tmpdir, remotes, commit, check_mode=False, **extra):
    args = dict(repo=remotes['main'], dest=str(tmpdir.join('work', 'src')), commit=commit, submodules=True,
                log_path=str(tmpdir.join('logs', 'stage.log')))
    args.update(extra)
    env = dict(GIT_ENV, PRIMUS_TRAINENV_RUN='run-1')
    return run_module('git_checkout', args, tmpdir, env=env, check_mode=check_mode)


def read(path):
    with open(path) as handle:
        return handle.read()


def test_a_clone_with_submodules_logs_gits_output_and_a_converged_checkout_runs_nothing(tmpdir, remotes):
    dest, log = str(tmpdir.join('work', 'src')), str(tmpdir.join('logs', 'stage.log'))
    result = checkout(tmpdir, remotes, remotes['second'])
    assert result['_rc'] == 0 and result['changed'] is True, result
    assert result['actions'] == ['clone', 'checkout', 'submodules'] and result['before'] == ''
    assert git('rev-parse', 'HEAD', cwd=dest) == remotes['second']
    assert read(os.path.join(dest, 'third_party', 'sub', 'sub.txt')) == 'sub\n'
    text = read(log)
    assert text.startswith('### primus.trainenv run run-1\n'), text
    for expected in (' git_checkout: git clone --progress --no-checkout --origin origin -- %s %s\n' % (remotes['main'], dest),
                     "Cloning into '%s'..." % dest,
                     "Submodule path 'third_party/sub': checked out",
                     '### rc=0\n'):
        assert expected in text, (expected, text)
    assert text.index('git clone') < text.index('checkout --force') < text.index('submodule update')
    assert os.stat(log).st_mode & 0o777 == 0o640

    again = checkout(tmpdir, remotes, remotes['second'])
    assert again['changed'] is False and again['actions'] == [] and again['before'] == remotes['second'], again
    assert read(log) == text, 'a converged checkout writes nothing'


def test_a_kept_checkout_moves_to_another_commit_resetting_edits_and_keeping_untracked_files(tmpdir, remotes):
    dest = str(tmpdir.join('work', 'src'))
    assert checkout(tmpdir, remotes, remotes['first'])['actions'] == ['clone', 'checkout']  # no .gitmodules yet
    assert not os.path.exists(os.path.join(dest, '.gitmodules'))
    with open(os.path.join(dest, 'setup.py'), 'w') as handle:
        handle.write('edited\n')
    with open(os.path.join(dest, 'built.so'), 'w') as handle:
        handle.write('untracked\n')
    moved = checkout(tmpdir, remotes, remotes['second'])
    assert moved['changed'] is True and moved['actions'] == ['checkout', 'submodules'], moved
    assert moved['before'] == remotes['first']
    assert read(os.path.join(dest, 'setup.py')) == 'two\n' and read(os.path.join(dest, 'built.so')) == 'untracked\n'
    assert read(os.path.join(dest, 'third_party', 'sub', 'sub.txt')) == 'sub\n'
    # A submodule removed by hand is put back although HEAD is where it should be.
    subprocess.run(['rm', '-rf', os.path.join(dest, 'third_party', 'sub')], check=True)
    os.makedirs(os.path.join(dest, 'third_party', 'sub'))
    back = checkout(tmpdir, remotes, remotes['second'])
    assert back['actions'] == ['submodules'] and read(os.path.join(dest, 'third_party', 'sub', 'sub.txt')) == 'sub\n'


def test_an_edit_at_the_commit_is_reset_and_untracked_files_in_the_tree_and_its_submodule_stay(tmpdir, remotes):
    dest = str(tmpdir.join('work', 'src'))
    assert checkout(tmpdir, remotes, remotes['second'])['_rc'] == 0
    with open(os.path.join(dest, 'setup.py'), 'w') as handle:
        handle.write('edited\n')
    for untracked in (os.path.join(dest, 'built.so'), os.path.join(dest, 'third_party', 'sub', 'helpers.so')):
        with open(untracked, 'w') as handle:
            handle.write('untracked\n')
    reset = checkout(tmpdir, remotes, remotes['second'])
    assert reset['changed'] is True and reset['actions'] == ['checkout'], reset
    assert read(os.path.join(dest, 'setup.py')) == 'two\n' and read(os.path.join(dest, 'built.so')) == 'untracked\n'
    assert read(os.path.join(dest, 'third_party', 'sub', 'helpers.so')) == 'untracked\n'
    # Untracked files alone (in the tree and in a submodule) are no edit: nothing runs.
    again = checkout(tmpdir, remotes, remotes['second'])
    assert again['changed'] is False and again['actions'] == [], again
    # Check mode tells the truth about an edit, and changes nothing.
    with open(os.path.join(dest, 'setup.py'), 'w') as handle:
        handle.write('edited again\n')
    checked = checkout(tmpdir, remotes, remotes['second'], check_mode=True)
    assert checked['changed'] is True and checked['actions'] == ['checkout'], checked
    assert read(os.path.join(dest, 'setup.py')) == 'edited again\n'


def test_a_commit_the_checkout_lacks_is_fetched_and_a_changed_url_is_set(tmpdir, remotes):
    dest = str(tmpdir.join('work', 'src'))
    assert checkout(tmpdir, remotes, remotes['first'])['_rc'] == 0
    third = commit_file(remotes['main'], 'setup.py', 'three\n', 'third')
    moved = str(tmpdir.join('moved'))
    os.rename(remotes['main'], moved)
    result = checkout(tmpdir, remotes, third, repo=moved)
    assert result['actions'] == ['set-url', 'fetch', 'checkout', 'submodules'], result
    assert git('rev-parse', 'HEAD', cwd=dest) == third and git('config', 'remote.origin.url', cwd=dest) == moved
    assert ' git_checkout: git -C %s fetch --progress --tags origin\n' % dest in read(str(tmpdir.join('logs', 'stage.log')))


def test_check_mode_reports_the_clone_and_creates_nothing(tmpdir, remotes):
    result = checkout(tmpdir, remotes, remotes['second'], check_mode=True)
    assert result['changed'] is True and result['actions'] == ['clone', 'checkout', 'submodules'], result
    assert not tmpdir.join('work').exists() and not tmpdir.join('logs').exists()


def test_credentials_are_redacted_in_the_log_and_the_result(tmpdir, remotes):
    secret = 's3cr3t-T0ken-value'
    url = 'http://user:%s@127.0.0.1:9/repo.git' % secret
    result = checkout(tmpdir, remotes, remotes['second'], repo=url)
    assert result['_rc'] != 0 and result['failed'] is True
    log = str(tmpdir.join('logs', 'stage.log'))
    assert result['msg'].startswith('git clone failed (rc=128): ') and result['msg'].endswith('. Its output: %s' % log)
    text = read(log)
    assert 'http://user:****@127.0.0.1:9/repo.git' in text and '### rc=128\n' in text, text
    assert secret not in text and secret not in repr(result), result


@pytest.mark.parametrize('case', ['etc', 'missing', 'commit', 'closed'])
def test_a_failure_keeps_git_s_cause_and_gives_the_fix_of_its_class(tmpdir, remotes, case):
    """Not a repository, a repository that is not there, a commit the repository lacks, a remote that cannot be
    reached: git's own lines stay in the message (not the hint git prints last), with the fix of that class."""
    unknown = '0123456789abcdef0123456789abcdef01234567'
    repo = {'etc': 'file:///etc', 'missing': 'file://%s/nope.git' % tmpdir, 'closed': 'http://127.0.0.1:9/x.git'}.get(
        case, remotes['main'])
    result = checkout(tmpdir, remotes, unknown if case == 'commit' else remotes['second'], repo=repo)
    assert result['failed'] is True, result
    kind, cause, fix = {
        'etc': ('not_a_repository', "fatal: '/etc' does not appear to be a git repository",
                'Fix: check the repository URL: file:///etc is not a git repository'),
        'missing': ('not_a_repository', "nope.git' does not appear to be a git repository",
                    'Fix: check the repository URL: %s is not a git repository' % repo),
        'commit': ('unknown_commit', 'not our ref %s' % unknown, 'Fix: %s has no commit %s' % (repo, unknown)),
        'closed': ('network', 'Failed to connect to 127.0.0.1 port 9', 'Fix: check the network (or the proxy)'),
    }[case]
    assert result['failure'] == kind and cause in result['cause'] and result['transient'] is (case == 'closed')
    assert cause in result['msg'] and fix in result['msg'], result['msg']
    assert 'the repository exists' not in result['msg']
    assert ('network' in result['msg']) is (case == 'closed'), result['msg']


def test_a_kept_checkout_another_user_can_change_is_refused_before_git_runs(tmpdir, remotes):
    """A kept tree that is another user's (as root: nobody's), or open to every user: no git command runs there (its
    hooks, its config's commands and the build after it would run with this user's rights)."""
    dest = str(tmpdir.join('work', 'src'))
    assert checkout(tmpdir, remotes, remotes['first'])['_rc'] == 0
    log = str(tmpdir.join('logs', 'stage.log'))
    before = read(log)
    os.chmod(dest, 0o777)
    result = checkout(tmpdir, remotes, remotes['second'])
    assert result['failed'] is True and result['failure'] == 'ownership' and result['actions'] == [], result
    assert result['msg'].startswith('the checkout %s cannot be used by user ' % dest)
    assert '%s is writable by every user (mode 0777)' % dest in result['msg']
    assert 'Fix: make it writable by you alone (chmod -R go-w %s)' % dest in result['msg']
    assert read(log) == before and git('rev-parse', 'HEAD', cwd=dest) == remotes['first']
    os.chmod(dest, 0o755)
    if os.geteuid() != 0:
        return
    nobody = pwd.getpwnam('nobody')
    for root, dirs, files in os.walk(dest):
        for name in dirs + files:
            os.lchown(os.path.join(root, name), nobody.pw_uid, nobody.pw_gid)
    os.chown(dest, nobody.pw_uid, nobody.pw_gid)
    result = checkout(tmpdir, remotes, remotes['second'])
    assert result['failed'] is True and result['failure'] == 'ownership', result
    assert '%s is owned by nobody (uid %d), not by you' % (dest, nobody.pw_uid) in result['msg']
    assert 'Fix: remove it as nobody (or ask an admin to), then run again' in result['msg']
    assert read(log) == before


@pytest.mark.parametrize('args, message', [
    (dict(commit='main'), "commit 'main' is not a full hexadecimal commit name"),
    (dict(commit='A' * 40), 'is not a full hexadecimal commit name'),
    (dict(umask='22; rm'), "umask '22; rm' is not an octal umask"),
    (dict(log_keep=0), 'log_keep must be at least 1, got 0'),
])
def test_bad_input_is_refused_before_git_runs(tmpdir, remotes, args, message):
    result = checkout(tmpdir, remotes, args.pop('commit', remotes['second']), **args)
    assert result['failed'] is True and message in result['msg'], result
    assert not tmpdir.join('work').exists()


def test_stream_hands_a_progress_line_over_while_the_command_runs(tmpdir):
    """A line ended by a carriage return (git's progress) reaches on_output before the command ends: the child waits
    for the file on_output creates when it sees that line, and would print 'late' after 20 s without it."""
    seen = str(tmpdir.join('seen'))
    child = ('import os, sys, time\n'
             'sys.stderr.write("Receiving objects:  50%% (1/2)\\r"); sys.stderr.flush()\n'
             'deadline = time.time() + 20\n'
             'while not os.path.exists(%r) and time.time() < deadline: time.sleep(0.05)\n'
             'print("in time" if os.path.exists(%r) else "late")\n' % (seen, seen))
    pieces = []

    def on_output(text):
        pieces.append(text)
        if 'Receiving objects' in text:
            open(seen, 'w').close()
    rc, out, err = stream([sys.executable, '-c', child], dict(os.environ), on_output=on_output)
    assert rc == 0 and out == 'in time\n', (out, err, pieces)
    assert pieces[0] == 'Receiving objects:  50% (1/2)\r'
