"""Finds the user-code location of a call: the innermost stack frame outside torch, dualtrack and
the Python standard library."""

from __future__ import annotations

import os
import sys
import sysconfig
from typing import TYPE_CHECKING

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


def _prefixes() -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    skip = [_HERE]
    try:
        import torch

        skip.append(os.path.dirname(os.path.abspath(torch.__file__)) + os.sep)
    except Exception:  # torch missing: nothing of it to skip
        pass
    paths = sysconfig.get_paths()
    keep = tuple(os.path.abspath(paths[k]) + os.sep for k in ("purelib", "platlib") if k in paths)
    std = tuple(os.path.abspath(paths[k]) + os.sep for k in ("stdlib", "platstdlib") if k in paths)
    return tuple(skip), std, keep


_SKIP, _STD, _KEEP = _prefixes()


def set_root(root: str) -> None:
    """Locations are reported relative to `root` (the script's folder) when they lie under it."""
    global _root
    _root = os.path.abspath(root)


def is_internal(filename: str) -> bool:
    hit = _skip_cache.get(filename)
    if hit is None:
        if filename.startswith("<") or filename.endswith(_WRAPPER_FILES):
            hit = True
        else:
            path = os.path.abspath(filename)
            hit = path.startswith(_SKIP) or (path.startswith(_STD) and not path.startswith(_KEEP))
        _skip_cache[filename] = hit
    return hit


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
    return frame_location(sys._getframe(depth + 1))


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
