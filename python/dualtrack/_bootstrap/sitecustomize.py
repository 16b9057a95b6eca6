"""Imported by Python at start-up when `dualtrack run` puts this folder on PYTHONPATH.

Activates the tracer for the run described by $DUALTRACK_RUN, then imports the sitecustomize this
one shadows (a distribution's or a virtualenv's), so the user's environment behaves as without
dualtrack.

The tracer's package is loaded from this file's own folder under a private name, never as whatever
`dualtrack` comes first on sys.path: a project's own `dualtrack.py` (beside its train.py) neither
replaces the tracer nor is replaced by it. The script's `import dualtrack` finds what it finds
without dualtrack run; where that is this package, it is the very module the tracer runs in, so
`dualtrack.capture()` reaches the run's session.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import ModuleType

_PRIVATE = "_dualtrack_tracer"  # The name the tracer's package is loaded under.
_PUBLIC = "dualtrack"


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


def _load_tracer_package(pkg_dir: str) -> ModuleType:
    """The package in `pkg_dir` (this file's parent folder) as module _PRIVATE."""
    loaded = sys.modules.get(_PRIVATE)
    if loaded is not None:
        return loaded
    spec = importlib.util.spec_from_file_location(
        _PRIVATE, os.path.join(pkg_dir, "__init__.py"), submodule_search_locations=[pkg_dir]
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"no package in {pkg_dir}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[_PRIVATE] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(_PRIVATE, None)
        raise
    return module


class _Alias(importlib.abc.Loader):
    """Loads a name as a module already loaded under another: the module keeps its own spec."""

    def __init__(self, module: ModuleType) -> None:
        self.module = module
        self.spec = module.__spec__

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return self.module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self.spec  # importlib stamped the alias's spec on it.


class _PublicName(importlib.abc.MetaPathFinder):
    """`import dualtrack` (and `dualtrack.<sub>`) as the script would import it without dualtrack
    run: where sys.path leads to the tracer's package, it is the loaded tracer; elsewhere (the
    project's own module or package) the import goes on as usual."""

    def __init__(self, package: ModuleType, pkg_dir: str) -> None:
        self.package = package
        self.pkg_dir = os.path.realpath(pkg_dir)

    def _is_tracer(self, spec: importlib.machinery.ModuleSpec | None) -> bool:
        where = spec.submodule_search_locations if spec is not None else None
        return bool(where) and any(os.path.realpath(p) == self.pkg_dir for p in where or ())

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == _PUBLIC:
            if not self._is_tracer(importlib.machinery.PathFinder.find_spec(fullname, path)):
                return None
            module = self.package
        elif fullname.startswith(_PUBLIC + ".") and sys.modules.get(_PUBLIC) is self.package:
            private = _PRIVATE + fullname[len(_PUBLIC) :]
            if importlib.util.find_spec(private) is None:
                return None  # The usual search then fails under the name the script used.
            module = importlib.import_module(private)
        else:
            return None
        return importlib.util.spec_from_loader(
            fullname, _Alias(module), is_package=hasattr(module, "__path__")
        )


def _main() -> None:
    pkg_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        package = _load_tracer_package(pkg_dir)
        session = importlib.import_module(_PRIVATE + "._session")
    except ImportError as e:
        print(f"dualtrack: tracer not active: cannot import dualtrack ({e})", file=sys.stderr)
        return
    if not any(isinstance(f, _PublicName) for f in sys.meta_path):
        sys.meta_path.insert(0, _PublicName(package, pkg_dir))
    session.activate_from_environment()


_chain_next_sitecustomize()
_main()
