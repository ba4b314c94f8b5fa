"""megatron_helpers: real make and g++ on Megatron's datasets Makefile (the world's copy of it, with the
python3-config trap), a venv of the 3.12 test python, and a load test of what was built.

The venv gets a stand-in `pybind11` whose `--includes` prints what the real one prints first (the
interpreter's include directory), and the fixture's helpers.cpp uses the CPython API under the real
module name, so no download is needed; the Makefile is Megatron's, unchanged.
"""
import json
import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time

import pytest

from module_runner import COLLECTIONS, run_module

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from world.lib.repos import MEGATRON_MAKEFILE  # noqa: E402

PYTHON312 = os.environ.get('PRIMUS_TEST_PYTHON312') or sys.executable
DATASETS = os.path.join('third_party', 'Megatron-LM', 'megatron', 'core', 'datasets')

HELPERS_CPP = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *build_exhaustive_blending_indices(PyObject *self, PyObject *args) {
    PyObject *sizes;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &sizes))
        return NULL;
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = 0; i < PyList_Size(sizes); ++i) {
        long n = PyLong_AsLong(PyList_GetItem(sizes, i));
        for (long j = 0; j < n; ++j) {
            PyObject *v = PyLong_FromSsize_t(i);
            PyList_Append(out, v);
            Py_DECREF(v);
        }
    }
    return out;
}

static PyMethodDef methods[] = {
    {"build_exhaustive_blending_indices", build_exhaustive_blending_indices, METH_VARARGS, ""},
    {NULL, NULL, 0, NULL}};
