"""Fixtures of the Python module's tests (ctest python_module: PYTHONPATH=build/python, ICLAB_BINARY=build/iclab,
ICLAB_SOURCE_DIR=the checkout). Each run is trained once per session, by the iclab command, in a scratch folder."""
import json
import os
import subprocess

import pytest

BINARY = os.environ.get("ICLAB_BINARY", "build/iclab")
SOURCE = os.environ.get("ICLAB_SOURCE_DIR", ".")
QUICK_INDUCTION = os.path.join(SOURCE, "configs", "quick", "induction_head.yaml")
# the quick induction config, a few steps: seconds on 2 cores
TINY_INDUCTION = ["train.steps=40", "train.warmup_steps=5", "eval.every=20", "eval.sequences=32", "train.batch_size=16"]


def iclab_cli(*args, cwd=None, check=True):
    """Runs the iclab command; returns (status, stdout, stderr)."""
    done = subprocess.run([BINARY, *map(str, args)], cwd=cwd, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise AssertionError(f"iclab {' '.join(map(str, args))}: exit {done.returncode}\n{done.stderr}")
    return done.returncode, done.stdout, done.stderr


def last_line(text):
    return text.strip().splitlines()[-1]


@pytest.fixture(scope="session")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("iclab_python")


@pytest.fixture(scope="session")
def induction_run(scratch):
    """A finished induction-head run (the quick config, 40 steps) trained by `iclab run`."""
    _, out, _ = iclab_cli("run", QUICK_INDUCTION, "--quiet", *TINY_INDUCTION, f"output.dir={scratch / 'cli_runs'}")
    return last_line(out)


@pytest.fixture(scope="session")
def other_induction_run(scratch):
    """The same config with another seed: another model, whose adapters the first must refuse."""
    _, out, _ = iclab_cli("run", QUICK_INDUCTION, "--quiet", *TINY_INDUCTION, "seed=7", f"output.dir={scratch / 'cli_runs'}")
    return last_line(out)


def bytes_to_unicode():
    """GPT-2's byte -> printable character map (framework/text/byte_map.hpp)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


@pytest.fixture(scope="session")
def lm_run(scratch):
    """A tiny GPT-2-shaped lm run (as tests/lm_run_helpers.hpp): a byte-level tokenizer (ids 0-255, <|endoftext|> 256),
    two lines of text, configs/quick/lm_kjv.yaml for 3 steps at width 16; float32 parameters."""
    root = scratch / "lm"
    tokenizer = root / "tok"
    tokenizer.mkdir(parents=True)
    encoder = {ch: b for b, ch in bytes_to_unicode().items()}
    encoder["<|endoftext|>"] = 256
    (tokenizer / "encoder.json").write_text(json.dumps(encoder))
    (tokenizer / "vocab.bpe").write_text("#version: 0.2\n")
    (root / "train.txt").write_text("In the beginning God created the heaven and the earth. And the earth was without form.\n")
    (root / "heldout.txt").write_text("And God said, Let there be light: and there was light.\n")
    tokens = root / "tokens.h5"
    iclab_cli("tokenize", "--tokenizer", tokenizer, "--out", tokens, "--train", root / "train.txt", "--heldout", root / "heldout.txt")
    _, out, _ = iclab_cli("run", os.path.join(SOURCE, "configs", "quick", "lm_kjv.yaml"), "--quiet", f"data.tokens={tokens}",
                          f"data.tokenizer={tokenizer}", "task.vocab_size=257", "task.context_length=96", "task.seq_len=16",
                          "model.width=16", "model.heads=2", "model.init_std=0.3", "train.steps=3", "train.warmup_steps=1",
                          "eval.every=3", "eval.sequences=2", f"output.dir={root / 'runs'}")
    return last_line(out)
