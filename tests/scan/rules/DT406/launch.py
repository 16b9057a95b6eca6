import os

os.environ["CUDA_VISIBLE_DEVICES"] = "0"  # expect: DT406
gpus = os.environ.get("CUDA_VISIBLE_DEVICES", "")  # expect: DT406
print("set CUDA_VISIBLE_DEVICES before launching")
