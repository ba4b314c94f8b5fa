"""make demo's report (tests/world/demo_report.py) and make molecule's JUnit file (molecule/junit.py)."""
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, 'tests', 'world'))

import demo_report  # noqa: E402

RUN = """TASK [primus.trainenv.verify : Check] ***
ok: [localhost]

PLAY RECAP *********************************************************************
localhost                  : ok=180  changed=%d    unreachable=0    failed=0    skipped=95   rescued=0    ignored=0

"""


def test_recap_of_the_last_play_is_read():
    earlier = RUN % 7
    hosts = demo_report.parse_recap(earlier + 'PLAY [again] ***\n' + RUN % 0)
    assert hosts == {'localhost': {'ok': 180, 'changed': 0, 'unreachable': 0, 'failed': 0, 'skipped': 95,
                                   'rescued': 0, 'ignored': 0}}


def test_recap_fails_on_a_change(tmp_path, capsys):
    log = tmp_path / 'run2.log'
    log.write_text(RUN % 2)
    assert demo_report.recap(str(log)) == 1
    assert 'changed=2' in capsys.readouterr().out
    log.write_text(RUN % 0)
    assert demo_report.recap(str(log)) == 0


def test_recap_missing_is_an_error(tmp_path, capsys):
    log = tmp_path / 'run.log'
    log.write_text('ERROR! the playbook could not be found\n')
    assert demo_report.recap(str(log)) == 1
    assert 'no PLAY RECAP' in capsys.readouterr().err


def test_timings_slowest_first_with_total(tmp_path, capsys):
    (tmp_path / 'manifest').mkdir()
    (tmp_path / 'manifest' / 'manifest.json').write_text(json.dumps({'timings': {'venv': 4.2, 'te': 95, 'torch': 30}}))
    assert demo_report.timings(str(tmp_path)) == 0
    lines = capsys.readouterr().out.splitlines()[1:]
    assert [line.split()[0] for line in lines] == ['te', 'torch', 'venv', 'total']
    assert lines[0].split()[1:] == ['1m', '35s'] and lines[-1].split()[1:] == ['2m', '09s']


def test_timings_without_manifest(tmp_path, capsys):
    assert demo_report.timings(str(tmp_path)) == 1
    assert 'did the run reach the manifest stage' in capsys.readouterr().err


def test_molecule_junit_failure_carries_the_log_tail(tmp_path):
    log = tmp_path / 'molecule.txt'
    # molecule colours its output: the escape codes are not XML and must not break the report.
    log.write_text(''.join('line %d\n' % i for i in range(99)) + '\x1b[31mline 99\x1b[0m \x07\n')
    out = tmp_path / 'molecule.xml'
    subprocess.run([sys.executable, os.path.join(REPO, 'molecule', 'junit.py'), 'default', '2', '61.5', str(log),
                    str(out)], check=True)
    suite = ET.parse(str(out)).getroot()[0]
    assert suite.get('failures') == '1' and suite.get('time') == '61.5'
    failure = suite.find('testcase/failure')
    assert 'exited with status 2' in failure.get('message')
    assert 'line 99' in failure.text and 'line 39\n' not in failure.text
    subprocess.run([sys.executable, os.path.join(REPO, 'molecule', 'junit.py'), 'default', '0', '1', str(log),
                    str(out)], check=True)
    assert ET.parse(str(out)).getroot()[0].find('testcase/failure') is None
