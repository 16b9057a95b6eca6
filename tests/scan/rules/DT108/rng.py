import torch


def save_rng(path):
    state = {
        "cpu": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all(),  # expect: DT108
    }
    torch.save(state, path)


def load_rng(state):
    torch.set_rng_state(state["cpu"])
    torch.cuda.set_rng_state(state["cuda"][0])  # expect: DT108
    if torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])  # expect-guarded: DT108
