import torch
import torch.nn as nn

model = nn.Linear(16, 4).cuda()  # expect: DT101
criterion = nn.CrossEntropyLoss().cuda(0)  # expect: DT101


def step(batch, target):
    batch = batch.cuda(non_blocking=True)  # expect: DT101
    target = target.cuda()  # expect: DT101
    return criterion(model(batch), target)


if torch.cuda.is_available():
    model = model.cuda()  # expect-guarded: DT101

# Calling .cuda() on a GPU machine is what this script used to do.
print("run with .cuda() removed")
device = torch.device("cpu")
x = torch.ones(2).to(device)
is_cuda = x.is_cuda
