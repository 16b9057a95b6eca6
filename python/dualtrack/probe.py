"""Asks the installed torch's dispatcher where every aten operator runs on MPS (`dualtrack coverage
--probe`).

Run on a Mac as `python -m dualtrack.probe`; prints a one-release capability table in the format of
data/coverage/ops.tsv. Linux builds of torch carry no MPS kernels, so the probe refuses to run there
unless --allow-no-mps is given (then every operator without a composite kernel reads as a fallback).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from types import ModuleType

HEADER = (
    "# dualtrack coverage table 1: one line per operator overload, one class letter per release\n"
    # The table's header, as generated (its lines are the file's format, longer than the code's).
    "# N MPS kernel, E CompositeExplicitAutograd kernel, C CompositeImplicitAutograd (decomposes),\n"  # noqa: E501
    "# F no MPS kernel (cpu-fallback), A always on the CPU (MPSFallback.mm), - not in that release\n"  # noqa: E501
)

EXPLICIT_KEYS = ("CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional")


def classify(
    qualname: str,
    has_kernel: Callable[[str, str], bool],
    dump_table: Callable[[str], str] | None,
    always_cpu: set[str],
) -> str:
    """The class letter of one overload ("aten::add.Tensor") from the dispatcher's answers."""
    short = qualname.split("::", 1)[1]
    if has_kernel(qualname, "MPS"):
        # MPSFallback.mm registers its always-CPU list as MPS kernels; the dump names the file.
        # When the dump can be had it is the measurement; the shipped list is only a stand-in.
        if dump_table is not None:
            try:
                table = dump_table(qualname).splitlines()
                mps_lines = [line for line in table if line.startswith("MPS:")]
            except RuntimeError:
                mps_lines = None
            if mps_lines is not None:
                return "A" if any("MPSFallback" in line for line in mps_lines) else "N"
        return "A" if short in always_cpu else "N"
    if any(has_kernel(qualname, k) for k in EXPLICIT_KEYS):
        return "E"
    if has_kernel(qualname, "CompositeImplicitAutograd"):
        return "C"
    return "F"


def build_table(
    names: Iterable[str],
    version: str,
    has_kernel: Callable[[str, str], bool],
    dump_table: Callable[[str], str] | None,
    always_cpu: set[str],
) -> str:
    rows = {}
    for qualname in names:
        if not qualname.startswith("aten::"):
            continue
        try:
            rows[qualname[len("aten::") :]] = classify(qualname, has_kernel, dump_table, always_cpu)
        except RuntimeError:
            continue  # A TorchScript-only schema the dispatcher does not know.
    lines = [HEADER, f"op\t{version}\n"]
    lines += [f"{name}\t{rows[name]}\n" for name in sorted(rows)]
    return "".join(lines)


def aten_overloads(torch: ModuleType) -> list[str]:
    if hasattr(torch._C, "_dispatch_get_all_op_names"):
        return sorted(n for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::"))
    names: set[str] = set()
    for schema in torch._C._jit_get_all_schemas():
        if schema.name.startswith("aten::"):
            names.add(schema.name + (f".{schema.overload_name}" if schema.overload_name else ""))
    return sorted(names)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m dualtrack.probe", description=__doc__.splitlines()[0]
    )
    ap.add_argument(
        "--sources", help="data/coverage/sources.json (the always-CPU list, as a cross-check)"
    )
    ap.add_argument("--allow-no-mps", action="store_true", help="probe a torch built without MPS")
    args = ap.parse_args(argv)
    try:
        import torch
    except ImportError as e:
        print(f"dualtrack.probe: cannot import torch in {sys.executable}: {e}", file=sys.stderr)
        return 2
    if not torch.backends.mps.is_built() and not args.allow_no_mps:
        print(
            f"dualtrack.probe: torch {torch.__version__} in {sys.executable} is built without MPS "
            "(Linux and Windows builds carry no MPS kernels): run the probe on a Mac",
            file=sys.stderr,
        )
        return 2
    always_cpu: set[str] = set()
    if args.sources:
        with open(args.sources, encoding="utf-8") as f:
            src = json.load(f)
        always_cpu = set(src["revisions"][src["newest_revision"]]["always_cpu"])
    version = torch.__version__.split("+", 1)[0]
    has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key
    dump_table = getattr(torch._C, "_dispatch_dump_table", None)
    sys.stdout.write(
        build_table(aten_overloads(torch), version, has_kernel, dump_table, always_cpu)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
