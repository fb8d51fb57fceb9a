#!/usr/bin/python3
"""Executes a notebook top to bottom in a fresh IPython kernel (nbclient, Debian's python3-nbclient and
python3-ipykernel), as a new user would run it; exit 1 when a cell raises (the cell and its error printed).

    scripts/python/run_notebook.py docs/notebooks/quickstart.ipynb [--work DIR] [--write]

The kernel starts in the notebook's folder with ICLAB_NOTEBOOK_WORK=DIR (default: a temporary folder), where the
notebook writes what it makes. --write stores the executed notebook, outputs included, over the input (atomically):
how the committed notebook gets its outputs. The kernel finds `import iclab` through PYTHONPATH (build/python).
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from script_io import atomic_output, usage_error  # noqa: E402

USAGE = "usage: run_notebook.py NOTEBOOK.ipynb [--work DIR] [--write]"


def main(argv):
    args, work, write = [], None, False
    i = 0
    while i < len(argv):
        if argv[i] == "--work" and i + 1 < len(argv):
            work, i = argv[i + 1], i + 2
        elif argv[i] == "--write":
            write, i = True, i + 1
        elif argv[i].startswith("-"):
            usage_error(USAGE, f"unknown option {argv[i]}")
        else:
            args.append(argv[i])
            i += 1
    if len(args) != 1 or not os.path.isfile(args[0]):
        usage_error(USAGE, "give one notebook file")
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    path = os.path.abspath(args[0])
    notebook = nbformat.read(path, as_version=4)
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
    cells = sum(1 for c in notebook.cells if c.cell_type == "code")
    if write:
        for cell in notebook.cells:  # outputs only: no machine-specific execution metadata in the committed file
            cell.metadata.pop("execution", None)
        with atomic_output(path) as staging:
            nbformat.write(notebook, staging)
    print(f"run_notebook: {path}: {cells} code cells executed{' and written' if write else ''} (work folder {work})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
