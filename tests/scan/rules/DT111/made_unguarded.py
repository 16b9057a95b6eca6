import torch


def decode(model, x, enable_timing=False):
    # Read only when timing is asked for, but made on every call: the Event needs CUDA here.
    start = torch.cuda.Event(enable_timing=enable_timing)  # expect: DT111
    if enable_timing:
        start.record()
        torch.cuda.synchronize()
    return model(x)
