"""Shared fixtures: the dualtrack binary under test and the repository's paths."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = REPO_ROOT / "examples" / "cuda-research"

# The in-process package is imported from the source tree, not from an install.
sys.path.insert(0, str(REPO_ROOT / "python"))


def _binary() -> Path:
    env = os.environ.get("DUALTRACK_BIN")
    path = Path(env) if env else REPO_ROOT / "build" / "dualtrack"
    if not path.exists():
        pytest.exit(f"dualtrack binary not found at {path}: build first (scripts/setup.sh)", 2)
    return path


def from_test_script(variable: str, what: str) -> str:
    """A path scripts/test.sh provides in `variable`: required in CI, a skip elsewhere."""
    value = os.environ.get(variable)
    if value:
        return value
    if os.environ.get("CI"):
        pytest.fail(f"CI must run scripts/test.sh, which sets {variable}")
    pytest.skip(f"set {variable} to {what} (scripts/test.sh does)")


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def example_dir() -> Path:
    return EXAMPLE


@pytest.fixture(scope="session")
def dualtrack_bin() -> Path:
    return _binary()


@pytest.fixture
def dualtrack(dualtrack_bin):
    """Runs the real binary: dualtrack(*args, cwd=..., env=..., timeout=...) -> CompletedProcess."""

    def run(*args, cwd=None, env=None, timeout=300, input=None):
        full_env = dict(os.environ)
        full_env.pop("NO_COLOR", None)
        full_env.pop("FORCE_COLOR", None)
        if env:
            full_env.update(env)
        return subprocess.run(
            [str(dualtrack_bin), *map(str, args)],
            cwd=cwd,
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout,
            input=input,
        )

    return run


@pytest.fixture
def audit_main(dualtrack):
    """The first experiment of `audit ROOT --entry main.py` as JSON (its HTML report in ROOT)."""

    def run(root):
        out = dualtrack("audit", root, "--entry", "main.py", "--format", "json", "-o",
                        root / "r.html", cwd=root)
        assert out.returncode in (0, 1), out.stderr
        return json.loads(out.stdout)["experiments"][0]

    return run
