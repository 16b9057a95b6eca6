import torch.cuda as tc
from torch import cuda
from torch.cuda import synchronize as sync  # expect: DT103

cuda.synchronize()  # expect: DT103
sync()  # expect: DT103
tc.synchronize()  # expect: DT103
