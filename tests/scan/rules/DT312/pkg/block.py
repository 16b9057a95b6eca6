# A module of the extension's own package that only uses it is where the model depends on it: only
# the kernel library's own modules (those that define kernels) call each other as plumbing.
from pkg.ln import FusedLayerNorm  # expect: DT312
from pkg.ln import layer_norm  # expect: DT312


class Block:
    norm: FusedLayerNorm  # An annotation only declares a type: no finding.

    def __init__(self):
        self.norm = FusedLayerNorm()  # expect: DT312

    def forward(self, x, w):
        return layer_norm(x, w)  # expect: DT312
