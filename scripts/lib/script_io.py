"""Shared by iclab's Python scripts (stdlib only): bad arguments end in a usage line and exit 2, never a traceback, and
an output file is checked before any work and written atomically (a unique temporary name beside the target, renamed
over it when complete), never onto one of the script's inputs. docs/cli.md#scripts states the policy.

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
    from script_io import usage_error, check_output, atomic_output, atomic_savefig
"""
import contextlib
import os
import sys
import tempfile

USAGE_EXIT = 2  # bad arguments or input; exit 1 stays for failures, other codes for results a script documents


def usage_error(usage, message):
    """Prints the message and the usage line on stderr and exits 2."""
    program = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "script"
    print(f"{program}: {message}", file=sys.stderr)
    if usage:
        print(usage if usage.startswith("usage") else f"usage: {usage}", file=sys.stderr)
    sys.exit(USAGE_EXIT)


def _same(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def check_output(path, inputs=(), usage="", suffixes=None):
    """The output file `path`, checked before any work: a name, an existing writable parent folder, not a folder or a
    special file, not one of `inputs` (files or folders the script reads; an input folder may hold the output, as a
    run folder holds its figures, but the output is never the folder itself nor a file the script reads), and, when
    `suffixes` is given, one of those extensions. Returns the absolute path; exits 2 with the usage line otherwise."""
    path = os.fspath(path)
    if not path or "\0" in path:
        usage_error(usage, f"bad output name {path!r}")
    if path.endswith(os.sep):
        usage_error(usage, f"the output {path} names a folder, not a file")
    target = os.path.abspath(path)
    parent = os.path.dirname(target)
    if len(os.path.basename(target).encode()) > 200:  # leaves room for the temporary name's prefix and suffix
        usage_error(usage, f"the output name {os.path.basename(target)[:40]}... is too long")
    if not os.path.isdir(parent):
        usage_error(usage, f"the output's folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        usage_error(usage, f"the output's folder {parent} is not writable")
    if os.path.lexists(target):
        if os.path.isdir(target):
            usage_error(usage, f"the output {path} is a folder")
        if not os.path.isfile(target):
            usage_error(usage, f"the output {path} exists and is not a regular file")
        if os.path.islink(target):
            usage_error(usage, f"the output {path} is a symlink (it would be replaced, not its target)")
    if suffixes is not None and os.path.splitext(target)[1].lower() not in suffixes:
        usage_error(usage, f"the output {path} must end in {' or '.join(sorted(suffixes))}")
    for source in inputs:
        source = os.fspath(source)
        if _same(source, target):
            usage_error(usage, f"the output {path} is the input {source}: it would be overwritten")
    return target


@contextlib.contextmanager
def atomic_output(path):
    """Yields a unique temporary name beside `path` (same folder, same extension); renames it over `path` when the
    block completes, removes it when the block raises. Only the temporary file is ever deleted."""
    target = os.path.abspath(os.fspath(path))
    folder, name = os.path.split(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=os.path.splitext(name)[1], dir=folder)
    os.close(fd)
    try:
        yield tmp
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it 0600: the file gets the mode a plain open() would give
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write_text(path, text):
    with atomic_output(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)


def atomic_savefig(fig, path, **kwargs):
    """fig.savefig onto a temporary name beside `path`, renamed over it: the format is the target's extension."""
    fmt = os.path.splitext(os.fspath(path))[1].lstrip(".").lower() or "png"
    with atomic_output(path) as tmp:
        fig.savefig(tmp, format=fmt, **kwargs)


def positional(argv, usage, low, high, doc=None):
    """argv[1:] as positional arguments only: -h/--help prints `doc` (or the usage) and exits 0; an option, or fewer
    than `low` or more than `high` arguments, is a usage error."""
    args = list(argv[1:])
    if len(args) == 1 and args[0] in ("-h", "--help"):
        print(doc or usage)
        sys.exit(0)
    for arg in args:
        if arg.startswith("-"):
            usage_error(usage, f"unknown option {arg}")
    if not low <= len(args) <= high:
        usage_error(usage, f"expected {low} to {high} arguments, got {len(args)}")
    return args


def run_results(run_dir, usage):
    """RUN_DIR/results.h5 of a finished run, as a regular file; a usage error otherwise."""
    results = os.path.join(os.fspath(run_dir), "results.h5")
    if not os.path.isdir(run_dir):
        usage_error(usage, f"no run folder {run_dir}")
    if not os.path.isfile(results):
        usage_error(usage, f"no {results} (is {run_dir} a finished run?)")
    return results


@contextlib.contextmanager
def reading(path, usage, what="a results file of this kind"):
    """Turns a file that cannot be read as expected (missing group, damaged HDF5, wrong type) into a usage error."""
    try:
        yield
    except (OSError, KeyError, ValueError, TypeError, IndexError) as e:
        usage_error(usage, f"cannot read {path} as {what}: {type(e).__name__}: {e}")


def check_output_folder(folder, usage, prefix=""):
    """An existing writable folder for a script's fixed output names, with an optional PREFIX of those names (no path
    separator, no NUL). Returns the folder as given; a usage error otherwise."""
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        usage_error(usage, f"the output folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        usage_error(usage, f"the output folder {folder} is not writable")
    if "/" in prefix or "\0" in prefix or prefix.startswith(".") or len(prefix.encode()) > 100:
        usage_error(usage, f"bad PREFIX {prefix!r} (no '/', no leading '.', at most 100 bytes)")
    return folder
