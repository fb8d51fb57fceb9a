#!/usr/bin/env bash
# Short runs of every experiment family compared bit for bit with tests/data/fingerprints.txt (issue 46; ctest
# fingerprints; docs/testing.md, Fingerprints). The work is scripts/fingerprints/run_fingerprints.py's:
#   scripts/fingerprints.sh [--build DIR] [--only FAMILY,...] [--work DIR] [--reference DIR]   check (exit 1: differs)
#   scripts/fingerprints.sh --update [--build DIR] [--only FAMILY,...]                        rewrite the committed file
# The families and their short-run overrides: scripts/fingerprints/runs.txt. Exit status 2 for bad arguments.
set -euo pipefail
cd "$(dirname "$0")/.."
exec /usr/bin/python3 scripts/fingerprints/run_fingerprints.py "$@"
