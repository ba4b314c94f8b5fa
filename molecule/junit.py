# SPDX-License-Identifier: GPL-3.0-or-later
"""A one-case JUnit report of a `molecule test` run, for tests/summary.py (molecule writes none).

    junit.py SCENARIO RC SECONDS LOG OUT.xml
"""
import re
import sys
import xml.etree.ElementTree as ET

# Colour codes and other control characters are not allowed in XML 1.0 text.
ANSI = re.compile(r'\x1b\[[0-9;]*[A-Za-z]')
CONTROL = re.compile(r'[\x00-\x08\x0b\x0c\x0e-\x1f]')


def main(argv):
    if len(argv) != 6:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    scenario, rc, seconds, log, out = argv[1], int(argv[2]), float(argv[3]), argv[4], argv[5]
    suite = ET.Element('testsuite', name='molecule', tests='1', failures='0' if rc == 0 else '1', errors='0',
                       time='%.1f' % seconds)
    case = ET.SubElement(suite, 'testcase', classname='molecule', name='%s: molecule test' % scenario,
                         time='%.1f' % seconds)
    if rc != 0:
        try:
            with open(log, encoding='utf-8', errors='replace') as handle:
                tail = ''.join(handle.readlines()[-60:])
        except OSError as exc:
            tail = 'no log at %s (%s)' % (log, exc)
        failure = ET.SubElement(case, 'failure', message='molecule test -s %s exited with status %d' % (scenario, rc))
        failure.text = CONTROL.sub('', ANSI.sub('', tail))
    root = ET.Element('testsuites')
    root.append(suite)
    ET.ElementTree(root).write(out, encoding='unicode', xml_declaration=True)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
