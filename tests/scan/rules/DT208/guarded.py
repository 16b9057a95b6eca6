import torch


def maybe_compile(model):
    if torch.cuda.is_available():
        model = torch.compile(model)  # expect-guarded: DT208
    return model
