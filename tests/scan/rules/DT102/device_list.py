# A tuple of device names that also lists "mps" is a set of options, not a placement: no DT102.
import torch

SUPPORTED_DEVICES = ("cuda", "mps", "cpu")
