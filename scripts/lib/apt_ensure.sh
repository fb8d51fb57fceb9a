#!/usr/bin/env bash
# Sourced by the setup scripts: apt_ensure LABEL PACKAGE... installs the Debian packages that are not
# installed yet (apt-get, through sudo when not root) and does nothing when all are present.
apt_ensure() {
  local label="$1"; shift
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "$label: installing ${missing[*]}" >&2
  local sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}
