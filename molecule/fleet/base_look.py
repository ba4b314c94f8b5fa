"""What a base holds, for molecule/fleet/move.yml: the build id of each compiled wheel installed (the world's records),
the build key of each built component (from the stamps), and a digest of its venv (paths, link targets, mtimes)."""
import glob
import hashlib
import json
import os
import site
import sys

base = sys.argv[1]
records = [json.load(open(p)) for p in glob.glob(site.getsitepackages()[0] + '/*/world_build.json')]
keys = {}
for path in glob.glob(os.path.join(base, 'state', '*.json')):
    with open(path) as handle:
        stamp = json.load(handle)
    if stamp.get('stage') == 'pydeps':
        for name, key in (stamp['key'].get('wheel_builds') or {}).items():
            keys[name] = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    elif stamp['key'].get('component') and (stamp.get('outputs') or {}).get('distributions'):
        keys[stamp['stage']] = stamp['key_id']
venv = hashlib.sha256()
for root, dirs, files in os.walk(os.path.join(base, 'venv')):
    dirs.sort()
    for name in sorted(files):
        path = os.path.join(root, name)
        venv.update(path.encode())
        venv.update(os.readlink(path).encode() if os.path.islink(path) else b'%d' % os.lstat(path).st_mtime_ns)
print(json.dumps({'ids': dict((r['component'], r['build']['id']) for r in records if 'build' in r), 'keys': keys,
                  'venv': venv.hexdigest()}))
