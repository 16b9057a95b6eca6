import builtins

try:
    import chamfer_cuda as _ext  # expect: DT305
except ImportError:
    # Raised unless setup.py itself is importing the package: no other path.
    if not getattr(builtins, "__CHAMFER_SETUP__", False):
        raise ImportError("Could not import chamfer_cuda; build it first")


def chamfer(a, b):
    return _ext.forward(a, b)  # expect: DT305
