#!/usr/bin/env python3
"""Score dualtrack's scan and audit against the hand-labelled field corpus.

Not part of CI: the developer fetches the repositories listed in
bench/field/repos.json (checkouts as DIR/NAME), then runs

    python3 bench/field/score.py --repos DIR --dualtrack build/dualtrack

It prints one row per repository and the totals (recall, sampled precision,
guard/class agreement, verdict agreement), lists the misses and the sampled
findings still to adjudicate, and writes the details to --out. Exit status: 0
whenever it could measure (it is a measuring tool, not a gate), 2 on bad input.
Python 3 standard library only. See bench/field/README.md for the method.
"""

import argparse
import io
import json
import os
import tokenize
import random
import subprocess
import sys
import tempfile

LABEL_CLASSES = {"device", "library", "extension", "environment"}
SEVERITIES = {"portable", "fixable", "replace", "blocker"}
VERDICTS = {"mac-ready", "dev-only", "cuda-only"}
JUDGEMENTS = {"tp-missed-label", "fp"}


class BadInput(Exception):
    """Input the script cannot measure from (exit 2)."""


def warn(msg):
    print(f"warning: {msg}", file=sys.stderr)


def norm_path(p):
    p = p.replace("\\", "/")
    while p.startswith("./"):
        p = p[2:]
    return p.strip("/")


def in_scope(path, scope):
    path = norm_path(path)
    for s in scope:
        s = norm_path(s)
        if s in ("", ".") or path == s or path.startswith(s + "/"):
            return True
    return False


# ---------------------------------------------------------------- inputs


