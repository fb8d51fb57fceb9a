"""Each Python path equals its CLI path bit for bit (issue 42): logits, adapters, generated tokens, run results."""
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

import iclab
from conftest import QUICK_INDUCTION, SOURCE, TINY_INDUCTION, iclab_cli, last_line

TEXT = "QaXmbYcZpaXtbYrc"
PROMPT = "QaXmbYcZdWeV"


def read(path, name):
    with h5py.File(path, "r") as f:
        return f[name][()]


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_induction_logits_equal_iclab_predict(induction_run, scratch):
    out = scratch / "predict.h5"
    iclab_cli("predict", induction_run, "--text", TEXT, "--out", out, "--overwrite")
    model = iclab.load(induction_run).model
    assert model.dtype == "float64"
    ours = model.logits(TEXT)
    assert ours.shape == (len(TEXT), 52)
    assert same_bits(ours, read(out, "logits"))
    # ids in any integer type, and the CLI path through Model.predict, give the same bits
    assert same_bits(model.logits(np.array(iclab._iclab.encode_letters(TEXT), dtype=np.int64)), ours)
    frame = model.predict(text=TEXT, top=2)
    assert same_bits(frame.attrs["logits"], ours)
    assert list(frame["token"]) == list(TEXT)


def test_batch_rows_equal_single_sequences(induction_run):
    model = iclab.Model(induction_run)
    ids = np.array([iclab._iclab.encode_letters(t) for t in ("QaXmbYcZpaXt", "abcdeabcdeab", "ZZZZaaaaXXXX")], dtype=np.int32)
    batch = model.logits(ids)
    assert batch.shape == (3, 12, 52)
    for row, tokens in zip(batch, ids):
        assert same_bits(row, model.logits(tokens))


def test_convert_equals_iclab_convert_and_adapter_gives_prompted_logits(induction_run, scratch):
    cli_file = scratch / "cli_adapter.h5"
    iclab_cli("convert", induction_run, "--prompt", PROMPT, "--out", cli_file, "--overwrite")
    model = iclab.load(induction_run).model
    adapter = model.convert(PROMPT)
    saved = adapter.save(scratch / "py_adapter.h5", overwrite=True)
    compare = subprocess.run([sys.executable, os.path.join(SOURCE, "scripts", "bench", "compare_exports.py"), str(cli_file), saved.path],
                             capture_output=True, text=True)
    assert compare.returncode == 0, compare.stdout + compare.stderr
    assert adapter.b_kv.shape == (2, 2, 32, 32) and adapter.b_d.shape == (2, 2, 32)
    assert same_bits(adapter.b_kv[1], read(cli_file, "adapter/blocks.1.attn.b_kv"))
    # ICLCA is exact: the model with the adapter reads "abcde" as the model reads PROMPT + "abcde"
    with_adapter = model.with_adapters([adapter]).logits("abcde")
    prompted = model.logits(PROMPT + "abcde")[len(PROMPT):]
    assert np.max(np.abs(with_adapter - prompted)) <= 1e-9 * np.max(np.abs(prompted))
    # and the CLI's predict with the CLI's adapter file gives the same bits
    out = scratch / "predict_adapter.h5"
    iclab_cli("predict", induction_run, "--text", "abcde", "--adapter", cli_file, "--out", out, "--overwrite")
    assert same_bits(with_adapter, read(out, "logits"))


def test_lm_logits_generate_and_convert_equal_the_cli(lm_run, scratch):
    tokens = [73, 110, 32, 116, 104, 101, 32, 98]
    out = scratch / "lm_predict.h5"
    iclab_cli("predict", lm_run, "--tokens", ",".join(map(str, tokens)), "--out", out, "--overwrite", "--top", "0")
    model = iclab.load(lm_run).model
    assert model.dtype == "float32"  # the run's model.dtype
    assert same_bits(model.logits(tokens), read(out, "logits"))
    out64 = scratch / "lm_predict64.h5"
    iclab_cli("predict", lm_run, "--tokens", ",".join(map(str, tokens)), "--dtype", "float64", "--out", out64, "--overwrite", "--top", "0")
    assert same_bits(iclab.Model(lm_run, dtype="float64").logits(tokens), read(out64, "logits"))
    # text through the run's tokenizer (bytes here)
    assert same_bits(model.logits("In the b"), read(out, "logits"))
    for flags, kwargs in (([], {}), (["--temperature", "0.8", "--top-k", "20", "--seed", "5"], dict(temperature=0.8, top_k=20, seed=5))):
        gen = scratch / "generate.h5"
        iclab_cli("generate", lm_run, "--prompt-tokens", ",".join(map(str, tokens)), "--max-new-tokens", "12", "--out", gen,
                  "--overwrite", "--quiet", *flags)
        generated, logits = model.generate(tokens, max_new_tokens=12, return_logits=True, **kwargs)
        assert same_bits(generated, read(gen, "generated"))
        assert same_bits(logits, read(gen, "logits"))
    cli_cache = scratch / "cli_cache.h5"
    iclab_cli("convert", lm_run, "--prompt-tokens", ",".join(map(str, tokens)), "--method", "exact", "--out", cli_cache, "--overwrite")
    adapter = model.convert(tokens, method="exact", out=scratch / "py_cache.h5", overwrite=True)
    compare = subprocess.run([sys.executable, os.path.join(SOURCE, "scripts", "bench", "compare_exports.py"), str(cli_cache), adapter.path],
                             capture_output=True, text=True)
    assert compare.returncode == 0, compare.stdout + compare.stderr