static struct PyModuleDef definition = {PyModuleDef_HEAD_INIT, "INITNAME", NULL, -1, methods};
PyMODINIT_FUNC PyInit_INITNAME(void) { return PyModule_Create(&definition); }
"""

PYBIND11_MAIN = (
    "import sys, sysconfig\n"
    "if '--includes' in sys.argv[1:]:\n"
    "    print('-I' + sysconfig.get_paths()['include'])\n"
)


def make_venv(python, path, pybind11=True, env=None):
    subprocess.run([python, '-m', 'venv', '--without-pip', path], check=True, env=env)
    venv_python = os.path.join(path, 'bin', 'python')
    if pybind11:
        purelib = subprocess.run([venv_python, '-c', "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                 check=True, capture_output=True, text=True, env=env).stdout.strip()
        os.makedirs(os.path.join(purelib, 'pybind11'))
        with open(os.path.join(purelib, 'pybind11', '__init__.py'), 'w') as handle:
            handle.write('')
        with open(os.path.join(purelib, 'pybind11', '__main__.py'), 'w') as handle:
            handle.write(PYBIND11_MAIN)
    return venv_python


@pytest.fixture(scope='module')
def venv(tmp_path_factory):
    python = make_venv(PYTHON312, str(tmp_path_factory.mktemp('venv') / 'venv'))
    ext = subprocess.run([python, '-c', "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"],
                         check=True, capture_output=True, text=True).stdout.strip()
    return python, ext


def checkout(root, name='Primus', init_name='helpers_cpp', source=None):
    """A Primus checkout with Megatron's datasets dir: the world's Makefile and a tiny helpers.cpp."""
    datasets = os.path.join(str(root), name, DATASETS)
    os.makedirs(datasets)
    with open(os.path.join(datasets, 'Makefile'), 'w') as handle:
        handle.write(MEGATRON_MAKEFILE)
    with open(os.path.join(datasets, 'helpers.cpp'), 'w') as handle:
        handle.write(source if source is not None else HELPERS_CPP.replace('INITNAME', init_name))
    return os.path.join(str(root), name), datasets


def calls(python, path):
    code = ("import importlib.util, sys; s = importlib.util.spec_from_file_location('helpers_cpp', sys.argv[1]); "
            "m = importlib.util.module_from_spec(s); s.loader.exec_module(m); "
            "print(m.build_exhaustive_blending_indices([2, 1]))")
    return subprocess.run([python, '-c', code, path], capture_output=True, text=True, check=True).stdout.strip()


def helpers_files(datasets):
    return sorted(f for f in os.listdir(datasets) if f.startswith('helpers_cpp'))


def test_builds_under_the_venv_suffix_loads_and_logs(venv, tmpdir):
    python, ext = venv
    assert ext.startswith('.cpython-3') and ext.endswith('.so')
    primus, datasets = checkout(tmpdir)
    log = tmpdir.join('logs', 'primus.log')
    result = run_module('megatron_helpers', dict(checkouts=[primus], python=python, log_path=str(log)), tmpdir,
                        check_mode=False)
    assert result['changed'] is True, result
    assert result['ext'] == ext
    target = os.path.join(datasets, 'helpers_cpp' + ext)
    assert result['checkouts'] == [dict(checkout=primus, path=datasets, status='built', file=target,
                                        reason='helpers_cpp%s does not exist' % ext)]
    # only the venv's name: the Makefile's python3-config fallback was overridden by LIBEXT
    assert helpers_files(datasets) == ['helpers_cpp' + ext]
    assert calls(python, target) == '[0, 0, 1]'
    text = log.read()
    assert 'Compiling Megatron helpers_cpp in %s' % datasets in text
    assert 'LIBEXT=%s' % ext in text and '-o helpers_cpp%s' % ext in text


def test_converged_run_runs_no_make(venv, tmpdir):
    python, ext = venv
    primus, datasets = checkout(tmpdir)
    args = dict(checkouts=[primus], python=python)
    assert run_module('megatron_helpers', args, tmpdir, check_mode=False)['changed'] is True
    target = os.path.join(datasets, 'helpers_cpp' + ext)
    before = os.stat(target)
    # no compiler on PATH: had make run, it would fail
    result = run_module('megatron_helpers', args, tmpdir, check_mode=False, env=dict(CXX='/nonexistent/g++'))
    assert result['changed'] is False, result
    assert result['checkouts'][0]['status'] == 'current'
    after = os.stat(target)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_a_source_newer_than_the_build_rebuilds(venv, tmpdir):
    python, ext = venv
    primus, datasets = checkout(tmpdir)
    args = dict(checkouts=[primus], python=python)
    run_module('megatron_helpers', args, tmpdir, check_mode=False)
    target = os.path.join(datasets, 'helpers_cpp' + ext)
    old = time.time() - 3600
    os.utime(target, (old, old))
    result = run_module('megatron_helpers', args, tmpdir, check_mode=False)
    assert result['changed'] is True and result['checkouts'][0]['status'] == 'built'
    assert result['checkouts'][0]['reason'] == 'helpers_cpp%s is older than helpers.cpp' % ext
    assert os.stat(target).st_mtime > old + 60


def test_a_stale_file_that_will_not_load_is_replaced(venv, tmpdir):
    python, ext = venv
    primus, datasets = checkout(tmpdir)
    target = os.path.join(datasets, 'helpers_cpp' + ext)
    with open(target, 'w') as handle:
        handle.write('built on another OS\n')   # newer than helpers.cpp, but no ELF
    result = run_module('megatron_helpers', dict(checkouts=[primus], python=python), tmpdir, check_mode=False)
    entry = result['checkouts'][0]
    assert entry['status'] == 'built', result
    assert entry['reason'].startswith('helpers_cpp%s does not load: ImportError' % ext)
    # The stale file was replaced by the build (its inode may be reused, so compare the content).
    with open(target, 'rb') as handle:
        assert handle.read(4) == b'\x7fELF'
    assert calls(python, target) == '[0, 0, 1]'


def test_check_mode_reports_and_builds_nothing(venv, tmpdir):
    python, ext = venv
    primus, datasets = checkout(tmpdir)
    target = os.path.join(datasets, 'helpers_cpp' + ext)
    with open(target, 'w') as handle:
        handle.write('stale\n')
    result = run_module('megatron_helpers', dict(checkouts=[primus], python=python), tmpdir, check_mode=True)
    assert result['changed'] is True and result['checkouts'][0]['status'] == 'would_build'
    with open(target) as handle:
        assert handle.read() == 'stale\n'
    assert helpers_files(datasets) == ['helpers_cpp' + ext]


def test_check_mode_before_the_venv_exists(tmpdir):
    primus = checkout(tmpdir)[0]
    result = run_module('megatron_helpers', dict(checkouts=[primus], python=str(tmpdir.join('venv/bin/python'))),
                        tmpdir, check_mode=True)
    assert result['changed'] is True and result['ext'] == ''
    assert result['checkouts'][0]['status'] == 'would_build' and result['checkouts'][0]['file'] == ''
    result = run_module('megatron_helpers', dict(checkouts=[primus], python=str(tmpdir.join('venv/bin/python'))),
                        tmpdir, check_mode=False)
    assert result['failed'] is True and 'does not exist' in result['msg'] and 'tag venv' in result['msg']


def test_missing_checkouts_are_skipped_and_repeats_built_once(venv, tmpdir):
    python, ext = venv
    primus, datasets = checkout(tmpdir)
    bare = tmpdir.join('bare-clone')     # submodules never initialised
    bare.mkdir()
    gone = str(tmpdir.join('no-such-checkout'))
    result = run_module('megatron_helpers', dict(checkouts=[gone, primus, primus + '/', str(bare)], python=python),
                        tmpdir, check_mode=False)
    assert result['changed'] is True
    assert [(e['checkout'], e['status']) for e in result['checkouts']] == [
        (gone, 'skipped_missing'), (primus, 'built'), (str(bare), 'skipped_missing')]
    assert result['checkouts'][0]['reason'] == 'the checkout does not exist'
    assert 'submodule update --init --recursive' in result['checkouts'][2]['reason']


def test_build_failure_names_the_directory(venv, tmpdir):
    python = venv[0]
    primus, datasets = checkout(tmpdir, source='int broken( {\n')
    result = run_module('megatron_helpers', dict(checkouts=[primus], python=python), tmpdir, check_mode=False)
    assert result['failed'] is True
    assert result['msg'].startswith('helpers_cpp build failed in %s: ' % datasets)
    assert "helpers.cpp:1:" in result['msg'] and 'error:' in result['msg'] and '\x1b' not in result['msg']


def test_a_build_that_will_not_load_is_reported(venv, tmpdir):
    python = venv[0]
    primus, datasets = checkout(tmpdir, init_name='helpers_other')
    result = run_module('megatron_helpers', dict(checkouts=[primus], python=python), tmpdir, check_mode=False)
    assert result['failed'] is True
    assert result['msg'] == ('helpers_cpp built but will not load in %s: ImportError: dynamic module does not '
                             'define module export function (PyInit_helpers_cpp)' % datasets)


def test_without_pybind11_fails_before_make(tmpdir):
    python = make_venv(PYTHON312, str(tmpdir.join('venv')), pybind11=False)
    primus, datasets = checkout(tmpdir)
    result = run_module('megatron_helpers', dict(checkouts=[primus], python=python), tmpdir, check_mode=False)
    assert result['failed'] is True and result['msg'].startswith('pybind11 is not usable by %s' % python)
    assert 'No module named pybind11' in result['msg']
    assert helpers_files(datasets) == []


def _copy_tree(src, dest):
    if subprocess.run(['cp', '-al', src, dest], capture_output=True, check=False).returncode != 0:
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(src, dest, symlinks=True)


@pytest.fixture
def as_nobody():
    """(run(args) -> result, work dir) running the module as `nobody`, from copies in a fresh /tmp dir (the
    controller's interpreter sits under a private /root); as a non-root user, as that user."""
    work = tempfile.mkdtemp(prefix='primus-helpers-', dir='/tmp')
    os.chmod(work, 0o755)
    try:
        if os.geteuid() != 0:
            def run_self(args, tmp):
                return run_module('megatron_helpers', args, tmp, check_mode=False)
            yield run_self, work, make_venv(PYTHON312, os.path.join(work, 'venv')), pwd.getpwuid(os.geteuid()).pw_name
            return
        python_root = os.path.join(work, 'python')
        _copy_tree(sys.base_prefix, python_root)
        site = os.path.join(work, 'site-packages')
        _copy_tree(sysconfig.get_paths()['purelib'], site)
        collection = os.path.join(work, 'collections', 'ansible_collections', 'primus', 'trainenv')
        os.makedirs(collection)
        shutil.copytree(os.path.join(COLLECTIONS, 'ansible_collections', 'primus', 'trainenv', 'plugins'),
                        os.path.join(collection, 'plugins'))
        python = os.path.join(python_root, 'bin', os.path.basename(os.path.realpath(sys.executable)))
        env = dict(PATH='/usr/bin:/bin', LD_LIBRARY_PATH=os.path.join(python_root, 'lib'), HOME=work,
                   PYTHONPATH='%s:%s' % (os.path.join(work, 'collections'), site))
        venv_python = make_venv(python, os.path.join(work, 'venv'), env=dict(env, PYTHONPATH=''))

        def run_nobody(args, tmp):
            args_file = os.path.join(work, 'args.json')
            with open(args_file, 'w') as handle:
                handle.write(json.dumps({'ANSIBLE_MODULE_ARGS': dict(args, _ansible_check_mode=False)}))
            os.chmod(args_file, 0o644)
            argv = (['runuser', '-u', 'nobody', '--', 'env', '-i'] + ['%s=%s' % kv for kv in sorted(env.items())]
                    + [python, '-m', 'ansible_collections.primus.trainenv.plugins.modules.megatron_helpers', args_file])
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, cwd=work)
            assert proc.stdout, proc.stderr
            return json.loads(proc.stdout)
        yield run_nobody, work, venv_python, 'nobody'
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _give(tree, user):
    """Everything under tree (files too) to user (by name), as that user's own clone would be."""
    entry = pwd.getpwnam(user)
    os.chown(tree, entry.pw_uid, entry.pw_gid)
    for root, dirs, files in os.walk(tree):
        for name in dirs + files:
            os.lchown(os.path.join(root, name), entry.pw_uid, entry.pw_gid)