def load_json(path, what):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise BadInput(f"{path}: cannot read {what}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise BadInput(f"{path}:{e.lineno}: invalid JSON in {what}: {e.msg}") from None


def load_labels(path):
    d = load_json(path, "labels")
    if not isinstance(d, dict):
        raise BadInput(f"{path}: labels must be a JSON object")
    for key in ("repo", "commit", "scope", "findings", "experiments"):
        if key not in d:
            raise BadInput(f"{path}: labels lack '{key}'")
    if not isinstance(d["scope"], list) or not d["scope"]:
        raise BadInput(f"{path}: 'scope' must be a non-empty list of paths")
    for i, f in enumerate(d["findings"]):
        where = f"{path}: findings[{i}]"
        if not isinstance(f, dict) or not isinstance(f.get("file"), str):
            raise BadInput(f"{where}: needs a 'file' string")
        if not isinstance(f.get("line"), int) or f["line"] < 0:
            raise BadInput(f"{where}: needs a non-negative integer 'line'")
        if f["line"] == 0 and not f.get("file_level"):
            raise BadInput(f"{where}: line 0 is only allowed with file_level: true")
        if f.get("class") not in LABEL_CLASSES:
            raise BadInput(f"{where}: class must be one of {sorted(LABEL_CLASSES)}")
        if not isinstance(f.get("guarded"), bool):
            raise BadInput(f"{where}: 'guarded' must be true or false")
        if f.get("severity") not in SEVERITIES:
            raise BadInput(f"{where}: severity must be one of {sorted(SEVERITIES)}")
        if not in_scope(f["file"], d["scope"]):
            raise BadInput(f"{where}: {f['file']} is outside the labels' scope")
    for i, e in enumerate(d["experiments"]):
        where = f"{path}: experiments[{i}]"
        if not isinstance(e, dict) or not isinstance(e.get("entry"), str):
            raise BadInput(f"{where}: needs an 'entry' string")
        if e.get("verdict") not in VERDICTS:
            raise BadInput(f"{where}: verdict must be one of {sorted(VERDICTS)}")
    return d


def load_adjudications(path):
    if not os.path.exists(path):
        return []
    d = load_json(path, "adjudications")
    if not isinstance(d, list):
        raise BadInput(f"{path}: adjudications must be a JSON list")
    for i, a in enumerate(d):
        if (
            not isinstance(a, dict)
            or not isinstance(a.get("file"), str)
            or not isinstance(a.get("line"), int)
        ):
            raise BadInput(f"{path}: [{i}] needs 'file' and integer 'line'")
        if a.get("judgement") not in JUDGEMENTS:
            raise BadInput(f"{path}: [{i}] judgement must be one of {sorted(JUDGEMENTS)}")
    return d


# ---------------------------------------------------------------- running dualtrack


def run(cmd, timeout, cwd=None):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return None, "", f"timed out after {timeout}s"
    except OSError as e:
        return None, "", str(e)


def checkout_commit(path):
    """HEAD of path when path itself is the top of a git checkout, else None."""
    rc, out, _ = run(["git", "-C", path, "rev-parse", "--show-toplevel", "HEAD"], 30)
    if rc != 0:
        return None
    lines = out.split()
    if len(lines) != 2 or os.path.realpath(lines[0]) != os.path.realpath(path):
        return None  # a plain tree inside some other repository
    return lines[1]


def scan(binary, path, timeout):
    rc, out, err = run([binary, "scan", path, "--format", "json", "--fail-on", "never"], timeout)
    if rc is None or rc not in (0, 1):
        return None, f"scan failed (exit {rc}): {err.strip()[:300]}"
    try:
        doc = json.loads(out)
    except json.JSONDecodeError as e:
        return None, f"scan printed invalid JSON: {e.msg}"
    findings = []
    for f in doc.get("findings", []):
        if not isinstance(f, dict) or "file" not in f or "line" not in f:
            continue
        findings.append(
            {
                "file": norm_path(str(f["file"])),
                # A notebook's labels give lines of the .ipynb file (what a reader sees in
                # `grep -n`); the scan's `file_line` is that line, `line` the line in the cell.
                "line": int(f.get("file_line") or f["line"] or 0),
                "code": f.get("code", ""),
                "class": f.get("class"),
                "guarded": bool(f.get("guarded")),
                "severity": f.get("severity"),
                "message": f.get("message", ""),
            }
        )
    return findings, None


def audit_supports_format(binary):
    rc, out, err = run([binary, "audit", "--help"], 60)
    return "--format" in (out + err)


def audit_verdict(binary, path, entry, with_format, timeout):
    """The verdict word of `audit PATH --entry ENTRY`, or (None, why)."""
    if with_format:
        # audit also writes its report files: into a scratch folder, never the caller's tree.
        with tempfile.TemporaryDirectory() as tmp:
            rc, out, err = run(
                [
                    binary,
                    "audit",
                    os.path.abspath(path),
                    "--entry",
                    entry,
                    "--format",
                    "json",
                    "-o",
                    os.path.join(tmp, "report.html"),
                ],
                timeout,
                cwd=tmp,
            )
        if rc is None:
            return None, err
        try:
            doc = json.loads(out)
            v = doc.get("verdict")
            if v is None and doc.get("experiments"):  # dualtrack.audit/1: one per experiment.
                v = doc["experiments"][0].get("verdict")
        except (json.JSONDecodeError, AttributeError):
            return None, f"audit printed no JSON (exit {rc}): {err.strip()[:200]}"
        return (v, None) if isinstance(v, str) else (None, "no verdict in the report")
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        rc, out, err = run([binary, "audit", path, "--entry", entry, "-o", report], timeout)
        if rc is None:
            return None, err
        if not os.path.exists(report):
            return None, f"audit wrote no report (exit {rc}): {err.strip()[:200]}"
        try:
            with open(report, encoding="utf-8") as f:
                v = json.load(f).get("verdict")
        except (OSError, json.JSONDecodeError, AttributeError) as e:
            return None, f"unreadable audit report: {e}"
        return (v, None) if isinstance(v, str) else (None, "no verdict in the report")


# ---------------------------------------------------------------- matching


_STATEMENTS = {}


def statement_end(root, rel, line):
    """The last physical line of the Python statement that starts on `line` (labels sit on a
    statement's first line; the scan may report the construct's own line inside it). Read with
    Python's own tokenizer, so the rule is exact and independent of dualtrack."""
    path = os.path.join(root, rel)
    if rel.endswith(".sh") or os.path.basename(rel).startswith("Dockerfile"):
        return shell_command_end(path, line)
    if rel.endswith(".ipynb"):
        if path not in _STATEMENTS:
            _STATEMENTS[path] = notebook_statements(path)
        return max(line, _STATEMENTS[path].get(line, line))
    if not rel.endswith(".py"):
        return line
    if path not in _STATEMENTS:
        ends = {}
        try:
            with open(path, "rb") as fh:
                start = None
                for tok in tokenize.tokenize(fh.readline):
                    if tok.type in (
                        tokenize.ENCODING,
                        tokenize.NL,
                        tokenize.COMMENT,
                        tokenize.INDENT,
                        tokenize.DEDENT,
                    ):
                        continue
                    if start is None:
                        start = tok.start[0]
                    if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                        ends[start] = tok.start[0]
                        start = None
        except (OSError, SyntaxError, tokenize.TokenError, UnicodeDecodeError):
            pass
        _STATEMENTS[path] = ends
    return max(line, _STATEMENTS[path].get(line, line))


def code_statements(code, first):
    """{first line: last line} of each statement of `code`, its line 1 being physical line
    `first` (Python's own tokenizer)."""
    ends = {}
    start = None
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
                continue
            if start is None:
                start = tok.start[0]
            if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                ends[first + start - 1] = first + tok.start[0] - 1
                start = None
    except (SyntaxError, tokenize.TokenError):
        pass
    return ends


def notebook_statements(path):
    """The statements of a notebook's code cells, in physical lines of the .ipynb file: with
    nbformat's layout each element of a cell's `source` list is one line of the file, after the
    line holding `"source": [`. Magics and shell lines are blanked before tokenizing."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        cells = json.loads(text).get("cells", [])
    except (OSError, ValueError, AttributeError):
        return {}
    starts = [
        i + 1 for i, ln in enumerate(text.split("\n")) if ln.strip().startswith('"source": [')
    ]
    if len(starts) != len(cells):
        return {}
    ends = {}
    for cell, at in zip(cells, starts):
        src = cell.get("source") if isinstance(cell, dict) else None
        if cell.get("cell_type") != "code" or not isinstance(src, list):
            continue
        code = "".join("\n" if ln.lstrip().startswith(("%", "!")) else ln for ln in src)
        ends.update(code_statements(code, at + 1))
    return ends


def shell_command_end(path, line):
    """The last line of the shell command that starts on `line`: a line ending in a backslash
    continues on the next (the labels mark a command where it starts)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().split("\n")
    except OSError:
        return line
    end = line
    while end <= len(lines) and lines[end - 1].rstrip().endswith("\\"):
        end += 1
    return end


def label_matches(label, finding):
    if norm_path(label["file"]) != finding["file"]:
        return False
    if label.get("file_level"):
        return True
    end = label.get("_end", label["line"])
    return label["line"] - 1 <= finding["line"] <= end + 1


def best_match(label, findings):
    """The finding paired with a label: nearest line, then same class."""
    cands = [f for f in findings if label_matches(label, f)]
    if not cands:
        return None
    return min(
        cands,
        key=lambda f: (
            0 if label.get("file_level") else abs(label["line"] - f["line"]),
            0 if f["class"] == label["class"] else 1,
        ),
    )


def ratio(num, den):
    return None if den == 0 else num / den


def score_repo(name, labels, findings, adjudications, sample_n, seed):
    scope = labels["scope"]
    scoped = [f for f in findings if in_scope(f["file"], scope)]
    scoped.sort(key=lambda f: (f["file"], f["line"], f["code"]))
    lab = labels["findings"]

    matched, misses, guard_ok, class_ok = 0, [], 0, 0
    disagreements = []
    for label in lab:
        f = best_match(label, scoped)
        if f is None:
            misses.append(label)
            continue
        matched += 1
        if f["guarded"] == label["guarded"]:
            guard_ok += 1
        else:
            disagreements.append(("guarded", label, f))
        if f["class"] == label["class"]:
            class_ok += 1
        else:
            disagreements.append(("class", label, f))

    # Seeded per repository so adding a repository leaves the others' samples alone.
    rng = random.Random(f"{seed}:{name}")
    sample = rng.sample(scoped, min(sample_n, len(scoped)))
    sample.sort(key=lambda f: (f["file"], f["line"], f["code"]))
    adj = {(norm_path(a["file"]), a["line"], a.get("code", "")): a for a in adjudications}
    adj_any_code = {
        (norm_path(a["file"]), a["line"]): a for a in adjudications if not a.get("code")
    }
    tp, fp, tp_adjudicated, to_adjudicate, fp_adjudicated = 0, 0, 0, [], []
    for f in sample:
        if any(label_matches(label, f) for label in lab):
            tp += 1
            continue
        a = adj.get((f["file"], f["line"], f["code"])) or adj_any_code.get((f["file"], f["line"]))
        if a is None:
            fp += 1
            to_adjudicate.append(f)
        elif a["judgement"] == "tp-missed-label":
            tp += 1
            tp_adjudicated += 1
        else:
            fp += 1
            fp_adjudicated.append((f, a))

    return {
        "name": name,
        "repo": labels["repo"],
        "labels": len(lab),
        "matched": matched,
        "recall": ratio(matched, len(lab)),
        "findings_in_scope": len(scoped),
        "findings_total": len(findings),
        "sampled": len(sample),
        "sample_tp": tp,
        "sample_tp_adjudicated": tp_adjudicated,
        "sample_fp": fp,
        "precision": ratio(tp, len(sample)),
        "guard_agreement": ratio(guard_ok, matched),
        "guard_agree": guard_ok,
        "class_agreement": ratio(class_ok, matched),
        "class_agree": class_ok,
        "misses": [
            {k: m.get(k) for k in ("file", "line", "class", "guarded", "what")} for m in misses
        ],
        "to_adjudicate": [
            {k: f[k] for k in ("file", "line", "code", "class", "guarded", "message")}
            for f in to_adjudicate
        ],
        "adjudicated_fp": [
            {"file": f["file"], "line": f["line"], "code": f["code"], "why": a.get("why", "")}
            for f, a in fp_adjudicated
        ],
        "disagreements": [
            {
                "on": what,
                "file": label["file"],
                "line": label["line"],
                "label": label[what],
                "tool": f[what],
                "code": f["code"],
                "what": label.get("what", ""),
            }
            for what, label, f in disagreements
        ],
    }


# ---------------------------------------------------------------- report


def pct(x):
    return "  n/a" if x is None else f"{100 * x:5.1f}"


def print_table(rows, totals, out):
    head = (
        f"{'repository':30} {'labels':>6} {'recall%':>7} {'sample':>6} {'prec%':>6} "
        f"{'to-adj':>6} {'guard%':>6} {'class%':>6} {'verdict':>8}"
    )
    print(head, file=out)
    print("-" * len(head), file=out)
    for r in rows + [totals]:
        if r.get("error"):
            print(f"{r['name']:30} {r['labels']:>6}  {r['error']}", file=out)
            continue
        v = f"{r['verdict_agree']}/{r['experiments']}"
        todo = r["to_adjudicate"]
        todo = len(todo) if isinstance(todo, list) else todo
        print(
            f"{r['name'][:30]:30} {r['labels']:>6} {pct(r['recall']):>7} {r['sampled']:>6} "
            f"{pct(r['precision']):>6} {todo:>6} "
            f"{pct(r['guard_agreement']):>6} {pct(r['class_agreement']):>6} {v:>8}",
            file=out,
        )


def print_details(rows, out):
    for r in rows:
        if r.get("error"):
            continue
        print(f"\n== {r['name']} ({r['repo']})", file=out)
        if r["misses"]:
            print(f"  missed labels ({len(r['misses'])}):", file=out)
            for m in r["misses"]:
                print(f"    {m['file']}:{m['line']}: [{m['class']}] {m['what']}", file=out)
        if r["to_adjudicate"]:
            print(
                f"  sampled findings to adjudicate, counted as FP ({len(r['to_adjudicate'])}):",
                file=out,
            )
            for f in r["to_adjudicate"]:
                print(f"    {f['file']}:{f['line']}: {f['code']} {f['message']}", file=out)
        if r["adjudicated_fp"]:
            print(
                f"  adjudicated false positives in the sample ({len(r['adjudicated_fp'])}):",
                file=out,
            )
            for f in r["adjudicated_fp"]:
                print(f"    {f['file']}:{f['line']}: {f['code']} ({f['why']})", file=out)
        if r["disagreements"]:
            print(
                f"  guard/class disagreements on matched labels ({len(r['disagreements'])}):",
                file=out,
            )
            for d in r["disagreements"]:
                print(
                    f"    {d['file']}:{d['line']}: {d['on']} label={d['label']} tool={d['tool']} "
                    f"({d['code']}; {d['what']})",
                    file=out,
                )
        for e in r["verdicts"]:
            mark = "ok" if e["agree"] else "DIFFERS"
            tool = e["tool"] if e["tool"] else f"n/a ({e['why']})"
            print(
                f"  verdict {e['name']} ({e['entry']}): label={e['label']} tool={tool} {mark}",
                file=out,
            )


def totals_of(rows):
    ok = [r for r in rows if not r.get("error")]
    s = lambda k: sum(r[k] for r in ok)  # noqa: E731
    return {
        "name": "TOTAL",
        "repo": "",
        "labels": sum(r["labels"] for r in rows),
        "matched": s("matched"),
        "recall": ratio(s("matched"), s("labels")),
        "sampled": s("sampled"),
        "sample_tp": s("sample_tp"),
        "precision": ratio(s("sample_tp"), s("sampled")),
        "to_adjudicate": sum(len(r["to_adjudicate"]) for r in ok),
        "guard_agreement": ratio(s("guard_agree"), s("matched")),
        "class_agreement": ratio(s("class_agree"), s("matched")),
        "verdict_agree": s("verdict_agree"),
        "experiments": s("experiments"),
        "verdict_agreement": ratio(s("verdict_agree"), s("experiments")),
        "repositories_scored": len(ok),
        "repositories_failed": len(rows) - len(ok),
    }


# ---------------------------------------------------------------- main


def parse_args(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repos", required=True, help="folder holding the checkouts as DIR/NAME")
    p.add_argument("--dualtrack", required=True, help="the dualtrack binary to measure")
    p.add_argument("--labels", default=os.path.join(here, "labels"), help="labels folder")
    p.add_argument("--adjudications", default=os.path.join(here, "adjudications"))
    p.add_argument("--out", default="results.json", help="where to write the details")
    p.add_argument("--sample", type=int, default=40, help="findings sampled per repository")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--only", action="append", default=[], help="score only this NAME (repeatable)")
    p.add_argument("--no-audit", action="store_true", help="skip the per-experiment audits")
    p.add_argument("--timeout", type=int, default=900, help="seconds per dualtrack command")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    try:
        if args.sample < 0:
            raise BadInput("--sample must be >= 0")
        if not os.path.isdir(args.repos):
            raise BadInput(f"{args.repos}: not a folder")
        if not (os.path.isfile(args.dualtrack) and os.access(args.dualtrack, os.X_OK)):
            raise BadInput(f"{args.dualtrack}: not an executable file")
        if not os.path.isdir(args.labels):
            raise BadInput(f"{args.labels}: not a folder")
        names = sorted(n[:-5] for n in os.listdir(args.labels) if n.endswith(".json"))
        if args.only:
            unknown = sorted(set(args.only) - set(names))
            if unknown:
                raise BadInput(f"no labels for: {', '.join(unknown)}")
            names = [n for n in names if n in args.only]
        if not names:
            raise BadInput(f"{args.labels}: no labels files")
        inputs = []
        for name in names:
            labels = load_labels(os.path.join(args.labels, name + ".json"))
            adj = load_adjudications(os.path.join(args.adjudications, name + ".json"))
            inputs.append((name, labels, adj))
    except BadInput as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    args.dualtrack = os.path.abspath(args.dualtrack)  # audits run from a scratch folder
    with_format = False if args.no_audit else audit_supports_format(args.dualtrack)
    rows = []
    for name, labels, adj in inputs:
        path = os.path.join(args.repos, name)
        base = {"name": name, "repo": labels["repo"], "labels": len(labels["findings"])}
        if not os.path.isdir(path):
            warn(f"{name}: no checkout at {path}; skipped")
            rows.append(dict(base, error="no checkout"))
            continue
        head = checkout_commit(path)
        if head is not None and head != labels["commit"]:
            warn(f"{name}: checkout is at {head[:12]}, the labels are for {labels['commit'][:12]}")
        findings, err = scan(args.dualtrack, path, args.timeout)
        if findings is None:
            warn(f"{name}: {err}")
            rows.append(dict(base, error=err))
            continue
        for label in labels["findings"]:
            if not label.get("file_level"):
                label["_end"] = statement_end(path, norm_path(label["file"]), label["line"])
        r = score_repo(name, labels, findings, adj, args.sample, args.seed)
        r["checkout_commit"] = head
        verdicts = []
        for e in labels["experiments"]:
            if args.no_audit:
                tool, why = None, "audit skipped"
            else:
                tool, why = audit_verdict(
                    args.dualtrack, path, e["entry"], with_format, args.timeout
                )
            verdicts.append(
                {
                    "name": e.get("name", e["entry"]),
                    "entry": e["entry"],
                    "label": e["verdict"],
                    "tool": tool,
                    "why": why,
                    "agree": tool is not None and tool.strip().lower() == e["verdict"],
                }
            )
        r["verdicts"] = verdicts
        r["experiments"] = len(verdicts)
        r["verdict_agree"] = sum(v["agree"] for v in verdicts)
        r["verdict_agreement"] = ratio(r["verdict_agree"], len(verdicts))
        rows.append(r)

    totals = totals_of(rows)
    print_table(rows, totals, sys.stdout)
    print_details(rows, sys.stdout)
    result = {
        "schema": "dualtrack.field-score/1",
        "dualtrack": os.path.abspath(args.dualtrack),
        "sample": args.sample,
        "seed": args.seed,
        "audit": "skipped"
        if args.no_audit
        else ("--format json" if with_format else "-o report.json"),
        "repositories": rows,
        "totals": totals,
    }
    try:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
            f.write("\n")
    except OSError as e:
        warn(f"{args.out}: cannot write results: {e.strerror}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
