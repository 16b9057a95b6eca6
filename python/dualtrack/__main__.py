"""`python -m dualtrack ...`: the `dualtrack` executable that `pip install` put beside this
interpreter (or the first on PATH), with the same arguments, exit code and output."""

import os
import shutil
import subprocess
import sys
import sysconfig


def _executable() -> "str | None":
    name = "dualtrack.exe" if os.name == "nt" else "dualtrack"
    beside = os.path.join(sysconfig.get_path("scripts"), name)
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    return shutil.which("dualtrack")


def main() -> int:
    exe = _executable()
    if exe is None:
        print(
            "python -m dualtrack: the dualtrack executable is not installed beside this Python "
            "or on PATH (pip install dualtrack, or scripts/setup.sh in a checkout)",
            file=sys.stderr,
        )
        return 2
    if os.name == "posix":
        os.execv(exe, [exe, *sys.argv[1:]])  # Signals and the exit code go straight to the caller.
    return subprocess.call([exe, *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
