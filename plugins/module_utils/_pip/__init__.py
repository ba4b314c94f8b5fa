# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""pip_constrained's helpers (private to this collection: no stable interface).

command: pip's command lines and environment; libs: where `packaging` and a TOML parser come from;
requirements: requests read as pip reads them; probe: what a venv holds; decide: offline decisions;
report: pip's --report plans; plan: check-mode plans for venvs that do not exist yet; outcome: what a
run changed; failure: why pip failed and what to do about it.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type
