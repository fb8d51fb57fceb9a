"""What the measured-block markers of the docs share (scripts/report/measured_blocks.py reads every block,
readme_tables.py fills the table and figure blocks): the marker's key=value attributes and whether a marker is only
quoted as an example."""
import shlex


class MarkerError(ValueError):
    pass


def quoted(text, start):
    """True when the marker at `start` is an example, not a block: inside a ``` fence or right after a backtick."""
    if start > 0 and text[start - 1] == "`":
        return True
    return ("\n" + text[:start]).count("\n```") % 2 == 1


def attributes(text):
    """key=value pairs of a marker (values may be double-quoted); raises MarkerError on a malformed one."""
    try:
        parts = shlex.split(text, posix=True)
    except ValueError as e:
        raise MarkerError(f"unparsable attributes: {e}")
    attrs = {}
    for p in parts:
        if "=" not in p:
            raise MarkerError(f"attribute without a value: {p!r}")
        k, v = p.split("=", 1)
        attrs[k] = v
    return attrs
