import torch

from pkg.ln import layer_norm, layer_norm_plain  # expect: DT312


def norm(x, w):
    return layer_norm(x, w)  # expect: DT312


def norm_ref(x, w):
    return layer_norm_plain(x, w)


def norm_dispatch(x, w):
    if x.is_cuda:
        return layer_norm(x, w)  # expect-guarded: DT312
    return layer_norm_plain(x, w)
