#!/usr/bin/env python3
"""Rebuilds data/coverage/ops.tsv and versions.json from each release's own native_functions.yaml.

For every release listed in data/coverage/sources.json: fetch its YAML (fetch_yaml.py: PyPI's macOS
arm64 wheel, or a local wheel given as VERSION=WHEEL), classify it with the dualtrack binary
(`coverage --yaml --write-table`, so the tables and `--yaml` use the same code), and merge the
one-release tables into one file with a class letter per release.

    python3 tools/coverage/make_tables.py --dualtrack build/dualtrack --cache /tmp/dt-yaml \\
        [--wheel 2.13.0=/path/to/torch-2.13.0-...whl]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
import fetch_yaml  # noqa: E402

HEADER = (
    "# dualtrack coverage table 1: one line per operator overload, one class letter per release\n"
    # The table's header, as generated (its lines are the file's format, longer than the code's).
    "# N MPS kernel, E CompositeExplicitAutograd kernel, C CompositeImplicitAutograd (decomposes),\n"  # noqa: E501
    "# F no MPS kernel (cpu-fallback), A always on the CPU (MPSFallback.mm), - not in that release\n"  # noqa: E501
)


def version_key(v: str):
    return tuple(int(p) for p in v.split("."))


def read_table(path: Path) -> tuple[list[str], dict[str, str]]:
    versions: list[str] = []
    rows: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        cols = line.split("\t")
        if cols[0] == "op":
            versions = cols[1:]
        else:
            rows[cols[0]] = cols[1]
    return versions, rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dualtrack", default=str(REPO / "build" / "dualtrack"))
    ap.add_argument("--cache", type=Path, default=Path("/tmp/dt-yaml"))
    ap.add_argument("--data", type=Path, default=REPO / "data" / "coverage")
    ap.add_argument("--wheel", action="append", default=[], help="VERSION=WHEEL for a local wheel")
    args = ap.parse_args()

    sources = json.loads((args.data / "sources.json").read_text())
    local = dict(w.split("=", 1) for w in args.wheel)
    releases = sorted(sources["releases"], key=version_key)
    merged: dict[str, dict[str, str]] = {}
    provenance = {}
    with tempfile.TemporaryDirectory() as tmp:
        for v in releases:
            spec = f"{v}={local[v]}" if v in local else v
            meta = fetch_yaml.fetch(spec, args.cache)
            out = Path(tmp) / f"{v}.tsv"
            subprocess.run(
                [
                    args.dualtrack,
                    "coverage",
                    "--yaml",
                    str(args.cache / v / "native_functions.yaml"),
                    "--torch",
                    v,
                    "--write-table",
                    str(out),
                ],
                check=True,
                env={"DUALTRACK_DATA_DIR": str(args.data.parent), "PATH": "/usr/bin:/bin"},
            )
            _, rows = read_table(out)
            for op, letter in rows.items():
                merged.setdefault(op, {})[v] = letter
            rel = sources["releases"][v]
            provenance[v] = {
                "wheel": meta["wheel"],
                "wheel_sha256": meta["wheel_sha256"],
                "yaml": meta["yaml_path"],
                "yaml_sha256": meta["yaml_sha256"],
                "always_cpu_source": sources["revisions"][rel["always_cpu"]]["source"],
                "always_cpu_exact": rel.get("exact", False),
                "note": rel.get("note", ""),
                "overloads": len(rows),
            }
            print(f"{v}: {len(rows)} overloads", flush=True)
    lines = [HEADER, "op\t" + "\t".join(releases) + "\n"]
    for op in sorted(merged):
        lines.append(op + "\t" + "".join(merged[op].get(v, "-") for v in releases) + "\n")
    (args.data / "ops.tsv").write_text("".join(lines))
    (args.data / "versions.json").write_text(
        json.dumps({"schema": "dualtrack.coverage-versions/1", "releases": provenance}, indent=1)
        + "\n"
    )
    print(f"wrote {args.data / 'ops.tsv'}: {len(merged)} overloads x {len(releases)} releases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
