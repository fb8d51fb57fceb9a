"""README tables and figures generated from runs' results.h5 (issue 46, "one commit of record"): each block names the
runs, the commit and the CPU they were measured at, so that scripts/report/measured_blocks.py can tell its age.

A table block (docs/testing.md#measured-blocks-every-published-number-names-its-commit-issue-46; attribute values in double quotes when they hold spaces):
  <!-- table: run=GLOB dataset=/tables/NAME columns="COL|COL|…" [headers="H|H|…"] [where="COL=VALUE,…"] [format=.4g] -->
  … generated: a caption line (runs, dataset, commit, CPU, the runs' fingerprint families), a blank line, the table …
  <!-- /table -->
  run      results.h5 folders under results/ (a glob; several runs give their rows in path order)
  dataset  /tables/NAME (a table of column datasets: one row per table row) or / (one row per run, attributes only)
  columns  "|"-separated cells ("\|" a literal bar): a column name, or a Python format template over column names and the run's root
           attributes as {@NAME} (e.g. "{steps_to_90pct_mean:.0f} ± {steps_to_90pct_std:.0f}")
  headers  the header cells (default: the columns)
  where    keep the rows whose column equals VALUE (all of them); "COL=V1|V2|…": one of the values
  pivot    pivot=COL: one column per value of COL (first-seen order) holding the last column's cell; the other columns
           key the rows (rows with equal key cells share a line, two rows for one key and value are refused); the last
           header is a template over the columns of the value's first row (default "{COL}", e.g. "t = {position}")
  format   the format of a bare float column (default .4g)
  kind     bits (default) or timed: a table of wall times or speeds (measured_blocks.py exempts it from the age rule)
A figure block:
  <!-- figure: run=GLOB command="scripts/plot/figure1.sh {run} {out}" out=docs/figures/NAME.png alt="…" --> … <!-- /figure -->
  runs the command on the (one) run with --write and shows the image under a caption naming its commit and CPU.

  readme_tables.py --write [--results DIR] [FILE ...]   rewrite every block in place (atomically)
  readme_tables.py --check [--results DIR] [FILE ...]   exit 1 when a block differs from what the runs give
Files: default README.md, experiments/*/README.md, docs/*.md; --results: default <checkout>/results.
Exit status: 0 written / equal; 1 a block differs (--check), or a block's runs are missing, unfinished, from several
commits or lack its dataset or columns (named on stderr; nothing is written then); 2 bad arguments or broken markers.
"""
import argparse
import glob
import math
import os
import platform
import re
import shlex
import subprocess
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from script_io import atomic_write_text  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OPEN = re.compile(r"<!--\s*(table|figure):(.*?)-->")
FIELD = re.compile(r"\{([^{}:!]+)")
CELL_SPLIT = re.compile(r"(?<!\\)\|")  # cells are separated by "|"; "\|" is a literal bar


from markers import MarkerError as BlockError, attributes, quoted  # noqa: E402,F401


def plain(value):
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, np.generic):
        return value.item()
    return value


