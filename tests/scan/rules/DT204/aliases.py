import torch as th
from torch import float64 as f64

x = th.zeros(2, dtype=th.float64, device="mps")  # expect: DT204
y = th.zeros(2, dtype=f64).to(x.device)  # expect: DT204
z = th.zeros(2).to(th.float32)
