import numpy as np
import torch as th


def extract_into_tensor(arr, timesteps, broadcast_shape):
    # A schedule kept as a float64 numpy array: moved first, cast after.
    res = th.from_numpy(arr).to(device=timesteps.device)[timesteps].float()  # expect: DT204
    return res.expand(broadcast_shape)


def colorize(x, device):
    q = np.linalg.qr(np.random.randn(3, 3))[0]
    return x @ th.from_numpy(q).to(device).to(th.float32)  # expect: DT204


def from_flattened_numpy(x, shape):
    return th.from_numpy(x.reshape(shape))


def ode_func(x, shape, device):
    return from_flattened_numpy(x, shape).to(device).type(th.float32)  # expect: DT204


def cast_first(arr, device):
    # Cast before the move: float32 is what reaches the device.
    a = th.from_numpy(arr).float().to(device)
    b = th.from_numpy(arr).to(th.float32).to(device)
    c = th.from_numpy(arr).to(device)  # its dtype is whatever the array's is: nothing said here
    return a, b, c
