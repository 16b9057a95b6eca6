import torch

x = torch.randn(3).double()  # expect: DT204
y = torch.randn(3).float()
z = torch.randn(3).half()
