#!/usr/bin/python3
"""Executes a notebook top to bottom in a fresh IPython kernel (nbclient, Debian's python3-nbclient and
python3-ipykernel), as a new user would run it; exit 1 when a cell raises (the cell and its error printed).

    scripts/python/run_notebook.py docs/notebooks/quickstart.ipynb [--work DIR] [--write | --smoke]

The kernel starts in the notebook's folder with ICLAB_NOTEBOOK_WORK=DIR (default: a temporary folder), where the
notebook writes what it makes. --write stores the executed notebook, outputs included, over the input (atomically):
how the committed notebook gets its outputs. The kernel finds `import iclab` through PYTHONPATH (build/python).
--smoke (ctest python_notebook; issue 44: the full notebook trains 4500 steps, ~10 min of the test suite's CPU) runs
every cell as written, but after the first cell (the one that imports iclab) it wraps `iclab.run` so that a run of a
config named in SMOKE gets SMOKE's overrides after the cell's own: shorter training, the same code paths and API. The
notebook's text is not changed; --write (the committed outputs) always runs it in full.
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from script_io import atomic_output, usage_error  # noqa: E402

USAGE = "usage: run_notebook.py NOTEBOOK.ipynb [--work DIR] [--write | --smoke]"
# --smoke: overrides appended to every iclab.run of these configs (by file name). The quick induction model at 300
# steps has not learned the task (it forms at ~1000-2000): the notebook's cells print what they get, and no cell
# asserts a learned value, so what is tested is that every cell runs against the current API.
SMOKE = {"induction_head.yaml": ["train.steps=300", "train.warmup_steps=50", "eval.every=100", "eval.sequences=128"]}
SMOKE_CELL = """# run_notebook.py --smoke: iclab.run of the configs below gets these overrides after its own (not in the notebook)
import os as _smoke_os
_smoke_run, _smoke = iclab.run, {smoke!r}
def _smoke_wrapper(config=None, overrides=(), *args, **kwargs):
    if isinstance(config, (str, _smoke_os.PathLike)) and _smoke_os.path.basename(config) in _smoke:
        overrides = list(overrides) + _smoke[_smoke_os.path.basename(config)]
    return _smoke_run(config, overrides, *args, **kwargs)
iclab.run = _smoke_wrapper
"""


def main(argv):
    args, work, write, smoke = [], None, False, False
    i = 0
    while i < len(argv):
        if argv[i] == "--work" and i + 1 < len(argv):
            work, i = argv[i + 1], i + 2
        elif argv[i] == "--write":
            write, i = True, i + 1
        elif argv[i] == "--smoke":
            smoke, i = True, i + 1
        elif argv[i].startswith("-"):
            usage_error(USAGE, f"unknown option {argv[i]}")
        else:
            args.append(argv[i])
            i += 1
    if len(args) != 1 or not os.path.isfile(args[0]):
        usage_error(USAGE, "give one notebook file")
    if smoke and write:
        usage_error(USAGE, "--smoke shortens the runs: its outputs are not the notebook's, so it cannot --write them")
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    path = os.path.abspath(args[0])
    notebook = nbformat.read(path, as_version=4)
    if smoke:
        first = next(i for i, c in enumerate(notebook.cells) if c.cell_type == "code")
        if "import iclab" not in notebook.cells[first].source:
            print(f"run_notebook: {path}: --smoke needs the first code cell to import iclab", file=sys.stderr)
            return 1
        notebook.cells.insert(first + 1, nbformat.v4.new_code_cell(SMOKE_CELL.format(smoke=SMOKE)))
    work = os.path.abspath(work) if work else tempfile.mkdtemp(prefix="iclab_notebook_")
    os.makedirs(work, exist_ok=True)
    os.environ["ICLAB_NOTEBOOK_WORK"] = work
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # the kernel's debugger notes about frozen modules
    client = NotebookClient(notebook, timeout=1800, kernel_name="python3",
                            resources={"metadata": {"path": os.path.dirname(path)}})
    try:
        client.execute()
    except CellExecutionError as error:
        print(f"run_notebook: {path}: a cell failed:\n{error}", file=sys.stderr)
        return 1
    cells = sum(1 for c in notebook.cells if c.cell_type == "code") - (1 if smoke else 0)
    if write:
        for cell in notebook.cells:  # outputs only: no machine-specific execution metadata in the committed file
            cell.metadata.pop("execution", None)
        with atomic_output(path) as staging:
            nbformat.write(notebook, staging)
    print(f"run_notebook: {path}: {cells} code cells executed{' and written' if write else ''}{' (--smoke: shortened runs)' if smoke else ''} (work folder {work})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
