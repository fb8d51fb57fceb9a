#!/usr/bin/env bash
# Debian packages of the PyTorch reference (scripts/bench/torch_reference.py), installed only when
# missing: python3-torch (PyTorch 1.13), python3-yaml, python3-h5py, python3-numpy for /usr/bin/python3.
# Separate from scripts/setup.sh, which CI runs: the tests do not need PyTorch (~1 GB installed).
# Takes no arguments (exit 2 with a usage line otherwise); exit 1 when the packages cannot be installed or imported.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/apt_ensure.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/args.sh"
usage="usage: scripts/bench/setup.sh"
no_arguments "$@"
apt_ensure "bench setup" python3-torch python3-yaml python3-h5py python3-numpy
/usr/bin/python3 -c "import torch, yaml, h5py, numpy" || { echo "bench setup: /usr/bin/python3 cannot import torch, yaml, h5py, numpy" >&2; exit 1; }
