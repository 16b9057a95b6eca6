import random

import numpy as np
import torch


def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)  # expect: DT115


def log_memory(step):
    torch.cuda.empty_cache()  # expect: DT115
    if torch.cuda.is_available():
        torch.cuda.manual_seed(step)  # expect-guarded: DT115
    # torch.cuda.empty_cache() helps with fragmentation
