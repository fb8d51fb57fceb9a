#!/usr/bin/env bash
# Sourced by the shell scripts: a bad argument ends in a message and the usage line on stderr, exit 2, before any
# work (docs/cli.md#scripts). Each script sets `usage` first.
usage_error() {  # usage_error MESSAGE
  echo "$(basename "$0"): $1" >&2
  echo "${usage:-usage: $(basename "$0")}" >&2
  exit 2
}
no_arguments() {  # no_arguments "$@": -h/--help prints the usage line; anything else is a usage error
  [ $# -eq 0 ] && return 0
  if [ $# -eq 1 ] && { [ "$1" = -h ] || [ "$1" = --help ]; }; then echo "$usage"; exit 0; fi
  usage_error "takes no arguments, got '$1'"
}
integer_in() {  # integer_in NAME VALUE MIN MAX: VALUE is a decimal integer in [MIN, MAX]
  [[ "$2" =~ ^[0-9]{1,9}$ ]] && [ "$((10#$2))" -ge "$3" ] && [ "$((10#$2))" -le "$4" ] ||
    usage_error "$1 must be an integer in [$3, $4], got '$2'"
}
