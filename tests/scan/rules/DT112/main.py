import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--device", choices=["cuda", "cpu"], default="cpu")  # expect: DT112
parser.add_argument("--accel", type=str, choices=("cuda",))  # expect: DT112
parser.add_argument("--backend", choices=["cuda", "mps", "cpu"], default="cpu")
parser.add_argument("--mode", choices=["train", "eval"])
args = parser.parse_args()
