import torch
from torch.cuda.amp import GradScaler, autocast  # expect: DT105

# torch.cuda.amp runs without CUDA but does nothing there: on a Mac the recipe loses its mixed
# precision until the region names the device in use (`dualtrack fix` rewrites both).
scaler = torch.cuda.amp.GradScaler()  # expect: DT105
use_amp = torch.cuda.is_available()


def train_step(model, opt, x, y):
    with torch.cuda.amp.autocast():  # expect: DT105
        loss = model(x).sum()
    scaler.scale(loss).backward()
    return loss