def _ext(python, work):
    return subprocess.run([python, '-c', "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"],
                          capture_output=True, text=True, check=False,
                          env=dict(os.environ, LD_LIBRARY_PATH=os.path.join(work, 'python', 'lib'))).stdout.strip()


def test_an_unremovable_stale_file_is_refused_naming_it_before_anything_is_built(as_nobody, tmpdir):
    run, work, python, user = as_nobody
    ext = _ext(python, work)
    # Two checkouts of the user's own: one it can build in, listed first, and one holding a stale build (another
    # user's: root's, as a container's bind mount leaves it) in a directory the user made read-only.
    mine, mine_datasets = checkout(work, 'Primus')
    theirs, datasets = checkout(work, 'cache-Primus')
    for tree in (mine, theirs):
        _give(tree, user)
    stale = os.path.join(datasets, 'helpers_cpp' + ext)
    with open(stale, 'w') as handle:
        handle.write('root-owned Ubuntu 24.04 build needing GLIBCXX_3.4.32\n')
    os.chmod(datasets, 0o555)
    try:
        result = run({'checkouts': [mine, theirs], 'python': python}, tmpdir)
    finally:
        os.chmod(datasets, 0o755)
    assert result.get('failed') is True, result
    owner = pwd.getpwuid(os.stat(stale).st_uid).pw_name
    assert result['msg'].startswith('Nothing was built. %s must be replaced before helpers_cpp can be built, but %s '
                                    'cannot remove it' % (stale, user)), result['msg']
    assert 'its directory %s (owned by %s) is not writable by %s' % (datasets, user, user) in result['msg']
    assert 'The file is owned by %s' % owner in result['msg']
    assert 'sudo rm %s' % stale in result['msg'] and 'leave %s out of checkouts' % theirs in result['msg']
    with open(stale) as handle:
        assert handle.read().startswith('root-owned')
    assert helpers_files(mine_datasets) == [], 'the writable checkout was not built either'


