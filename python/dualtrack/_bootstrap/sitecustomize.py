"""Imported by Python at start-up when `dualtrack run` puts this folder on PYTHONPATH.

Activates the tracer for the run described by $DUALTRACK_RUN, then imports the sitecustomize this
one shadows (a distribution's or a virtualenv's), so the user's environment behaves as without
dualtrack.
"""

import importlib
import os
import sys


def _chain_next_sitecustomize() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    saved = list(sys.path)
    this = sys.modules.pop("sitecustomize", None)
    try:
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
        importlib.import_module("sitecustomize")
    except ImportError:
        pass
    finally:
        sys.path[:] = saved
        if this is not None:
            sys.modules["sitecustomize"] = this


_chain_next_sitecustomize()
try:
    from dualtrack import _session
except ImportError as e:
    print(f"dualtrack: tracer not active: cannot import dualtrack ({e})", file=sys.stderr)
else:
    _session.activate_from_environment()
