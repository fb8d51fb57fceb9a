#!/usr/bin/env bash
# Debian packages of the PyTorch reference (scripts/bench/torch_reference.py), installed only when
# missing: python3-torch (PyTorch 1.13), python3-yaml, python3-h5py, python3-numpy for /usr/bin/python3.
# Separate from scripts/setup.sh, which CI runs: the tests do not need PyTorch (~1 GB installed).
set -euo pipefail
packages=(python3-torch python3-yaml python3-h5py python3-numpy)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "bench setup: installing ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
/usr/bin/python3 -c "import torch, yaml, h5py, numpy" || { echo "bench setup: /usr/bin/python3 cannot import torch, yaml, h5py, numpy" >&2; exit 1; }
