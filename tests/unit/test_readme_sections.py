# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""README's Troubleshooting quotes the real messages, and its figures live in one Measured section (issue 25)."""

import glob
import os
import re

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))


def readme():
    with open(os.path.join(ROOT, 'README.md')) as handle:
        return handle.read()


def section(text, title):
    start = text.index('\n## %s\n' % title)
    end = text.find('\n## ', start + 1)
    return text[start:end if end >= 0 else len(text)]


def sources():
    """The text of every role and plugin file, whitespace collapsed and Python's adjacent string literals joined."""
    parts = []
    for pattern in ('roles/**/*.yml', 'roles/**/*.j2', 'plugins/**/*.py'):
        for path in sorted(glob.glob(os.path.join(ROOT, pattern), recursive=True)):
            with open(path) as handle:
                text = handle.read()
            if path.endswith('.py'):
                text = re.sub(r'(["\'])\s*\n\s*\1', '', text)
            parts.append(re.sub(r'\s+', ' ', text))
    return '\n'.join(parts)


def test_troubleshooting_quotes_ten_real_messages_with_cause_and_fix():
    rows = [line for line in section(readme(), 'Troubleshooting').splitlines() if line.startswith('| `')]
    assert len(rows) == 10, rows
    code = sources()
    for row in rows:
        cells = [c.strip() for c in row.strip('|').split(' | ')]
        assert len(cells) == 3 and all(cells), row
        message = re.findall(r'`([^`]+)`', cells[0])[0]
        for fragment in message.split('…'):
            fragment = fragment.strip(" .,:;'()")
            if len(fragment) >= 6:
                assert fragment in code, 'README Troubleshooting quotes %r, which no role or plugin prints' % fragment


def test_figures_and_this_repository_s_commits_are_in_measured_only():
    text = readme()
    measured = section(text, 'Measured')
    outside = text.replace(measured, '')
    assert '376 s' in measured and '2.6 s after `ansible-playbook`' in measured
    for pattern in (r'\bat (commit )?[0-9a-f]{7}\b', r'\bMeasured on\b', r'\b\d+(\.\d+)? s after\b', r'\d+ min \d+ s'):
        found = re.findall('.{0,60}%s.{0,20}' % pattern, outside)
        assert not found, 'outside "Measured": %s' % found
