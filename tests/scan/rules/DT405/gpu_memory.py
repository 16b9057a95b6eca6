import os
import subprocess


def gpu_count():
    return len(os.popen("nvidia-smi -L").read().splitlines())  # expect: DT405


def memory():
    out = subprocess.check_output("nvidia-smi --query-gpu=memory.used --format=csv", shell=True)  # expect: DT405
    return out


def hint():
    print("nvidia-smi -L lists the GPUs")  # prose, not a command
