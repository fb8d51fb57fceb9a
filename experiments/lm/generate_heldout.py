#!/usr/bin/env python3
"""Continuations of held-out KJV verses by an lm run, as a Markdown table (experiments/lm/README.md).

  experiments/lm/generate_heldout.py RUN_DIR [--heldout data/kjv/heldout.txt] [--count 6] [--words 8] [--new-tokens 24]

  [--temperature T --top-k K --seed S]
Takes `count` verse pairs spread evenly over the held-out text (every 20th chapter, never trained on): the prompt is
one whole verse and the first `words` words of the next; iclab generate continues it (greedy by default). The table shows the
prompt's tail, the verse's true rest and the model's continuation up to the end of its first line. iclab is run with
an argument list (no shell); the text goes in as --prompt-text.
"""
import argparse
import pathlib
import subprocess
import sys


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
    lines = [line.strip() for line in pathlib.Path(args.heldout).read_text(encoding="utf-8").splitlines() if line.strip()]
    usable = [i for i in range(len(lines) - 1) if len(lines[i + 1].split()) > args.words + 4]
    if args.count < 1 or not usable:
        print("generate_heldout: no verse pairs to use", file=sys.stderr)
        return 2
    picks = [usable[(k * len(usable)) // args.count] for k in range(args.count)]
    how = "greedy" if args.temperature <= 0 else f"sampled: T = {args.temperature:g}, top-k {args.top_k}, seed {args.seed}"
    print(f"| prompt (a held-out verse, then the start of the next) | the verse goes on | the model continues ({how}) |")
    print("|---|---|---|")
    for i in picks:
        words = lines[i + 1].split()
        start, rest = " ".join(words[: args.words]), " ".join(words[args.words:])
        prompt = lines[i] + "\n" + start
        result = subprocess.run([args.iclab, "generate", args.run_dir, "--prompt-text", prompt, "--max-new-tokens",
                                 str(args.new_tokens), "--temperature", str(args.temperature), "--top-k", str(args.top_k),
                                 "--seed", str(args.seed), "--quiet"], capture_output=True, text=True, check=False)
        if result.returncode != 0:
            print(result.stderr, file=sys.stderr)
            return result.returncode
        continuation = result.stdout.split("\n")[0].strip()
        tail = lines[i] if len(lines[i]) < 60 else "…" + lines[i][-57:]
        cell = lambda text: text.replace("|", "\\|")
        print(f"| {cell(tail)} / **{cell(start)}** | {cell(rest)} | {cell(continuation)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
