import torch
from torch.cuda.amp import GradScaler, autocast  # expect: DT105

scaler = torch.cuda.amp.GradScaler()  # expect: DT105
use_amp = torch.cuda.is_available()


def train_step(model, opt, x, y):
    with torch.cuda.amp.autocast():  # expect: DT105
        loss = model(x).sum()
    scaler.scale(loss).backward()
    return loss


def train_step_generic(model, x):
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        return model(x)
