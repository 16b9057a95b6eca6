"""One way for the tracer to write a file: whole or not at all."""

from __future__ import annotations

import os
from collections.abc import Iterable


def write_atomic(path: str, chunks: Iterable[bytes]) -> None:
    """Writes `chunks` to a temporary file beside `path`, flushes it and renames it over `path`, so
    a reader sees the old file or the whole new one; a full disk or a folder in the way leaves no
    half-written temporary behind."""
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
