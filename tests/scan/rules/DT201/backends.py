# A branch that imports a CUDA-only library is one backend among others, taken only when the user
# picks it (a weights format, an option): the branch is guarded. An import at the top of a function
# or under the main guard is not a branch.
from pathlib import Path

import torch


def load_backend(weights, device):
    suffix = Path(weights).suffix
    if suffix == ".pt":
        model = torch.load(weights, map_location=device)
    elif suffix == ".engine":
        import tensorrt as trt  # expect-guarded: DT201

        runtime = trt.Runtime(trt.Logger())
        model = runtime.deserialize_cuda_engine(Path(weights).read_bytes())
    else:
        raise ValueError(f"unknown weights format {suffix}")
    return model


def attention(q, k, v, use_flash):
    if use_flash:
        from flash_attn import flash_attn_func  # expect-guarded: DT201

        return flash_attn_func(q, k, v)
    return torch.nn.functional.scaled_dot_product_attention(q, k, v)


def fused_norm(x):
    import apex  # expect: DT201

    return apex.normalization.FusedLayerNorm(x.shape[-1])(x)


if __name__ == "__main__":
    import xformers  # expect: DT201

    print(xformers.__version__)