HOSTILE_MAKEFILE = 'CANARY := $(shell touch {canary})\n' + MEGATRON_MAKEFILE


def test_a_checkout_of_another_user_runs_nothing_there_and_the_runner_s_own_builds(as_nobody, tmpdir):
    """A checkout root owns (another user, for the user running the task) with a Makefile that writes a canary and no
    helpers_cpp: refused naming the path and its owner before make runs; the canary is not written, nothing is built
    in the user's own checkout listed beside it either. Given to the user, the same checkout builds (its Makefile is
    then the user's own, so the canary is written, by the user)."""
    run, work, python, user = as_nobody
    if user != 'nobody':
        pytest.skip('another user owns the checkout only when the tests run as root (the runner is then nobody)')
    canaries = os.path.join(work, 'canaries')
    os.makedirs(canaries)
    os.chmod(canaries, 0o777)
    canary = os.path.join(canaries, 'made-by-their-makefile')
    mine, mine_datasets = checkout(work, 'Primus')
    _give(mine, user)
    theirs, datasets = checkout(work, 'their-Primus')
    with open(os.path.join(datasets, 'Makefile'), 'w') as handle:
        handle.write(HOSTILE_MAKEFILE.format(canary=canary))
    os.chmod(datasets, 0o777)   # a checkout its owner opened for others to build in: a build there would succeed
    result = run({'checkouts': [mine, theirs], 'python': python}, tmpdir)
    assert result.get('failed') is True, result
    assert result['msg'] == (
        'Nothing was built. The Megatron checkout %s cannot be built in by user nobody: %s is owned by root (uid 0), '
        'not by you. A build there runs its Makefile with your rights, so nothing is run there. Fix: build helpers_cpp '
        'there as root (run the primus stage as that user), or put a checkout of your own (git clone it) in '
        'primus_megatron_checkouts instead of %s.' % (theirs, theirs, theirs)), result['msg']
    assert not os.path.exists(canary), 'their Makefile ran'
    assert helpers_files(datasets) == [] and helpers_files(mine_datasets) == []

    _give(theirs, user)
    os.chmod(datasets, 0o755)
    result = run({'checkouts': [mine, theirs], 'python': python}, tmpdir)
    assert [e['status'] for e in result['checkouts']] == ['built', 'built'], result
    assert os.path.exists(canary) and pwd.getpwuid(os.stat(canary).st_uid).pw_name == user


