"""The Python package is importable and agrees with the C++ side and the packaging."""

import subprocess
from pathlib import Path

import dualtrack
from conftest import REPO_ROOT, from_test_script


def test_package_version_matches_pyproject_and_binary(dualtrack_bin):
    import tomllib

    meta = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    assert dualtrack.__version__ == meta["project"]["version"]
    out = subprocess.run([str(dualtrack_bin), "--version"], capture_output=True, text=True).stdout
    assert out.strip() == f"dualtrack {dualtrack.__version__}"


def test_pip_install_provides_executable_and_package():
    venv = from_test_script("DUALTRACK_PIP_VENV", "a venv where the built wheel was installed")
    bindir = Path(venv) / "bin"
    exe = bindir / "dualtrack"
    assert exe.exists(), "pip install . did not install the dualtrack executable"
    out = subprocess.run([str(exe), "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == f"dualtrack {dualtrack.__version__}"
    where = subprocess.run(
        [str(bindir / "python"), "-c", "import dualtrack, sys; print(dualtrack.__file__)"],
        capture_output=True, text=True, cwd="/", check=True,
    ).stdout.strip()
    assert "site-packages" in where and str(REPO_ROOT / "python") not in where
    # The executable finds its shipped data beside it, not in the source tree.
    share = Path(venv) / "share" / "dualtrack"
    assert (share / "python" / "dualtrack" / "__init__.py").exists()
