"""Text the bundle's readers accept: the C++ side reads strict UTF-8 JSON, in which a lone surrogate
(a Python str can hold one: a name built from undecodable bytes, `"w\\udc80"`) is no character."""

from __future__ import annotations

import json
from typing import Any


def valid_text(s: str) -> str:
    """`s` itself when it is valid Unicode; else `s` with surrogate pairs joined into their
    characters and each lone surrogate written as the text `\\udc80` (a backslash, then its code),
    as Python's "backslashreplace" spells it."""
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        joined = s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
        return joined.encode("utf-8", "backslashreplace").decode("utf-8")


def has_lone_surrogate(s: str) -> bool:
    """Whether `s` holds a surrogate that is not half of a pair: what valid_text rewrites."""
    try:
        s.encode("utf-8")
        return False
    except UnicodeEncodeError:
        joined = s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
        try:
            joined.encode("utf-8")
            return False
        except UnicodeEncodeError:
            return True


def _valid(value: Any) -> Any:
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, dict):
        return {(valid_text(k) if isinstance(k, str) else k): _valid(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_valid(v) for v in value]
    return value


def dumps(value: Any, **kwargs: Any) -> str:
    """json.dumps of `value` with every string made valid text (valid_text), so that no reader of
    the bundle meets a lone-surrogate escape it must refuse."""
    text = json.dumps(value, **kwargs)
    # ASCII output escapes every surrogate as \ud800-\udfff: only then is the walk needed.
    if "\\ud" in text or "\\uD" in text:
        text = json.dumps(_valid(value), **kwargs)
    return text
