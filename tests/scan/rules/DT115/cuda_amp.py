import torch
from torch.cuda.amp import GradScaler, autocast  # expect: DT115

# torch.cuda.amp runs without CUDA but does nothing there: the step runs on a Mac in full
# precision, as it does on any machine without CUDA (`dualtrack fix --all --unsafe-fixes` turns
# mixed precision on for the device in use, a change of numerics on the Mac).
scaler = torch.cuda.amp.GradScaler()  # expect: DT115
use_amp = torch.cuda.is_available()


def train_step(model, opt, x, y):
    with torch.cuda.amp.autocast():  # expect: DT115
        loss = model(x).sum()
    scaler.scale(loss).backward()
    return loss
