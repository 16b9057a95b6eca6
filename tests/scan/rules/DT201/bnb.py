import bitsandbytes as bnb  # expect: DT201
import pycuda.autoinit  # expect: DT201

try:
    from apex import amp  # expect-guarded: DT201
except Exception:
    amp = None
import numpy as np
