# `command -v nvidia-smi` tests whether the tool exists (it does not run it), yet it is reported as running nvidia-smi; the call inside the test then only runs where the tool is installed and should be guarded: true.
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi  # expect-guarded: DT405
fi
