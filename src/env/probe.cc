// The Python probe as a raw string: it ships inside the binary so `env` needs no data directory,
// and runs with any Python 3.8+ and any torch 2.x (every torch attribute is guarded).
#include "env/env.h"

namespace dt::env {

const std::string& PythonProbeScript() {
  static const std::string kScript = R"PY(
import json, os, platform, sys

def emit(d):
    sys.stdout.write(json.dumps(d) + "\n")
    sys.stdout.flush()

py = {"kind": "python", "path": sys.executable, "version": platform.python_version(),
      "platform": platform.platform(), "arch": platform.machine(), "translated": None}
if sys.platform == "darwin":
    try:
        import ctypes, ctypes.util
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        val = ctypes.c_int(0)
        size = ctypes.c_size_t(ctypes.sizeof(val))
        rc = libc.sysctlbyname(b"sysctl.proc_translated", ctypes.byref(val), ctypes.byref(size),
                               None, ctypes.c_size_t(0))
        py["translated"] = bool(val.value) if rc == 0 else False
    except Exception:
        pass
emit(py)

t = {"kind": "torch", "installed": False, "version": None, "cuda_version": None,
     "cudnn_version": None, "cuda_available": False, "cuda_devices": [], "mps_built": False,
     "mps_available": False, "error": None}
try:
    import importlib.util
    spec = importlib.util.find_spec("torch")
except Exception as e:
    spec = None
if spec is None:
    emit(t)
    sys.exit(0)
t["installed"] = True
try:
    import torch
except BaseException as e:
    t["error"] = "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[-1] if str(e).strip() else "")
    emit(t)
    sys.exit(0)

def guard(fn, default=None):
    try:
        return fn()
    except Exception:
        return default

t["version"] = guard(lambda: str(torch.__version__))
t["cuda_version"] = guard(lambda: torch.version.cuda)
cudnn = guard(lambda: torch.backends.cudnn.version())
if cudnn:
    # torch reports 8902 for 8.9.2 and 90100 for 9.1.0.
    major, rest = (cudnn // 10000, cudnn % 10000) if cudnn >= 10000 else (cudnn // 1000, cudnn % 1000)
    t["cudnn_version"] = "%d.%d.%d" % (major, rest // 100, rest % 100)
t["cuda_available"] = bool(guard(lambda: torch.cuda.is_available(), False))
if t["cuda_available"]:
    n = guard(lambda: torch.cuda.device_count(), 0)
    t["cuda_devices"] = [guard(lambda i=i: torch.cuda.get_device_name(i), "?") for i in range(n)]
mps = getattr(torch.backends, "mps", None)
if mps is not None:
    t["mps_built"] = bool(guard(lambda: mps.is_built(), False))
    t["mps_available"] = bool(guard(lambda: mps.is_available(), False))
emit(t)
)PY";
  return kScript;
}

}  // namespace dt::env
