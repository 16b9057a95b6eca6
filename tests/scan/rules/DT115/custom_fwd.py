import torch


class ScaledMM(torch.autograd.Function):
    @staticmethod
    @torch.cuda.amp.custom_fwd  # expect: DT115
    def forward(ctx, a, b):
        return a @ b

    @staticmethod
    @torch.amp.custom_bwd(device_type="cpu")
    def backward(ctx, grad):
        return grad, grad
