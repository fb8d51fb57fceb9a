#!/usr/bin/env bash
# ctest git_stamp: scripts/cmake/git_stamp.cmake names the commit a build is made from (issue 46: a results file names
# its binary's source, not whatever the checkout holds when it runs). On a scratch repository: a clean commit, a
# modified file, an untracked file, a second commit, and a folder outside git; the header is rewritten only when its
# text changes (a build at the same commit recompiles nothing).
#   tests/scripts/test_git_stamp.sh SOURCE_DIR
set -euo pipefail
script=$(realpath "$1")/scripts/cmake/git_stamp.cmake
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
repo=$work/repo; out=$work/stamp.hpp
fail() { echo "git_stamp: $1" >&2; echo "--- $out:" >&2; cat "$out" >&2 || true; exit 1; }
stamp() { cmake -DSOURCE_DIR="$1" -DOUT="$out" -P "$script"; }
expect() {  # commit dirty
  grep -qx "#define ICLAB_GIT_COMMIT \"$1\"" "$out" || fail "expected commit $1"
  grep -qx "#define ICLAB_GIT_DIRTY \"$2\"" "$out" || fail "expected dirty $2"
}
git init -q "$repo"
git -C "$repo" -c user.name=t -c user.email=t@t commit -q --allow-empty -m first
echo a > "$repo/file"; git -C "$repo" add file
git -C "$repo" -c user.name=t -c user.email=t@t commit -q -m second
first=$(git -C "$repo" rev-parse HEAD)
stamp "$repo"; expect "$first" false
touch -d '2000-01-01' "$out"; before=$(stat -c %Y "$out")
stamp "$repo"; expect "$first" false
[ "$(stat -c %Y "$out")" = "$before" ] || fail "rewritten although nothing changed"
echo b > "$repo/file"; stamp "$repo"; expect "$first" true
git -C "$repo" checkout -q -- file; stamp "$repo"; expect "$first" false
touch "$repo/untracked"; stamp "$repo"; expect "$first" true
git -C "$repo" add untracked; git -C "$repo" -c user.name=t -c user.email=t@t commit -q -m third
second=$(git -C "$repo" rev-parse HEAD); [ "$second" != "$first" ] || fail "no new commit"
stamp "$repo"; expect "$second" false
mkdir "$work/plain"; GIT_CEILING_DIRECTORIES=$work stamp "$work/plain"; expect unknown unknown
if cmake -DOUT="$out" -P "$script" 2>/dev/null; then fail "ran without SOURCE_DIR"; fi
echo "git_stamp: clean, modified, untracked, new commit and outside git stamped as expected; unchanged text not rewritten"
