#!/usr/bin/env python3
"""Fetches native_functions.yaml of each listed torch release from PyPI's macOS arm64 wheel.

One wheel at a time: download with pip, extract only the YAML with zipfile, record the wheel's
name and SHA-256 and the YAML's SHA-256, delete the wheel. Wheels never enter the repository.

    python3 tools/coverage/fetch_yaml.py --out /tmp/dt-yaml 2.0.1 2.1.2 ...

A release PyPI does not serve for macOS arm64 can be given as VERSION=WHEEL (a local wheel of any
platform: native_functions.yaml is the same source file in every wheel of a release).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

YAML_IN_WHEEL = "torchgen/packaged/ATen/native/native_functions.yaml"


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch(spec: str, out: Path) -> dict:
    version, _, local_wheel = spec.partition("=")
    dest = out / version / "native_functions.yaml"
    meta_path = out / version / "provenance.json"
    if dest.exists() and meta_path.exists():
        return json.loads(meta_path.read_text())
    with tempfile.TemporaryDirectory(prefix="dt-wheel-") as tmp:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            f"torch=={version}",
            "--platform",
            "macosx_11_0_arm64",
            "--only-binary=:all:",
            "--no-deps",
            "--python-version",
            "3.11",
            "-d",
            tmp,
            "-q",
        ]
        if local_wheel:
            wheels = [Path(local_wheel)]  # Read in place: never copied, never deleted.
        else:
            subprocess.run(cmd, check=True)
            wheels = list(Path(tmp).glob("torch-*.whl"))
        if len(wheels) != 1:
            raise SystemExit(f"{version}: expected one wheel, found {wheels}")
        wheel = wheels[0]
        meta = {
            "torch": version,
            "wheel": wheel.name,
            "wheel_sha256": sha256(wheel),
            "yaml_path": YAML_IN_WHEEL,
        }
        dest.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel) as z, z.open(YAML_IN_WHEEL) as src, dest.open("wb") as dst:
            shutil.copyfileobj(src, dst)
        meta["yaml_sha256"] = sha256(dest)
    meta_path.write_text(json.dumps(meta, indent=1) + "\n")
    return meta


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("versions", nargs="+")
    args = ap.parse_args()
    failed = []
    for v in args.versions:
        try:
            meta = fetch(v, args.out)
        except (subprocess.CalledProcessError, OSError, KeyError) as e:
            print(f"{v}: FAILED: {e}", flush=True)
            failed.append(v)
            continue
        print(f"{v.partition('=')[0]}: {meta['wheel']} yaml {meta['yaml_sha256'][:12]}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
