#!/usr/bin/env python3
"""The house limits on C++ code size, checked in CI (scripts/lint.sh): no function longer than
MAX_FUNCTION lines and no class longer than MAX_CLASS lines (its body in the header, plus its
member functions defined out of line). Tests are exempt: a table of cases may be long.

Function lengths come from lizard (a parser of C++ function boundaries); class bodies are read
from the clang-formatted sources, where a class or struct opens at its declaration's indent and
closes with `};` at the same indent.

    scripts/limits.py [--max-function N] [--max-class N] [paths...]
Exit 0 when every unit is within the limits, 1 naming the ones that are not, 2 on bad input.
"""
import argparse
import re
import sys
from collections import defaultdict
from pathlib import Path

MAX_FUNCTION = 120
MAX_CLASS = 700

CLASS_OPEN = re.compile(r"^(?P<indent>\s*)(?:template\s*<[^>]*>\s*)?(?:class|struct)\s+"
                        r"(?:\[\[[^\]]*\]\]\s*)?(?P<name>[A-Za-z_]\w*)(?:\s+final)?\s*(?::[^{;]*)?\{\s*$")


def sources(paths):
    for p in paths:
        path = Path(p)
        files = [path] if path.is_file() else sorted(path.rglob("*"))
        for f in files:
            if f.suffix in (".cc", ".h") and not f.name.endswith("_test.cc"):
                yield f


def class_bodies(path):
    """(name, first line, lines) of each class or struct body in the file."""
    lines = path.read_text(errors="replace").splitlines()
    out = []
    for i, line in enumerate(lines):
        m = CLASS_OPEN.match(line)
        if not m:
            continue
        close = m.group("indent") + "};"
        for j in range(i + 1, len(lines)):
            if lines[j].rstrip() == close:
                out.append((m.group("name"), i + 1, j - i + 1))
                break
    return out


def functions(files):
    import lizard  # a test and lint dependency (requirements-dev.txt)

    for f in files:
        info = lizard.analyze_file(str(f))
        for fn in info.function_list:
            yield f, fn


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", default=["src"])
    ap.add_argument("--max-function", type=int, default=MAX_FUNCTION)
    ap.add_argument("--max-class", type=int, default=MAX_CLASS)
    args = ap.parse_args()
    files = list(sources(args.paths))
    if not files:
        print("limits: no C++ sources under " + " ".join(args.paths), file=sys.stderr)
        return 2
    over = []
    members = defaultdict(int)  # Class name -> lines of its out-of-line member functions.
    for f, fn in functions(files):
        length = fn.end_line - fn.start_line + 1
        if length > args.max_function:
            over.append(f"{f}:{fn.start_line}: function {fn.name} has {length} lines "
                        f"(limit {args.max_function})")
        if "::" in fn.name:
            owner = fn.name.split("::")[-2]
            members[owner] += length
    for f in files:
        for name, line, length in class_bodies(f):
            total = length + (members[name] if f.suffix == ".h" else 0)
            if total > args.max_class:
                over.append(f"{f}:{line}: class {name} has {total} lines with its members "
                            f"(limit {args.max_class})")
    for o in over:
        print(o)
    print(f"limits: {len(files)} files, functions <= {args.max_function} lines, classes <= "
          f"{args.max_class} lines: {len(over)} over", file=sys.stderr)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