def test_as_root_a_checkout_of_another_user_runs_nothing_there(venv, tmpdir):
    """Root runs the task (nothing stops an operator from it); the checkout is nobody's, its Makefile writes a canary:
    root can write everywhere, so without the check make would run nobody's Makefile as root."""
    if os.geteuid() != 0:
        pytest.skip('the task runs as root only when the tests do')
    python, _ext_suffix = venv
    canary = str(tmpdir.join('made-by-their-makefile'))
    theirs, datasets = checkout(tmpdir, 'nobody-Primus')
    with open(os.path.join(datasets, 'Makefile'), 'w') as handle:
        handle.write(HOSTILE_MAKEFILE.format(canary=canary))
    _give(theirs, 'nobody')
    result = run_module('megatron_helpers', dict(checkouts=[theirs], python=python), tmpdir, check_mode=False)
    assert result.get('failed') is True, result
    assert result['msg'].startswith('Nothing was built. The Megatron checkout %s cannot be built in by user root: %s is '
                                    'owned by nobody (uid %d), not by you.' % (theirs, theirs, pwd.getpwnam('nobody').pw_uid))
    assert 'build helpers_cpp there as nobody' in result['msg']
    assert not os.path.exists(canary), 'their Makefile ran as root'
    assert helpers_files(datasets) == []
    # Verify's look (check mode) refuses it the same way, loading nothing.
    checked = run_module('megatron_helpers', dict(checkouts=[theirs], python=python), tmpdir, check_mode=True)
    assert checked.get('failed') is True and 'is owned by nobody' in checked['msg']


