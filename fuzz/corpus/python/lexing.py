import torch as t, torch.nn.functional as F
from torch.cuda import amp  # noqa
x = f"{t.cuda.is_available()!r:>{10}} {'nested' + f'{1}'}"
y = rb'\x00' b"\\" '''triple
"quoted" ''' \
    + "cont"
if t.cuda.is_available():
    dev = "cuda"
elif getattr(t.backends, "mps", None) and t.backends.mps.is_available():
    dev = "mps"
lambda: t.zeros(1).cuda(non_blocking=True)[..., ::2].double()
async def f(*a, **k): await g(x := 1)
match dev:
    case "cuda" | "mps": pass
if __name__ == "__main__":
    t.backends.cudnn.benchmark = True
