# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A Sphinx extension for `make docs`: the site builds without network.

antsibull-docs' pages refer to ansible-core's documentation (ansible.builtin modules, the common return values, action
plugins) by Sphinx labels that intersphinx resolves from docs.ansible.com's inventory, which must be downloaded. This
resolves exactly those labels to their pages on docs.ansible.com instead, so the build needs no inventory and stays
strict: any other label that does not resolve (a broken link of the manual, say) still fails it.
"""
import re

from docutils import nodes

ANSIBLE_DOCS = 'https://docs.ansible.com/projects/ansible/devel/'
PAGES = {
    'common_return_values': 'reference_appendices/common_return_values.html',
    'action_plugins': 'plugins/action.html',
    'ansible_configuration_settings': 'reference_appendices/config.html',
}
BUILTIN = re.compile(r'^ansible_collections\.ansible\.builtin\.(\w+?)_(module|filter|test|lookup|callback|connection|'
                     r'inventory|become|cache|shell|strategy|vars)(?:__.*)?$')


def ansible_core_url(label):
    """The docs.ansible.com page of a label of ansible-core's documentation, or None."""
    if label in PAGES:
        return ANSIBLE_DOCS + PAGES[label]
    match = BUILTIN.match(label)
    if match:
        return '%scollections/ansible/builtin/%s_%s.html' % (ANSIBLE_DOCS, match.group(1), match.group(2))
    return None


def resolve(app, env, node, contnode):
    """Sphinx's missing-reference event: a std:ref label of ansible-core becomes a link to its page."""
    if node.get('refdomain') != 'std' or node.get('reftype') != 'ref':
        return None
    url = ansible_core_url(node.get('reftarget', ''))
    if url is None:
        return None
    reference = nodes.reference('', '', internal=False, refuri=url)
    reference.append(contnode)
    return reference


def setup(app):
    app.connect('missing-reference', resolve)
    return {'parallel_read_safe': True, 'parallel_write_safe': True}
