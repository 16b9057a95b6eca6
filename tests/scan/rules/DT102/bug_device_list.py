# A tuple of device names that also lists "mps" is a set of options (like choices=[...] with mps, or the same list in a for loop, which are not reported), not a device placement, yet its "cuda" is reported as DT102; it should produce nothing.
import torch

SUPPORTED_DEVICES = ("cuda", "mps", "cpu")
