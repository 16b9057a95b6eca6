# A module of the kernels' package that only uses them is where the model depends on them (whisper's
# timing.py importing triton_ops): reported like any other user.
from ops.fused import fused_relu  # expect: DT209


def relu(x):
    return fused_relu(x)  # expect: DT209
