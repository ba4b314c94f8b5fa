"""Make the collection importable as ansible_collections.primus.trainenv from a plain clone."""
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_COLLECTIONS = os.path.join(_ROOT, ".collections")
if _COLLECTIONS not in sys.path:
    sys.path.insert(0, _COLLECTIONS)
# tests/ itself, for the helpers the unit and functional tests share (stage_registry).
_TESTS = os.path.join(_ROOT, 'tests')
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)
