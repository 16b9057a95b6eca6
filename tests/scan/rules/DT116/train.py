# The project writes checkpoints of its own, from a model it trains on CUDA: what evaluate.py loads
# is what this saved. (A project that never calls torch.save gets no DT116: see test_scan.py.)
import torch
from torch import nn

model = nn.Linear(4, 2).cuda()
torch.save({"model_state_dict": model.state_dict()}, "checkpoints/best_model.pth")
