# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type


class ModuleDocFragment(object):
    """Attributes shared by the collection's read-only modules."""

    # Modules that only read the node.
    READ_ONLY = r"""
attributes:
  check_mode:
    description: Runs normally in check mode; it only reads.
    support: full
  diff_mode:
    description: Nothing to show; it only reads.
    support: none
"""