def cell(value, spec):
    """One value as the README shows it: floats with `spec`, integral values without a point, strings as they are."""
    value = plain(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "n/a"
        return format(value, spec)
    return str(value)


def find_runs(results, pattern):
    runs = sorted(p for p in glob.glob(os.path.join(results, pattern)) if os.path.isfile(os.path.join(p, "results.h5")))
    if not runs:
        raise BlockError(f"no finished run matches results/{pattern}")
    return runs


def local_cpu(hostname):
    """'MODEL, ' of this machine's CPU when the run was made here (results.h5 records the host, not the CPU model)."""
    if not hostname or str(hostname) != platform.node():
        return ""
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name")) + ", "
    except (OSError, StopIteration):
        return ""


def provenance(results, pattern, runs):
    """(commit, dirty, cpu, families) of the runs; refuses runs of several commits (one commit of record). families:
    the fingerprint families the runs depend on (scripts/report/families.py; None: every family), by which
    scripts/report/measured_blocks.py ages the block."""
    from families import Families
    known = Families(ROOT)
    commits, cpus, dirty, families = set(), set(), False, set()
    for run in runs:
        with h5py.File(os.path.join(run, "results.h5"), "r") as f:
            a = {k: plain(v) for k, v in f.attrs.items() if k != "config"}
        own = known.of_run(a)
        families = None if own is None or families is None else families | own
        commits.add(str(a.get("git_commit", "unknown")))
        dirty = dirty or str(a.get("git_dirty", "false")) == "true"
        cpus.add(str(a["cpu"]) if "cpu" in a else
                 f"{local_cpu(a.get('hostname'))}{a.get('simd', '?')}, OpenBLAS core {a.get('blas_core', '?')}")
    if len(commits) > 1:
        raise BlockError(f"results/{pattern}: runs from several commits ({', '.join(sorted(c[:12] for c in commits))})")
    return commits.pop(), dirty, "; ".join(sorted(cpus)), families


def caption(results, pattern, runs, what):
    from families import text_of
    commit, dirty, cpu, families = provenance(results, pattern, runs)
    where = f"`results/{pattern}`" + (f" ({len(runs)} runs)" if len(runs) > 1 else "")
    return (f"*Generated by `scripts/report/readme_tables.py` from {where}{what}: commit {commit[:12]}"
            f"{' (dirty)' if dirty else ''}, {cpu}; do not edit. Fingerprint families: {text_of(families).replace(',', ', ')}.*")


def rows_of(run, dataset, where):
    with h5py.File(os.path.join(run, "results.h5"), "r") as f:
        attrs = {"@" + k: plain(v) for k, v in f.attrs.items() if k != "config"}
        if dataset in ("", "/"):
            return [dict(attrs)]
        if dataset not in f or not isinstance(f[dataset], h5py.Group):
            raise BlockError(f"{run}: no table {dataset}")
        group = f[dataset]
        columns = {name: group[name][()] for name in group if isinstance(group[name], h5py.Dataset)}
    n = len(next(iter(columns.values()))) if columns else 0
    rows = []
    for i in range(n):
        row = dict(attrs)
        row.update({name: plain(values[i]) for name, values in columns.items()})
        if all(cell(row.get(k), "g") in values for k, values in where):
            rows.append(row)
    return rows


def render_cell(col, row, spec, where):
    """One cell of `row`: a bare column name (floats in `spec`) or a template over column names; BlockError naming `where`."""
    try:
        if "{" in col:
            fields = {name.strip(): row[name.strip()] for name in FIELD.findall(col)}
            if any(isinstance(v, float) and math.isnan(v) for v in fields.values()):
                return "n/a"
            return col.format_map({k: plain(v) for k, v in fields.items()})
        return cell(row[col], spec)
    except KeyError as e:
        raise BlockError(f"{where}: no column {e}")
    except (ValueError, TypeError) as e:
        raise BlockError(f"{where}: cannot format {col!r}: {e}")


def pivoted(rows, columns, headers, pivot, spec):
    """(header cells, rows of cells): one column per value of `pivot` holding the last column's cell, keyed by the others."""
    spread, lines = {}, {}
    for where, row in rows:
        if pivot not in row:
            raise BlockError(f"{where}: no column '{pivot}'")
        value = cell(row[pivot], "g")
        if value not in spread:
            spread[value] = render_cell(headers[-1], row, spec, where)
        key = tuple(render_cell(c, row, spec, where) for c in columns[:-1])
        line = lines.setdefault(key, {})
        if value in line:
            raise BlockError(f"{where}: two rows for ({', '.join(key)}) at {pivot}={value} (add a key column)")
        line[value] = render_cell(columns[-1], row, spec, where)
    return headers[:-1] + list(spread.values()), [list(key) + [line.get(v, "") for v in spread] for key, line in lines.items()]


def render_table(results, attrs):
    for key in ("run", "columns"):
        if key not in attrs:
            raise BlockError(f"a table block needs {key}=")
    runs = find_runs(results, attrs["run"])
    dataset = attrs.get("dataset", "/")
    columns = [c.replace("\\|", "|") for c in CELL_SPLIT.split(attrs["columns"])]
    pivot = attrs.get("pivot")
    default_headers = "|".join(CELL_SPLIT.split(attrs["columns"])[:-1] + [f"{{{pivot}}}"]) if pivot else attrs["columns"]
    headers = CELL_SPLIT.split(attrs.get("headers", default_headers))  # "\|" stays escaped in the header
    if len(headers) != len(columns):
        raise BlockError(f"{len(headers)} headers for {len(columns)} columns")
    if pivot and (len(columns) < 2 or "{" not in headers[-1]):
        raise BlockError("pivot= needs a key column, a value column and a header template for the value's columns")
    spec = attrs.get("format", ".4g")
    where = [(k, v.split("|")) for k, v in (w.split("=", 1) for w in attrs.get("where", "").split(",") if w)]
    rows = [(f"{run}{dataset}", row) for run in runs for row in rows_of(run, dataset, where)]
    if not rows:
        raise BlockError(f"results/{attrs['run']}{dataset}: no rows")
    if pivot:
        headers, body = pivoted(rows, columns, headers, pivot, spec)
    else:
        body = [[render_cell(col, row, spec, at) for col in columns] for at, row in rows]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |" for cells in body]
    return caption(results, attrs["run"], runs, f", `{dataset}`" if dataset not in ("", "/") else "") + "\n\n" + "\n".join(lines)


def render_figure(root, results, attrs, readme, write):
    for key in ("run", "command", "out"):
        if key not in attrs:
            raise BlockError(f"a figure block needs {key}=")
    runs = find_runs(results, attrs["run"])
    if len(runs) != 1:
        raise BlockError(f"a figure block draws one run; results/{attrs['run']} matches {len(runs)}")
    out = os.path.join(root, attrs["out"])
    if write:
        command = attrs["command"].format(run=shlex.quote(runs[0]), out=shlex.quote(out))
        r = subprocess.run(command, shell=True, cwd=root, capture_output=True, text=True)
        if r.returncode != 0:
            raise BlockError(f"`{command}` failed ({r.returncode}): {r.stderr.strip()[-400:]}")
    link = os.path.relpath(out, os.path.dirname(readme))
    return caption(results, attrs["run"], runs, f", drawn by `{attrs['command'].format(run='RUN', out=attrs['out'])}`") + \
        f"\n\n![{attrs.get('alt', os.path.basename(out))}]({link})"


def regenerate(root, results, path, text, write):
    """`text` with every table / figure block regenerated; raises BlockError naming the line."""
    out, pos = [], 0
    while True:
        m = OPEN.search(text, pos)
        if not m:
            out.append(text[pos:])
            return "".join(out)
        if quoted(text, m.start()):
            out.append(text[pos:m.end()])
            pos = m.end()
            continue
        line = text.count("\n", 0, m.start()) + 1
        close = f"<!-- /{m.group(1)} -->"
        end = text.find(close, m.end())
        if end < 0:
            raise BlockError(f"line {line}: no {close}", 2)
        try:
            attrs = attributes(m.group(2))
            body = render_table(results, attrs) if m.group(1) == "table" else render_figure(root, results, attrs, path, write)
        except BlockError as e:
            raise BlockError(f"line {line}: {e.args[0]}", *e.args[1:])
        out.append(text[pos:m.end()] + "\n" + body + "\n")
        out.append(close)
        pos = end + len(close)


def default_files(root):
    files = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "experiments", "*", "README.md")))
    return files + sorted(glob.glob(os.path.join(root, "docs", "*.md")))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true")
    mode.add_argument("--check", action="store_true")
    parser.add_argument("--root", default=ROOT, help="the checkout whose files are meant")
    parser.add_argument("--results", help="the results folder the runs are under (default ROOT/results)")
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    results = os.path.abspath(args.results or os.path.join(root, "results"))
    files = [os.path.abspath(f) for f in args.files] or default_files(root)
    for f in files:
        if not os.path.isfile(f):
            parser.error(f"no file {f}")
    new_texts, failed, differ = {}, 0, []
    for path in files:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if not any(not quoted(text, m.start()) for m in OPEN.finditer(text)):
            continue
        try:
            new = regenerate(root, results, path, text, args.write)
        except BlockError as e:
            print(f"readme_tables: {os.path.relpath(path, root)}: {e.args[0]}", file=sys.stderr)
            if len(e.args) > 1:
                return 2
            failed += 1
            continue
        if new != text:
            differ.append(path)
            new_texts[path] = new
    if failed:
        print(f"readme_tables: {failed} files with blocks that cannot be generated; nothing written", file=sys.stderr)
        return 1
    if args.write:
        for path, new in new_texts.items():
            atomic_write_text(path, new)
    verb = "differ from the runs" if args.check else "rewritten"
    print(f"readme_tables: {len(differ)} files {verb}" + (": " + ", ".join(os.path.relpath(p, root) for p in differ) if differ else ""),
          file=sys.stderr)
    return 1 if args.check and differ else 0


if __name__ == "__main__":
    sys.exit(main())
