import os

import torch

# An environment variable is unset by default: a branch that needs it set is the user's opt-in.
if os.environ.get("USE_FAST_PATH", "0") == "1":
    fast = torch.zeros(3).cuda()  # expect-guarded: DT101
if os.environ.get("PLAIN_RUN") is None:
    plain = torch.zeros(3).cuda()  # expect: DT101