@pytest.mark.parametrize('case', ['makefile', 'datasets-open', 'link-inside', 'link-to-theirs', 'gnumakefile'])
def test_what_make_reads_must_be_the_user_s_alone(as_nobody, tmpdir, case):
    """Each way another user can change what make reads in the user's own checkout: root's Makefile, a datasets
    directory every user can write, a symlink inside the checkout to root's copy, the checkout given as a link to
    root's checkout, a GNUmakefile (make reads it before Makefile) of root's. Refused naming the path; make never runs."""
    run, work, python, user = as_nobody
    if user != 'nobody':
        pytest.skip('another user owns a file of the checkout only when the tests run as root')
    canaries = os.path.join(work, 'canaries')
    os.makedirs(canaries)
    os.chmod(canaries, 0o777)
    canary = os.path.join(canaries, case)
    mine, datasets = checkout(work, 'Primus')
    their_root, their_datasets = checkout(work, 'root-Primus')
    with open(os.path.join(their_datasets, 'Makefile'), 'w') as handle:
        handle.write(HOSTILE_MAKEFILE.format(canary=canary))
    _give(mine, user)
    given, expected = mine, None
    if case == 'makefile':
        os.chown(os.path.join(datasets, 'Makefile'), 0, 0)
        with open(os.path.join(datasets, 'Makefile'), 'a') as handle:
            handle.write('X := $(shell touch %s)\n' % canary)
        expected = '%s/Makefile is owned by root (uid 0), not by you' % datasets
    elif case == 'datasets-open':
        os.chmod(datasets, 0o777)
        expected = '%s is writable by every user (mode 0777)' % datasets
    elif case == 'link-inside':
        megatron = os.path.join(mine, 'third_party', 'Megatron-LM')
        shutil.rmtree(megatron)
        os.symlink(os.path.join(their_root, 'third_party', 'Megatron-LM'), megatron)
        os.lchown(megatron, pwd.getpwnam(user).pw_uid, -1)
        expected = '%s is a symbolic link (made by %s): a link inside the tree can point' % (megatron, user)
    elif case == 'link-to-theirs':
        given = os.path.join(work, 'link-Primus')
        os.symlink(their_root, given)
        os.lchown(given, pwd.getpwnam(user).pw_uid, -1)
        expected = 'The Megatron checkout %s (the real path of %s) cannot be built in by user nobody: %s is owned by ' \
            'root (uid 0), not by you' % (their_root, given, their_root)
    else:
        with open(os.path.join(datasets, 'GNUmakefile'), 'w') as handle:
            handle.write('default:\n\ttouch %s\n' % canary)
        expected = '%s/GNUmakefile is owned by root (uid 0), not by you' % datasets
    result = run({'checkouts': [given], 'python': python}, tmpdir)
    assert result.get('failed') is True and result['msg'].startswith('Nothing was built. The Megatron checkout'), result
    assert expected in result['msg'], result['msg']
    assert not os.path.exists(canary)
    assert helpers_files(datasets) == [] and helpers_files(their_datasets) == []


def test_an_extension_another_user_owns_is_replaced_never_loaded(as_nobody, tmpdir):
    """A helpers_cpp newer than helpers.cpp, root's, in the user's own checkout: loading it would run its code (here
    a constructor that writes a canary). It is replaced by a build of the user's, never loaded."""
    run, work, python, user = as_nobody
    if user != 'nobody':
        pytest.skip('another user owns the file only when the tests run as root')
    ext = _ext(python, work)
    canaries = os.path.join(work, 'canaries')
    os.makedirs(canaries)
    os.chmod(canaries, 0o777)
    canary = os.path.join(canaries, 'loaded')
    mine, datasets = checkout(work, 'Primus')
    _give(mine, user)
    source = os.path.join(work, 'planted.c')
    with open(source, 'w') as handle:
        handle.write('#include <stdio.h>\n__attribute__((constructor)) static void planted(void) '
                     '{ FILE *f = fopen("%s", "w"); if (f) fclose(f); }\n' % canary)
    planted = os.path.join(datasets, 'helpers_cpp' + ext)
    subprocess.run(['cc', '-shared', '-fPIC', '-o', planted, source], check=True)
    os.chown(planted, 0, 0)
    result = run({'checkouts': [mine], 'python': python}, tmpdir)
    entry = result['checkouts'][0]
    assert entry['status'] == 'built', result
    assert entry['reason'] == ('helpers_cpp%s is owned by root (uid 0), not by you: it is not loaded (that runs its '
                               'code) but replaced' % ext)
    assert not os.path.exists(canary), 'the planted extension was loaded'
    assert pwd.getpwuid(os.stat(planted).st_uid).pw_name == user


