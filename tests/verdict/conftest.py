"""Fixtures of the verdict tests."""

import json

import pytest


@pytest.fixture
def audit_main(dualtrack):
    """The first experiment of `audit ROOT --entry main.py` as JSON (its HTML report in ROOT)."""

    def run(root):
        out = dualtrack("audit", root, "--entry", "main.py", "--format", "json", "-o",
                        root / "r.html", cwd=root)
        assert out.returncode in (0, 1), out.stderr
        return json.loads(out.stdout)["experiments"][0]

    return run
