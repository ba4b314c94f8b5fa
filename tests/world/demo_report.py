# SPDX-License-Identifier: GPL-3.0-or-later
"""What `make demo` prints after a run: per-stage timings and the manifest's summary.

    demo_report.py timings BASE       the stages' build times, from $BASE/manifest/manifest.json
                                      (its ``timings``: each stage stamp's outputs.seconds)
    demo_report.py recap LOG          the PLAY RECAP of an ansible-playbook log; exit status 1
                                      when a host has changed, failed or unreachable tasks

Standard library only (it runs with any python3).
"""
import json
import os
import re
import sys

RECAP_LINE = re.compile(r'^(?P<host>\S+)\s*:\s*(?P<counts>(?:\w+=\d+\s*)+)$')


def duration(seconds):
    seconds = int(round(seconds))
    minutes, secs = divmod(seconds, 60)
    return '%dm %02ds' % (minutes, secs) if minutes else '%ds' % secs


def timings(base):
    path = os.path.join(base, 'manifest', 'manifest.json')
    try:
        with open(path, encoding='utf-8') as handle:
            manifest = json.load(handle)
    except (OSError, ValueError) as exc:
        print('demo: no readable manifest at %s (%s): did the run reach the manifest stage?' % (path, exc),
              file=sys.stderr)
        return 1
    stages = manifest.get('timings') or {}
    if not stages:
        print('demo: %s records no stage timings' % path, file=sys.stderr)
        return 1
    width = max(len(name) for name in stages)
    print('Per-stage build times (stamps\' outputs.seconds, as recorded in %s):' % path)
    for name, seconds in sorted(stages.items(), key=lambda kv: -kv[1]):
        print('  %-*s %8s' % (width, name, duration(seconds)))
    print('  %-*s %8s' % (width, 'total', duration(sum(stages.values()))))
    return 0


def parse_recap(text):
    """{host: {counter: n}} from the last PLAY RECAP of an ansible-playbook output."""
    hosts = {}
    in_recap = False
    for line in text.splitlines():
        if line.startswith('PLAY RECAP'):
            in_recap, hosts = True, {}
            continue
        if in_recap:
            match = RECAP_LINE.match(line.strip())
            if match:
                hosts[match.group('host')] = {k: int(v) for k, v in
                                              (item.split('=') for item in match.group('counts').split())}
            elif line.strip():
                in_recap = False
    return hosts


def recap(log):
    with open(log, encoding='utf-8', errors='replace') as handle:
        hosts = parse_recap(handle.read())
    if not hosts:
        print('demo: no PLAY RECAP in %s' % log, file=sys.stderr)
        return 1
    status = 0
    for host, counts in sorted(hosts.items()):
        print('  %s: %s' % (host, ' '.join('%s=%d' % kv for kv in counts.items())))
        if counts.get('changed') or counts.get('failed') or counts.get('unreachable'):
            status = 1
    return status


def main(argv):
    if len(argv) != 3 or argv[1] not in ('timings', 'recap'):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    return timings(argv[2]) if argv[1] == 'timings' else recap(argv[2])


if __name__ == '__main__':
    sys.exit(main(sys.argv))
