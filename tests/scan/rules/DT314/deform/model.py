from deform.attn_func import ChamferFunction  # expect: DT314


def loss(a, b):
    return ChamferFunction.apply(a, b).mean()  # expect: DT314
