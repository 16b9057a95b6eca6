"""Finds the user-code location of a call: the innermost stack frame outside torch, dualtrack, the
Python standard library and installed packages."""

from __future__ import annotations

import os
import sys
import sysconfig
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from types import FrameType, TracebackType
    from typing import TypedDict

    # For the checker only: the tracer's locations stay plain dicts at run time.
    class Location(TypedDict):
        file: str
        line: int
        function: str


_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_skip_cache: dict[str, bool] = {}
# Decorator modules outside the standard library that sit between user code and torch.
_WRAPPER_FILES = ("typing_extensions.py",)
_root = os.getcwd()


def _runtime() -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """dualtrack's and torch's folders, the standard library's, and the site folders inside it."""
    own = [_HERE]
    try:
        import torch

        own.append(os.path.dirname(os.path.abspath(torch.__file__)) + os.sep)
    except Exception:  # torch missing: nothing of it to skip
        pass
    paths = sysconfig.get_paths()
    site = tuple(os.path.abspath(paths[k]) + os.sep for k in ("purelib", "platlib") if k in paths)
    std = tuple(os.path.abspath(paths[k]) + os.sep for k in ("stdlib", "platstdlib") if k in paths)
    return tuple(own), std, site


_RUNTIME, _STD, _SITE = _runtime()
_runtime_cache: dict[str, bool] = {}


def _classified(cache: dict[str, bool], filename: str, test: Callable[[str], bool]) -> bool:
    """`test` of the file's absolute path, remembered per file name; generated code (`<string>`)
    and decorator modules are never the user's."""
    hit = cache.get(filename)
    if hit is None:
        if filename.startswith("<") or filename.endswith(_WRAPPER_FILES):
            hit = True
        else:
            hit = test(os.path.abspath(filename))
        cache[filename] = hit
    return hit


def is_runtime(filename: str) -> bool:
    """Whether `filename` is torch's, dualtrack's or the standard library's: what --redirect-cuda
    leaves alone. Installed packages (timm, transformers) are not: their CUDA queries are the
    project's, answered as on the cluster."""
    return _classified(
        _runtime_cache,
        filename,
        lambda path: (
            path.startswith(_RUNTIME) or (path.startswith(_STD) and not path.startswith(_SITE))
        ),
    )


def _prefixes() -> tuple[str, ...]:
    skip = list(_RUNTIME)
    paths = sysconfig.get_paths()
    # Installed packages (numpy, timm, transformers) are not the project: the location of an
    # operator they run is the user's call into them. Folders of every site in use (a venv's, the
    # user's, the system's) count, also those sysconfig does not name.
    for k in ("purelib", "platlib", "stdlib", "platstdlib"):
        if k in paths:
            skip.append(os.path.abspath(paths[k]) + os.sep)
    try:
        import site

        skip.extend(os.path.abspath(p) + os.sep for p in site.getsitepackages())
        skip.append(os.path.abspath(site.getusersitepackages()) + os.sep)
    except Exception:  # a virtualenv's old site module lacks them: the sysconfig folders stay
        pass
    return tuple(skip)


_SKIP = _prefixes()
# Any site folder, also of another interpreter's layout (Debian's dist-packages, a conda env).
_SITE_PARTS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)


def set_root(root: str) -> None:
    """Locations are reported relative to `root` (the script's folder) when they lie under it."""
    global _root
    _root = os.path.abspath(root)


def is_internal(filename: str) -> bool:
    """Whether an op called from `filename` is located further out: torch, dualtrack, the
    standard library and every installed package are not the project."""
    return _classified(
        _skip_cache,
        filename,
        lambda path: path.startswith(_SKIP) or any(part in path for part in _SITE_PARTS),
    )


def relative(filename: str) -> str:
    path = os.path.abspath(filename)
    try:
        rel = os.path.relpath(path, _root)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def frame_location(frame: FrameType | None) -> Location | None:
    """{"file", "line", "function"} of the first user frame at or above `frame`, or None."""
    while frame is not None:
        code = frame.f_code
        if not is_internal(code.co_filename):
            return {
                "file": relative(code.co_filename),
                "line": frame.f_lineno,
                "function": code.co_name,
            }
        frame = frame.f_back
    return None


def caller_location(depth: int = 1) -> Location | None:
    """The first user frame at or above the frame `depth` levels above the caller. A stack
    shallower than `depth` (a module-level call, a callback from C) starts at the outermost frame:
    sys._getframe(depth) would raise into the user's code instead."""
    frame: FrameType | None = sys._getframe(1)
    for _ in range(depth):
        if frame is None or frame.f_back is None:
            break
        frame = frame.f_back
    return frame_location(frame)


def is_own_frame(filename: str) -> bool:
    """Whether code in `filename` is dualtrack's own package (the tracer), not torch's or the
    user's."""
    return os.path.abspath(filename).startswith(_HERE)


def traceback_location(tb: TracebackType | None) -> Location | None:
    """The innermost user frame of a traceback, or None."""
    best: Location | None = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if not is_internal(code.co_filename):
            best = {
                "file": relative(code.co_filename),
                "line": tb.tb_lineno,
                "function": code.co_name,
            }
        tb = tb.tb_next
    return best
