"""Make the collection importable as ansible_collections.primus.trainenv from a plain clone."""
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_COLLECTIONS = os.path.join(_ROOT, ".collections")
if _COLLECTIONS not in sys.path:
    sys.path.insert(0, _COLLECTIONS)
