import random

import numpy as np
import torch


def set_seed(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.backends.cudnn.deterministic = True  # expect: DT106
    torch.backends.cudnn.benchmark = False  # expect: DT106
    torch.backends.cuda.matmul.allow_tf32 = True  # expect: DT106


ok = torch.backends.cudnn.is_available()
torch.backends.mps.is_available()
