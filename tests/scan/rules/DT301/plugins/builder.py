import importlib

import torch.utils.cpp_extension


def get_plugin(module_name, sources, **build_kwargs):
    # A helper: what it builds is what its callers pass (CUDA sources, in ops.py).
    torch.utils.cpp_extension.load(name=module_name, sources=sources, **build_kwargs)  # expect: DT301
    return importlib.import_module(module_name)


def get_optional_plugin(module_name, sources, **build_kwargs):
    # Every call of it runs behind a CUDA-tensor test: so does its build.
    return torch.utils.cpp_extension.load(name=module_name, sources=sources, **build_kwargs)  # expect-guarded: DT301


def get_cpu_plugin(module_name, sources):
    # No caller passes CUDA sources to this one.
    return torch.utils.cpp_extension.load(name=module_name, sources=sources)
