import torch


def pick_device():
    for name in ["cuda", "mps", "cpu"]:
        if name == "cpu" or getattr(torch, name).is_available():
            return torch.device(name)


def load(path, map_location="cuda"):  # expect: DT102
    return torch.load(path, map_location=map_location)
