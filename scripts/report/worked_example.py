"""Second half of scripts/report/worked_example.sh: the transcripts of README.md's and docs/adapters.md's worked
example from the outputs the shell script saved in --work, written into their measured blocks
(`<!-- measured: kind=bits … source="scripts/report/worked_example.sh" part=NAME families="…" -->`,
docs/testing.md#measured-blocks-every-published-number-names-its-commit-issue-46; families: the fingerprint families of
the commands the shell script runs, scripts/report/families.py, by which measured_blocks.py ages the blocks).
Parts: readme (README.md's transcript), adapters (docs/adapters.md's), identity (the predict --adapter vs predict on
[X'; X] comparison in docs/adapters.md). Exit 0 written / equal, 1 (--check) a part differs, 2 a missing block or output.
"""
import argparse
import os
import re
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from script_io import atomic_write_text  # noqa: E402

RUN = "results/quick_induction_head_seed0"
BLOCK = re.compile(r'<!-- measured: kind=bits commit=\S+ cpu="[^"]*" source="scripts/report/worked_example.sh" part=(\w+)'
                   r'(?: families="[^"]*")? -->(.*?)<!-- /measured -->', re.S)
# the iclab commands of worked_example.sh (their families are the blocks' families)
COMMANDS = ("iclab run configs/quick/induction_head.yaml; iclab predict RUN --text T; iclab convert RUN --prompt P; "
            "iclab predict RUN --adapter A --text T")


def lines(work, name):
    with open(os.path.join(work, name + ".out"), encoding="utf-8") as f:
        return f.read().rstrip("\n").split("\n")


def rows(out, positions, keep_header=True):
    """The lines before and including the table header, then the rows of the given positions, '   ...' for gaps."""
    header = next(i for i, line in enumerate(out) if line.lstrip().startswith("pos "))
    picked = out[:header + 1] if keep_header else []
    body = out[header + 1:]
    shown = [line for line in body if line.split() and line.split()[0].isdigit() and int(line.split()[0]) in positions]
    if keep_header and shown and shown[0] != body[0]:
        picked.append("   ...")
    picked += shown
    if shown and shown[-1] != body[-1]:
        picked.append("   ...")
    return picked


def transcripts(work):
    train, text = lines(work, "train"), lines(work, "predict_text")
    convert, adapter, plain = lines(work, "convert"), lines(work, "predict_adapter"), lines(work, "predict_plain")
    convert_short = [line for line in convert if line.startswith(("prompt length", "adapter parameters"))] + ["...", convert[-1]]
    readme = ["```",
              "$ build/iclab run configs/quick/induction_head.yaml          # last line of stdout: the run folder",
              "...", train[-1],
              f"$ build/iclab predict {RUN} --text QaXmbYcZpaXtbYrc --top 2"] + rows(text, {9, 12, 15}) + \
             [f"$ build/iclab convert {RUN} --prompt QaXmbYcZdWeV --out qa.h5"] + convert_short + \
             [f"$ build/iclab predict {RUN} --adapter qa.h5 --text abcde --top 2"] + rows(adapter, {0, 1}) + ["```"]
    adapters = ["```", f"$ build/iclab convert {RUN} --prompt QaXmbYcZdWeV --out qa.h5"] + convert + \
               [f"$ build/iclab predict {RUN} --adapter qa.h5 --text abcde --top 2"] + adapter + \
               [f"$ build/iclab predict {RUN} --text abcde --top 2"] + rows(plain, {0}, keep_header=False) + ["```"]
    with h5py.File(os.path.join(work, "with_adapter.h5"), "r") as f:
        a = np.asarray(f["logits"][()], dtype=np.float64)
    with h5py.File(os.path.join(work, "with_prompt.h5"), "r") as f:
        p = np.asarray(f["logits"][()], dtype=np.float64)[-a.shape[0]:]
    d = a - p
    identity = f"‖Δ‖/‖logits‖ = {np.linalg.norm(d) / np.linalg.norm(p):.1e}, max |Δ| {np.abs(d).max():.1e}"
    return {"readme": "\n".join(readme), "adapters": "\n".join(adapters), "identity": identity}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--commit", required=True)
    parser.add_argument("--cpu", required=True)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    try:
        parts = transcripts(args.work)
    except (OSError, KeyError, StopIteration, IndexError) as e:
        print(f"worked_example: cannot read the commands' outputs: {e}", file=sys.stderr)
        return 2
    cpu = args.cpu.replace('"', "'")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from families import Families, text_of
    families = text_of(Families(args.root).of_command(COMMANDS))
    differ, seen = [], set()
    for rel in ("README.md", "docs/adapters.md"):
        path = os.path.join(args.root, rel)
        with open(path, encoding="utf-8") as f:
            text = f.read()

        def fill(m):
            part = m.group(1)
            if part not in parts:
                raise KeyError(part)
            seen.add(part)
            inline = part == "identity"
            body = parts[part] if inline else "\n" + parts[part] + "\n"
            return (f'<!-- measured: kind=bits commit={args.commit} cpu="{cpu}" source="scripts/report/worked_example.sh" '
                    f'part={part} families="{families}" -->{body}<!-- /measured -->')
        new = BLOCK.sub(fill, text)
        if new != text:
            differ.append(rel)
            if not args.check:
                atomic_write_text(path, new)
    missing = set(parts) - seen
    if missing:
        print(f"worked_example: no measured block for part(s) {', '.join(sorted(missing))} in README.md / docs/adapters.md",
              file=sys.stderr)
        return 2
    print(f"worked_example: {parts['identity']}; " + (f"{'differ' if args.check else 'rewritten'}: {', '.join(differ)}"
          if differ else "transcripts unchanged"), file=sys.stderr)
    return 1 if args.check and differ else 0


if __name__ == "__main__":
    sys.exit(main())
