#!/usr/bin/env bash
# Debian packages of the plotting scripts (scripts/plot/*.py), installed only when missing: python3-matplotlib,
# python3-h5py, python3-numpy for /usr/bin/python3. Separate from scripts/setup.sh: the tests do not plot.
# Takes no arguments (exit 2 with a usage line otherwise); exit 1 when the packages cannot be installed or imported.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/apt_ensure.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/args.sh"
usage="usage: scripts/plot/setup.sh"
no_arguments "$@"
apt_ensure "plot setup" python3-matplotlib python3-h5py python3-numpy
/usr/bin/python3 -c "import matplotlib, h5py, numpy" || { echo "plot setup: /usr/bin/python3 cannot import matplotlib, h5py, numpy" >&2; exit 1; }
