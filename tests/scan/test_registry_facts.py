"""The registry's claims about torch.cuda APIs, checked against real PyTorch.

data/scan/rules.json says which torch.cuda calls do nothing without CUDA (severity portable: the
code runs on a Mac as written) and which raise there or quietly lose what they are for on a Mac
(fixable: an edit is needed). The CPU build
of torch installed for the tests behaves as the macOS build does here (neither has CUDA), so each
claim is checked by calling the API: a wrong entry makes a verdict wrong in one direction or the
other.
"""

import contextlib
import json
import warnings

import pytest

torch = pytest.importorskip("torch")

from conftest import REPO_ROOT  # noqa: E402

RULES = json.loads((REPO_ROOT / "data" / "scan" / "rules.json").read_text())
SEVERITY = {r["code"]: r["severity"] for r in RULES["rules"]}

# Arguments an API needs before it can say whether it works without CUDA.
ARGS = {
    "torch.cuda.manual_seed": (0,),
    "torch.cuda.manual_seed_all": (0,),
    "torch.cuda.set_device": (0,),
    "torch.cuda.get_device_properties": (0,),
    "torch.cuda.get_device_capability": (0,),
    "torch.cuda.set_per_process_memory_fraction": (0.5,),
    "torch.cuda.set_rng_state": (torch.zeros(16, dtype=torch.uint8),),
    "torch.cuda.set_rng_state_all": ([torch.zeros(16, dtype=torch.uint8)],),
    "torch.cuda.device": (0,),
    "torch.cuda.graph": (None,),
    "torch.cuda.make_graphed_callables": (torch.nn.Linear(1, 1), (torch.ones(1),)),
}
# Not called: namespaces and constructs whose failure depends on how they are used.
SKIP = {"torch.cuda.amp", "torch.backends.cudnn", "torch.backends.cuda", "torch.cuda.memory",
        "torch.cuda.stream"}


def resolve(dotted):
    obj = torch
    for part in dotted.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def call(dotted):
    """Calls the API as code typically does; True when it works without CUDA."""
    fn = resolve(dotted)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = fn(*ARGS.get(dotted, ()))
            if isinstance(result, contextlib.AbstractContextManager) or hasattr(result, "__enter__"):
                with result:
                    pass
            return True
        except Exception:  # noqa: BLE001 - any failure is the fact under test
            return False


def apis(severity):
    out = []
    for api in RULES["python_apis"]:
        code = api.get("code")
        name = api["name"]
        if not code or not name.startswith("torch.cuda.") or name in SKIP:
            continue
        if SEVERITY.get(code) == severity and callable(resolve(name)):
            out.append(name)
    return out


pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="needs a host without CUDA")


@pytest.mark.parametrize("name", apis("portable"))
def test_portable_apis_run_without_cuda(name):
    assert call(name), f"{name} raises without CUDA, but the registry says it does nothing there"


# Fixable although they run without CUDA: they quietly lose what the recipe uses them for on a Mac.
# CUDA AMP turns itself off (the Mac trains in float32, unscaled), the memory statistics read 0
# (torch.mps has the counters); `dualtrack fix` points both at the device in use.
QUIET_ON_A_MAC = {"torch.cuda.amp.autocast", "torch.cuda.amp.GradScaler",
                  "torch.cuda.memory_allocated", "torch.cuda.max_memory_allocated",
                  "torch.cuda.memory_reserved", "torch.cuda.max_memory_reserved",
                  "torch.cuda.memory_stats"}


@pytest.mark.parametrize("name", apis("fixable"))
def test_fixable_apis_fail_without_cuda(name):
    # A fixable API that quietly works off CUDA would be portable: the verdict would ask for an
    # edit the code does not need. (torch.cuda.get_arch_list returns [] and is the known case.)
    if name in {"torch.cuda.get_arch_list"}:
        pytest.skip("returns [] without CUDA; kept fixable: code that reads it expects GPUs")
    if name in QUIET_ON_A_MAC:
        assert call(name), f"{name} is listed as running without CUDA, but it raises"
        return
    assert not call(name), f"{name} works without CUDA, but the registry asks for an edit"


def test_the_check_covers_both_kinds():
    assert len(apis("portable")) >= 8
    assert len(apis("fixable")) >= 10
