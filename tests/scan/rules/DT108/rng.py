import torch


def save_rng(path):
    state = {
        "cpu": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state(),  # expect: DT108
    }
    torch.save(state, path)


def load_rng(state):
    torch.set_rng_state(state["cpu"])
    if torch.cuda.is_available():
        state["cuda0"] = torch.cuda.get_rng_state(0)  # expect-guarded: DT108
    # get_rng_state_all() returns [] and set_rng_state(_all) are queued without CUDA: DT115.
    torch.cuda.set_rng_state_all(state.get("all", []))
