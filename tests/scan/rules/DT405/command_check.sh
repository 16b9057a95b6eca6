# `command -v` / `which` only look a tool up; what runs behind such a test runs only where it is installed.
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi  # expect-guarded: DT405
fi
which nvcc >/dev/null && nvcc --version  # expect-guarded: DT405
if ! command -v nvcc >/dev/null 2>&1; then
  echo "nvcc not found"
else
  nvcc -V  # expect-guarded: DT405
fi
nvcc --version  # expect: DT405
