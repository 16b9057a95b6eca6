import torch

copy_stream = torch.cuda.Stream()  # expect: DT111
start = torch.cuda.Event(enable_timing=True)  # expect: DT111
end = torch.cuda.Event(enable_timing=True)  # expect: DT111


def prefetch(batch):
    with torch.cuda.stream(copy_stream):  # expect: DT111
        batch = batch.to("cuda", non_blocking=True)
    torch.cuda.current_stream().wait_stream(copy_stream)  # expect: DT111
    return batch


g = torch.cuda.CUDAGraph()  # expect: DT111
s = torch.Stream()
