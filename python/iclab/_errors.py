"""iclab's errors as Python's: the C++ extension raises ValueError (iclab::InputError, exit 2 in the CLI) or
RuntimeError (iclab::Error, exit 1); here a refusal that names an input path which does not exist becomes
FileNotFoundError, with the same message."""
import contextlib
import errno
import os


@contextlib.contextmanager
def inputs(*paths):
    """Runs the block; a ValueError or RuntimeError while one of `paths` (None skipped) does not exist is re-raised as
    FileNotFoundError(ENOENT, the CLI's message, that path)."""
    try:
        yield
    except (ValueError, RuntimeError) as error:
        for path in paths:
            if path is not None and not os.path.lexists(os.fspath(path)):
                raise FileNotFoundError(errno.ENOENT, str(error), os.fspath(path)) from None
        raise


def check_status(status, what):
    """A command's exit status (iclab's meaning: 2 bad input, 1 a failure) as an exception."""
    if status == 2:
        raise ValueError(what)
    if status != 0:
        raise RuntimeError(what)
