"""The wheel a researcher installs: self-contained (no compiler, CMake or dev library needed at
install or run time), and the audit of the bundled example runs from it. scripts/test.sh builds it
with `pip wheel .`, repairs it (auditwheel on Linux, delocate on macOS) and sets DUALTRACK_WHEEL."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT, from_test_script

COMPILERS = ("g++", "gcc", "c++", "cc", "clang", "clang++", "cmake", "ninja", "make")


@pytest.fixture
def wheel():
    return Path(from_test_script("DUALTRACK_WHEEL", "a wheel built by `pip wheel .`"))


def test_wheel_installs_and_audits_without_a_compiler(wheel, tmp_path):
    if sys.platform.startswith("linux"):
        assert "-manylinux_" in wheel.name, f"{wheel.name}: not repaired to a manylinux tag"
    venv = tmp_path / "venv"
    # torch comes from the system site (the user's environment); dualtrack only from the wheel.
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    bindir = venv / "bin"
    # Nothing but the venv on PATH: no compiler, no CMake, no build tool can be reached.
    env = {"PATH": str(bindir), "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    for tool in COMPILERS:
        assert shutil.which(tool, path=env["PATH"]) is None, tool
    r = subprocess.run([str(bindir / "python"), "-m", "pip", "install", "-q", "--no-deps",
                        "--no-index", "--disable-pip-version-check", str(wheel)],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    exe = bindir / "dualtrack"
    assert exe.exists()
    if sys.platform.startswith("linux"):
        # Only the C library is loaded from the system.
        libs = subprocess.run(["ldd", str(exe)], capture_output=True, text=True).stdout
        for lib in ("libfmt", "libtomlplusplus", "libcrypto", "libz.so", "libstdc++", "libgcc_s"):
            assert lib not in libs, libs
    example = tmp_path / "cuda-research"
    shutil.copytree(REPO_ROOT / "examples" / "cuda-research", example)
    r = subprocess.run([str(exe), "audit", str(example), "--trust-project-run", "-o", str(tmp_path / "report" / "report.html")],
                       env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "verdict" in r.stdout.lower() and "mac-ready" in r.stdout
    assert (tmp_path / "report" / "report.html").exists()
    # The package installed beside it, and `python -m dualtrack` reaches the same executable.
    r = subprocess.run([str(bindir / "python"), "-m", "dualtrack", "--version"], env=env,
                       capture_output=True, text=True, cwd="/")
    assert r.returncode == 0 and r.stdout.startswith("dualtrack ")
