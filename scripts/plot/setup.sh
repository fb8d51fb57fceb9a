#!/usr/bin/env bash
# Debian packages of the plotting scripts (scripts/plot/*.py), installed only when missing: python3-matplotlib,
# python3-h5py, python3-numpy for /usr/bin/python3. Separate from scripts/setup.sh: the tests do not plot.
set -euo pipefail
packages=(python3-matplotlib python3-h5py python3-numpy)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "plot setup: installing ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
/usr/bin/python3 -c "import matplotlib, h5py, numpy" || { echo "plot setup: /usr/bin/python3 cannot import matplotlib, h5py, numpy" >&2; exit 1; }