def test_removal_rules_follow_unlink_semantics(tmpdir):
    from ansible_collections.primus.trainenv.plugins.module_utils import megatron_helpers as mh
    directory = tmpdir.mkdir('datasets')
    stale = directory.join('helpers_cpp.so')
    stale.write('x')
    plain, file_stat = os.stat(str(directory)), os.stat(str(stale))
    os.chmod(str(directory), 0o1777)
    sticky = os.stat(str(directory))
    other = file_stat.st_uid + 4242
    assert mh.removal_problem(str(directory), plain, False, file_stat, other) == 'not_writable'
    assert mh.removal_problem(str(directory), plain, True, file_stat, other) is None   # a read-only file goes (rm -f)
    # /tmp-like sticky directory: only the file's or the directory's owner may remove it
    assert mh.removal_problem(str(directory), sticky, True, file_stat, other) == 'sticky'
    assert mh.removal_problem(str(directory), sticky, True, file_stat, file_stat.st_uid) is None
    assert mh.removal_problem(str(directory), sticky, True, None, other) is None       # nothing to remove
    assert mh.removal_problem(str(directory), sticky, True, file_stat, 0) is None


def test_suffix_and_checkout_rules(tmpdir):
    from ansible_collections.primus.trainenv.plugins.module_utils import megatron_helpers as mh
    assert mh.extension_name('.cpython-312-x86_64-linux-gnu.so\n') == 'helpers_cpp.cpython-312-x86_64-linux-gnu.so'
    for bad in ('', 'None', '.pyd', '../x.so'):
        with pytest.raises(ValueError):
            mh.extension_name(bad)
    with pytest.raises(ValueError) as info:
        mh.extension_name('')
    assert str(info.value) == "could not determine this interpreter's extension suffix"
    tmpdir.mkdir('Primus')
    os.symlink(str(tmpdir.join('Primus')), str(tmpdir.join('link')))
    assert mh.unique_checkouts([str(tmpdir.join('Primus')), str(tmpdir.join('link')), str(tmpdir.join('Primus')) + '/.',
                                str(tmpdir.join('gone'))]) == [str(tmpdir.join('Primus')), str(tmpdir.join('gone'))]
    assert mh.build_error_line('\x1b[01m\x1b[Khelpers.cpp:3:1:\x1b[m\x1b[K \x1b[01;31merror: \x1b[mexpected\nmake: *** Error 1\n') \
        == 'helpers.cpp:3:1: error: expected'


def test_a_run_waits_for_another_that_builds_in_the_same_checkout(venv, tmpdir):
    """The other run holds the datasets directory's flock (as this module does while it builds): this one waits
    until it is released, then finds its build current or builds (never while the other writes the file)."""
    python, ext = venv
    primus, datasets = checkout(tmpdir)
    code = ("import fcntl, os, sys, time\n"
            "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\n"
            "print('held', flush=True)\n"
            "time.sleep(float(sys.argv[2]))\n")
    other = subprocess.Popen([sys.executable, '-c', code, datasets, '3'], stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout.readline().strip() == 'held'
        log = tmpdir.join('primus.log')
        result = run_module('megatron_helpers', dict(checkouts=[primus], python=python, log_path=str(log)), tmpdir,
                            check_mode=False)
        # the module returned only after the other run let go of the directory
        assert other.poll() is not None
    finally:
        other.kill()
        other.wait()
    assert result['checkouts'][0]['status'] == 'built', result
    assert 'waiting for another run that builds helpers_cpp in %s (up to 600 s)' % datasets in log.read()
