import torch


def step(model, batch):
    try:
        return model(batch)
    except torch.cuda.OutOfMemoryError:
        # Entered only after CUDA ran out of memory.
        torch.cuda.empty_cache()  # expect-guarded: DT115
        raise


def retry(model, batch):
    try:
        return model(batch)
    except RuntimeError as e:
        if "CUDA out of memory" in str(e):
            torch.cuda.empty_cache()  # expect-guarded: DT115
        raise


def release():
    torch.cuda.empty_cache()  # expect: DT115
