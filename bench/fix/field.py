#!/usr/bin/env python3
"""`dualtrack fix --apply` on copies of the field corpus (bench/field): how much it fixes, and that
it breaks nothing.

For each repository: the unguarded `fixable` findings in Python files and notebooks before and
after the fix (the share fixed), the Python files that compiled before and no longer do (syntax
errors introduced), the files changed that held no unguarded finding (changes outside findings),
whether a second fix prints a diff (idempotence), the ruff findings of the F and E7 families
(pyflakes; statements: E701 `if x: y` on one line and its kind) that the fix adds to the files it
changes, and the new unguarded findings the scan reports on lines the fix wrote (a finding of a
rule the replaced line already held is counted apart, as kept). The checkouts are not
modified: each is copied first (without .git).

    python3 bench/fix/field.py --repos /work/field-repos --dualtrack build/dualtrack \
        [--unsafe-fixes]

With --unsafe-fixes the fix also applies the unsafe fixes, and the share counts the findings of
every rule that has a fix (the `replace` findings of DT201, DT202 and DT206 too).
"""

import argparse
import collections
import difflib
import json
import os
import shutil
import subprocess
import sys
import tempfile


def scan(binary, root):
    out = subprocess.run(
        [binary, "scan", root, "--format", "json", "--fail-on", "never"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if out.returncode != 0:
        raise SystemExit(f"scan of {root} failed: {out.stderr}")
    return json.loads(out.stdout)["findings"]


UNSAFE_REPLACE = ("DT201", "DT202", "DT206")  # `replace` findings with an (unsafe) fix.


def open_fixable(findings, unsafe=False):
    return [
        f
        for f in findings
        if not f["guarded"]
        and (f["severity"] == "fixable" or (unsafe and f["code"] in UNSAFE_REPLACE))
        and f["file"].endswith((".py", ".ipynb"))
    ]


def compiles(path):
    try:
        with open(path, "rb") as fh:
            source = fh.read()
        if path.endswith(".ipynb"):
            cells = json.loads(source)["cells"]
            source = "\n".join(
                "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
                for c in cells
                if c.get("cell_type") == "code"
            )
            source = "\n".join(
                "" if line.lstrip().startswith(("%", "!")) else line for line in source.split("\n")
            )
        compile(source, path, "exec")
        return True
    except Exception:
        return False


def ruff_counts(root, names):
    """(file, code) -> count of ruff's F and E7 findings in the named Python files."""
    names = [n for n in names if n.endswith(".py")]
    if not names:
        return collections.Counter()
    out = subprocess.run(
        [
            "ruff",
            "check",
            "--isolated",
            "--select",
            "F,E7",
            "--output-format",
            "json",
            "--no-cache",
            "--exit-zero",
            *names,
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    counts = collections.Counter()
    for d in json.loads(out.stdout or "[]"):
        counts[(os.path.relpath(d["filename"], root), d["code"])] += 1
    return counts


def written_lines(before, after):
    """{1-based line of `after` that the fix wrote: the 1-based lines of `before` it replaced}."""
    a = before.decode("utf-8", "replace").splitlines()
    b = after.decode("utf-8", "replace").splitlines()
    lines = {}
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag in ("replace", "insert"):
            for j in range(j1 + 1, j2 + 1):
                lines[j] = set(range(i1 + 1, i2 + 1))
    return lines


def files(root):
    out = {}
    for base, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for n in names:
            p = os.path.join(base, n)
            if os.path.islink(p) or not os.path.isfile(p):
                continue
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = fh.read()
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repos", required=True)
    p.add_argument("--dualtrack", required=True)
    p.add_argument("--unsafe-fixes", action="store_true", help="apply the unsafe fixes too")
    p.add_argument("--all", action="store_true", help="rewrite portable lines too (fix --all)")
    args = p.parse_args()
    unsafe = (["--unsafe-fixes"] if args.unsafe_fixes else []) + (["--all"] if args.all else [])
    binary = os.path.abspath(args.dualtrack)
    rows = []
    for name in sorted(os.listdir(args.repos)):
        src = os.path.join(args.repos, name)
        if not os.path.isdir(src):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            root = os.path.join(tmp, name)
            shutil.copytree(src, root, ignore=shutil.ignore_patterns(".git"), symlinks=True)
            before_findings = scan(binary, root)
            with_findings = {f["file"] for f in before_findings if not f["guarded"]}
            before = files(root)
            ruff_before = ruff_counts(root, list(before))
            fix = subprocess.run(
                [binary, "fix", root, "--apply", *unsafe],
                capture_output=True,
                text=True,
                timeout=600,
            )
            after = files(root)
            changed = sorted(f for f in after if after[f] != before.get(f))
            broken = [
                f
                for f in changed
                if f.endswith((".py", ".ipynb"))
                and compiles_bytes(before[f], f)
                and not compiles(os.path.join(root, f))
            ]
            outside = [f for f in changed if f not in with_findings]
            again = subprocess.run(
                [binary, "fix", root, *unsafe], capture_output=True, text=True, timeout=600
            )
            ruff_after = ruff_counts(root, changed)
            new_ruff = sorted(
                f"{f} {code} (+{n - ruff_before[(f, code)]})"
                for (f, code), n in ruff_after.items()
                if n > ruff_before[(f, code)]
            )
            after_findings = scan(binary, root)
            wrote = {f: written_lines(before[f], after[f]) for f in changed if f.endswith(".py")}
            # An unguarded finding on a line the fix wrote is new unless the line it replaced
            # held one of the same rule (a construct the fix left on a line it partly rewrote,
            # with its reason: DDP's device_ids beside a rewritten call).
            held = {(x["file"], x["line"], x["code"]) for x in before_findings if not x["guarded"]}
            on_written, kept = [], []
            for x in after_findings:
                replaced = wrote.get(x["file"], {}).get(x["line"])
                if x["guarded"] or replaced is None:
                    continue
                old = any((x["file"], i, x["code"]) in held for i in replaced)
                (kept if old else on_written).append(f"{x['file']}:{x['line']} {x['code']}")
            b = len(open_fixable(before_findings, args.unsafe_fixes))
            a = len(open_fixable(after_findings, args.unsafe_fixes))
            rows.append(
                dict(
                    repo=name,
                    fixable_before=b,
                    fixable_after=a,
                    files_changed=len(changed),
                    syntax_errors=broken,
                    outside=outside,
                    fix_exit=fix.returncode,
                    idempotent=again.stdout == "",
                    new_ruff=new_ruff,
                    on_written=on_written,
                    kept=kept,
                    summary=fix.stderr.strip().splitlines()[-1:],
                )
            )
    total_b = sum(r["fixable_before"] for r in rows)
    total_a = sum(r["fixable_after"] for r in rows)
    print(
        f"{'repository':28} {'fixable':>8} {'left':>5} {'fixed%':>7} {'files':>6} {'syntax':>6} "
        f"{'outside':>7} {'again':>6} {'ruff+':>6} {'wrote':>6}"
    )
    for r in rows:
        share = (
            100.0 * (r["fixable_before"] - r["fixable_after"]) / r["fixable_before"]
            if r["fixable_before"]
            else 100.0
        )
        print(
            f"{r['repo']:28} {r['fixable_before']:8} {r['fixable_after']:5} {share:7.1f} "
            f"{r['files_changed']:6} {len(r['syntax_errors']):6} {len(r['outside']):7} "
            f"{'same' if r['idempotent'] else 'DIFF':>6} {len(r['new_ruff']):6} "
            f"{len(r['on_written']):6}"
        )
    share = 100.0 * (total_b - total_a) / total_b if total_b else 100.0
    print(
        f"{'TOTAL':28} {total_b:8} {total_a:5} {share:7.1f} "
        f"{sum(r['files_changed'] for r in rows):6} "
        f"{sum(len(r['syntax_errors']) for r in rows):6} {sum(len(r['outside']) for r in rows):7} "
        f"{'':6} {sum(len(r['new_ruff']) for r in rows):6} "
        f"{sum(len(r['on_written']) for r in rows):6}"
    )
    for r in rows:
        for f in r["syntax_errors"]:
            print(f"  syntax error introduced: {r['repo']}/{f}")
        for f in r["outside"]:
            print(f"  changed without a finding: {r['repo']}/{f}")
        if not r["idempotent"]:
            print(f"  second fix changes {r['repo']} again")
        for f in r["new_ruff"]:
            print(f"  new ruff finding: {r['repo']}/{f}")
        for f in r["on_written"]:
            print(f"  new unguarded finding on a line the fix wrote: {r['repo']}/{f}")
        for f in r["kept"]:
            print(
                f"  (kept, left with its reason on a line the fix partly rewrote: {r['repo']}/{f})"
            )
    clean = all(
        not r["syntax_errors"]
        and not r["outside"]
        and r["idempotent"]
        and not r["new_ruff"]
        and not r["on_written"]
        for r in rows
    )
    return 0 if clean else 1


def compiles_bytes(data, name):
    with tempfile.NamedTemporaryFile(suffix=os.path.splitext(name)[1], delete=False) as fh:
        fh.write(data)
    try:
        return compiles(fh.name)
    finally:
        os.unlink(fh.name)


if __name__ == "__main__":
    sys.exit(main())
