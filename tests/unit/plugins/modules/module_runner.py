"""Run a module of the collection as Ansible runs it: its own process, arguments from a JSON file."""
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
COLLECTIONS = os.path.join(ROOT, '.collections')


def run_module(name, args, tmpdir, env=None, check_mode=True, diff=False, umask=None):
    """Return the module's JSON result plus '_rc' (its exit code); umask: the module process's umask."""
    args_file = tmpdir.join('args-%s.json' % name)
    args_file.write(json.dumps({'ANSIBLE_MODULE_ARGS': dict(args, _ansible_check_mode=check_mode, _ansible_diff=diff)}))
    environ = dict(os.environ, PYTHONPATH=COLLECTIONS)
    environ.update(env or {})
    argv = [sys.executable, '-m', 'ansible_collections.primus.trainenv.plugins.modules.' + name, str(args_file)]
    proc = subprocess.run(argv, env=environ, capture_output=True, text=True, timeout=60, check=False,
                          umask=-1 if umask is None else umask)
    result = json.loads(proc.stdout)
    result['_rc'] = proc.returncode
    return result
