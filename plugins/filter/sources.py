# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Source-build decisions as pure Jinja2 filters (logic in plugin_utils/source_build.py).

Each filter is documented in a YAML file of the same name next to this one.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.primus.trainenv.plugins.module_utils import stage_state
from ansible_collections.primus.trainenv.plugins.plugin_utils import source_build


def source_plans(sources, names, commits, context):
    """{name: plan} of the named git-built components."""
    plans = {}
    for name in names:
        if name not in sources:
            raise AnsibleFilterError('source_plans: the release pins have no sources.%s' % name)
        try:
            plans[name] = source_build.source_plan(name, sources[name], (commits or {}).get(name), context)
        except (source_build.SourceError, stage_state.StageError, KeyError) as exc:
            raise AnsibleFilterError('source_plans: %s' % exc)
    return plans


def sdist_plans(requirements, context):
    """{requirement: plan} of the pins built from their sdist (wheel cache directory and build key)."""
    try:
        return dict((req, source_build.sdist_plan(req, context)) for req in requirements or [])
    except (source_build.SourceError, stage_state.StageError, KeyError) as exc:
        raise AnsibleFilterError('sdist_plans: %s' % exc)


def stage_keys(plans, keys, extras, replaced=None):
    """Every stage's key: the pip stages' keys and each source plan's build key with its stage's extras."""
    return source_build.stage_keys(plans, keys, extras, replaced)


def own_distributions(plans, pip_own, extras, replaced=None):
    """{stage: [distribution names]} each stage installs and is judged by."""
    return source_build.own_distributions(plans, pip_own, extras, replaced)


def floating_to_resolve(names, sources, stamps, refresh=False):
    """The components whose floating branch must be resolved with git ls-remote now."""
    return source_build.floating_to_resolve(names, sources, stamps, refresh)


def source_commits(sources, stamps, resolved):
    """{'commits': {name: commit}, 'moves': {name: {from, to, ref}}} of every component."""
    return source_build.source_commits(sources, stamps, resolved)


class FilterModule(object):
    """primus.trainenv source-build filters."""

    def filters(self):
        return {
            'source_plans': source_plans,
            'sdist_plans': sdist_plans,
            'stage_keys': stage_keys,
            'own_distributions': own_distributions,
            'floating_to_resolve': floating_to_resolve,
            'source_commits': source_commits,
        }
