"""Catch2 test names that ctest's test discovery would split: catch_discover_tests turns a ';' in a TEST_CASE name
into a CMake list separator, so the test becomes two ctest entries that both fail (2026-11-26). Also refuses a name
given twice (Catch2 refuses it at run time).
  check_test_names.py SOURCE_DIR [TESTS_DIR]   exit 1 listing each bad name, 0 otherwise, 2 for bad arguments
"""
import glob
import os
import re
import sys

NAME = re.compile(r'TEST_CASE\(\s*"((?:[^"\\]|\\.)*)"')


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    tests = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "tests")
    if len(sys.argv) > 3 or any(a.startswith("-") for a in sys.argv[1:]) or not os.path.isdir(tests):
        print(f"check_test_names: no tests folder {tests}\nusage: check_test_names.py SOURCE_DIR [TESTS_DIR]", file=sys.stderr)
        return 2
    bad, seen = [], {}
    for path in sorted(glob.glob(os.path.join(tests, "*.cpp"))):
        with open(path) as f:
            text = f.read()
        for m in NAME.finditer(text):
            name, line = m.group(1), text.count("\n", 0, m.start()) + 1
            where = f"{os.path.relpath(path, root)}:{line}"
            if ";" in name:
                bad.append(f"{where}: ';' in the test name (ctest splits it): {name}")
            if name in seen:
                bad.append(f"{where}: the test name is also at {seen[name]}: {name}")
            seen.setdefault(name, where)
    for line in bad:
        print("check_test_names: " + line, file=sys.stderr)
    print(f"check_test_names: {len(seen)} test names, {len(bad)} bad", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
