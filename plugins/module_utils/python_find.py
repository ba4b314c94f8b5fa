# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Choosing the interpreter a venv is built from, in the seed's order (pure functions)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

# Printed by a candidate interpreter: its version and whether it can build a venv with pip.
PROBE = (
    "import sys\n"
    "try:\n"
    "    import venv, ensurepip\n"
    "    ok = 'yes'\n"
    "except Exception as exc:\n"
    "    ok = 'no: %s' % exc\n"
    "print('%d.%d.%d' % sys.version_info[:3])\n"
    "print(ok)\n"
)

_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")


def parse_probe(rc, out):
    """Return (full_version or None, venv_ok, problem) from PROBE's output."""
    lines = [line.strip() for line in (out or "").splitlines() if line.strip()]
    if rc != 0 or len(lines) < 2 or not _VERSION.match(lines[0]):
        return None, False, "does not run (rc=%s)" % rc
    if lines[1] != "yes":
        return lines[0], False, "has no venv/ensurepip (%s)" % lines[1][4:]
    return lines[0], True, ""


def major_minor(version):
    match = _VERSION.match(version or "")
    return "%s.%s" % (match.group(1), match.group(2)) if match else None


def uv_glob_sort_key(path):
    """uv installs cpython-3.12.<patch>-<platform>; prefer the newest patch, then the name."""
    match = re.search(r"cpython-(\d+)\.(\d+)\.(\d+)", path)
    patch = tuple(int(x) for x in match.groups()) if match else (0, 0, 0)
    return (tuple(-x for x in patch), path)


def choose(candidates, wanted):
    """Pick the first qualifying candidate.

    candidates: list of dicts {path, source, version, venv_ok, problem} in preference order.
    Returns (chosen or None, rejected list of "path (source): reason").
    """
    rejected = []
    for cand in candidates:
        have = major_minor(cand.get("version"))
        if cand.get("version") is None:
            rejected.append("%s (%s): %s" % (cand["path"], cand["source"], cand.get("problem") or "does not run"))
        elif have != wanted:
            rejected.append("%s (%s): is Python %s, not %s" % (cand["path"], cand["source"], have, wanted))
        elif not cand.get("venv_ok"):
            rejected.append("%s (%s): %s" % (cand["path"], cand["source"], cand.get("problem")))
        else:
            return cand, rejected
    return None, rejected
