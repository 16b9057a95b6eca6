import torch
import torch.nn as nn
from flash_attn import flash_attn_func  # expect: DT201
import apex  # expect: DT201

try:
    import xformers.ops as xops  # expect-guarded: DT201
except ImportError:
    xops = None

# import flash_attn when on a GPU
doc = "pip install flash_attn"
