#!/usr/bin/env python3
"""Continuations of held-out KJV verses by an lm run, as a Markdown table (experiments/lm/README.md).

  experiments/lm/generate_heldout.py RUN_DIR [--heldout data/kjv/heldout.txt] [--count 6] [--words 8] [--new-tokens 24]

  [--temperature T --top-k K --seed S]
Takes `count` verse pairs spread evenly over the held-out text (every 20th chapter, never trained on): the prompt is
one whole verse and the first `words` words of the next; iclab generate continues it (greedy by default). The table shows the
prompt's tail, the verse's true rest and the model's continuation up to the end of its first line. iclab is run with
an argument list (no shell); the text goes in as --prompt-text. Prints the table on stdout and writes no file.
Exit status: 0 the table; 2 bad arguments (a usage line on stderr: an unknown option, a missing value, a number out
of range, a missing run folder or held-out file, a held-out file that is not UTF-8 text or has no usable verse pair),
or iclab generate refused its input (its exit 2); 1 iclab failed.
"""
import argparse
import math
import os
import pathlib
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "lib"))
from progress import Progress  # noqa: E402  (issue 44: each pair's iclab generate takes seconds on a 124M model)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir")
    parser.add_argument("--heldout", default="data/kjv/heldout.txt")
    parser.add_argument("--count", type=int, default=6)
    parser.add_argument("--words", type=int, default=8)
    parser.add_argument("--new-tokens", type=int, default=24)
    parser.add_argument("--temperature", type=float, default=0.0, help="0: greedy; > 0: iclab generate samples")
    parser.add_argument("--top-k", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--iclab", default="build/iclab")
    args = parser.parse_args()
    # Every bad input is a usage error (exit 2), never a traceback.
    for name, value, low in (("--count", args.count, 1), ("--words", args.words, 0), ("--new-tokens", args.new_tokens, 1),
                             ("--top-k", args.top_k, 0), ("--seed", args.seed, 0)):
        if value < low or value > 2**31 - 1:
            parser.error(f"{name} must be an integer in [{low}, {2**31 - 1}], got {value}")
    if not math.isfinite(args.temperature) or args.temperature < 0:
        parser.error(f"--temperature must be a finite number >= 0, got {args.temperature}")
    if not os.path.isfile(os.path.join(args.run_dir, "config.yaml")):
        parser.error(f"{args.run_dir} is not a run folder (no config.yaml)")
    if not (os.path.isfile(args.iclab) and os.access(args.iclab, os.X_OK)):
        parser.error(f"--iclab {args.iclab} is not an executable file (scripts/setup.sh builds build/iclab)")
    if not os.path.isfile(args.heldout) or os.path.getsize(args.heldout) > 64 << 20:  # no FIFO, device, huge file
        parser.error(f"--heldout {args.heldout} is not a text file of at most 64 MiB "
                     "(scripts/text/prepare_kjv.sh writes data/kjv/heldout.txt)")
    try:
        text = pathlib.Path(args.heldout).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        parser.error(f"cannot read --heldout {args.heldout}: {e} (scripts/text/prepare_kjv.sh writes data/kjv/heldout.txt)")
    if "\0" in text:  # an argv cannot carry it
        parser.error(f"{args.heldout} contains a NUL byte")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    usable = [i for i in range(len(lines) - 1) if len(lines[i + 1].split()) > args.words + 4]
    if not usable:
        parser.error(f"{args.heldout} has no verse followed by one of more than {args.words + 4} words")
    if args.count > len(usable):
        parser.error(f"--count {args.count}: {args.heldout} has only {len(usable)} usable verse pairs")
    picks = [usable[(k * len(usable)) // args.count] for k in range(args.count)]
    how = "greedy" if args.temperature <= 0 else f"sampled: T = {args.temperature:g}, top-k {args.top_k}, seed {args.seed}"
    print(f"| prompt (a held-out verse, then the start of the next) | the verse goes on | the model continues ({how}) |")
    print("|---|---|---|")
    progress = Progress("generate_heldout")
    progress.stage(f"{len(picks)} continuations of held-out verses with iclab generate")
    for done, i in enumerate(picks):
        words = lines[i + 1].split()
        start, rest = " ".join(words[: args.words]), " ".join(words[args.words:])
        prompt = lines[i] + "\n" + start
        result = subprocess.run([args.iclab, "generate", args.run_dir, "--prompt-text", prompt, "--max-new-tokens",
                                 str(args.new_tokens), "--temperature", str(args.temperature), "--top-k", str(args.top_k),
                                 "--seed", str(args.seed), "--quiet"], capture_output=True, text=True, check=False)
        if result.returncode != 0:
            print(result.stderr, file=sys.stderr, end="")
            print(f"generate_heldout: iclab generate exited {result.returncode}", file=sys.stderr)
            return 2 if result.returncode == 2 else 1
        continuation = result.stdout.split("\n")[0].strip()
        tail = lines[i] if len(lines[i]) < 60 else "…" + lines[i][-57:]
        cell = lambda text: text.replace("|", "\\|")
        print(f"| {cell(tail)} / **{cell(start)}** | {cell(rest)} | {cell(continuation)} |", flush=True)
        progress.tick(done + 1, len(picks), "verse pairs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
