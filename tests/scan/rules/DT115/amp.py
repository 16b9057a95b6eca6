import torch


def train_step_generic(model, x):
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        return model(x)


def train_step_device_type(model, x):
    # A "cuda" device type of autocast / GradScaler is not a placement: both disable themselves
    # without CUDA, so the step runs on a Mac (in full precision).
    scaler2 = torch.amp.GradScaler("cuda")  # expect: DT115
    with torch.autocast("cuda", dtype=torch.float16):  # expect: DT115
        loss = model(x).sum()
    with torch.amp.autocast(device_type="cuda"):  # expect: DT115
        loss = loss + model(x).sum()
    return scaler2.scale(loss)