def test_run_equals_iclab_run(scratch):
    """iclab.run and `iclab run` of the same config and overrides: the same results, dataset for dataset."""
    out = scratch / "same_out"
    _, stdout, _ = iclab_cli("run", QUICK_INDUCTION, "--quiet", *TINY_INDUCTION, f"output.dir={out}")
    cli_dir = last_line(stdout)
    moved = scratch / "same_out_cli"
    shutil.move(str(out), str(moved))  # the Python run writes to the same output.dir: the same config, byte for byte
    run = iclab.run(QUICK_INDUCTION, TINY_INDUCTION, out=out)
    assert os.path.basename(run.run_dir) == os.path.basename(cli_dir)
    compare = subprocess.run([sys.executable, os.path.join(SOURCE, "scripts", "bench", "compare_exports.py"), "--results",
                              str(moved / os.path.basename(cli_dir)), run.run_dir], capture_output=True, text=True)
    assert compare.returncode == 0, compare.stdout + compare.stderr
    assert run.config["train"]["steps"] == 40
    assert "final_eval" in run.tables or run.tables  # tables read into pandas
    assert run.curves is not None and len(run.curves) > 0


def test_sweep_runs_every_job(scratch):
    """iclab.sweep runs `iclab sweep` and returns its finished runs: one row per job, each run equal to its own config."""
    sweep_file = scratch / "tiny_sweep.yaml"
    sweep_file.write_text(f"name: py_tiny\nconfig: {QUICK_INDUCTION}\noverrides: [{', '.join(TINY_INDUCTION)}, "
                          f"output.dir={scratch / 'sweeps'}]\ngrid:\n  seed: 0:2\n")
    runs = iclab.sweep(sweep_file, jobs=2, threads=1)
    assert len(runs) == 2 and sorted(runs["seed"]) == [0, 1]
    assert os.path.isdir(runs.attrs["sweep_dir"])
    assert (runs["train.steps"] == 40).all()


def test_tokenizer_round_trip_equals_iclab_tokenize(lm_run):
    tok = iclab.tokenizer(os.path.join(lm_run, "tokenizer"))
    ids = tok.encode("In the beginning\n")
    assert ids.dtype == np.int32 and list(ids) == list(b"In the beginning\n")  # the byte-level tokenizer: ids are bytes
    assert tok.decode(ids) == "In the beginning\n"
    _, out, _ = iclab_cli("tokenize", "--tokenizer", os.path.join(lm_run, "tokenizer"), "--text", "In the beginning")
    assert [int(t) for t in out.split()] == list(tok.encode("In the beginning"))


def test_export_then_import_gives_the_same_model(lm_run, scratch):
    """Run.export writes the Hugging Face folder `iclab export` writes; iclab.import_gpt2 reads it back into a run whose
    logits are the original's, bit for bit (float32 parameters both ways)."""
    folder = iclab.load(lm_run).export(scratch / "exported", overwrite=True)
    status, _, _ = iclab_cli("export", lm_run, "--format", "safetensors", "--out", scratch / "exported_cli", "--overwrite")
    assert status == 0 and "model.safetensors" in os.listdir(folder)
    for name in sorted(os.listdir(scratch / "exported_cli")):
        if name.endswith(".safetensors"):
            with open(os.path.join(folder, name), "rb") as a, open(scratch / "exported_cli" / name, "rb") as b:
                assert a.read() == b.read()
    imported = iclab.import_gpt2(folder, scratch / "imported", overwrite=True)
    tokens = [73, 110, 32, 116, 104, 101]
    assert same_bits(imported.model.logits(tokens), iclab.load(lm_run).model.logits(tokens))
