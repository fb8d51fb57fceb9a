"""iclab's refusals as Python exceptions (issue 42): bad input -> ValueError with the CLI's message (the text `iclab`
prints on stderr before exit 2), a missing input file -> FileNotFoundError."""
import shutil

import h5py
import numpy as np
import pytest

import iclab
from conftest import QUICK_INDUCTION, iclab_cli


def cli_refusal(*args):
    status, _, err = iclab_cli(*args, check=False)
    assert status == 2, err
    return err.strip()


def test_missing_files_raise_file_not_found(scratch, induction_run):
    with pytest.raises(FileNotFoundError):
        iclab.load(scratch / "no_such_run")
    with pytest.raises(FileNotFoundError):
        iclab.run(scratch / "no_such_config.yaml")
    with pytest.raises(FileNotFoundError):
        iclab.Model(induction_run, adapters=[scratch / "no_such_adapter.h5"])
    with pytest.raises(FileNotFoundError):
        iclab.tokenizer(scratch / "no_such_tokenizer")


def test_bad_config_key_is_a_value_error_with_the_cli_message(scratch):
    overrides = ["train.stepz=3", f"output.dir={scratch / 'refused'}"]
    with pytest.raises(ValueError) as refused:
        iclab.run(QUICK_INDUCTION, overrides)
    assert str(refused.value).strip() == cli_refusal("run", QUICK_INDUCTION, *overrides)
    assert "train.stepz" in str(refused.value)
    with pytest.raises(ValueError, match="is not an override"):
        iclab.run(QUICK_INDUCTION, ["train.steps"])


def test_bad_tokens_and_options_are_value_errors(induction_run):
    model = iclab.load(induction_run).model
    with pytest.raises(ValueError, match="outside the vocabulary"):
        model.logits([0, 1, 99])
    with pytest.raises(ValueError, match="predicts in float64"):
        iclab.Model(induction_run, dtype="float32")
    with pytest.raises(ValueError) as refused:
        model.convert("abc", method="hybrid")
    assert str(refused.value).strip() == cli_refusal("convert", induction_run, "--prompt", "abc", "--method", "hybrid", "--out", "x.h5")
    with pytest.raises(ValueError):
        model.logits("ab1")  # not a letter: encode_letters names it
    with pytest.raises(ValueError) as refused:
        model.generate([1, 2, 3])  # generation is for lm runs (the CLI's exit 1 here was a bug: now exit 2)
    assert str(refused.value).strip() == cli_refusal("generate", induction_run, "--prompt-tokens", "1,2,3")


def test_damaged_adapter_is_refused_as_the_cli_refuses_it(induction_run, scratch):
    adapter = iclab.load(induction_run).model.convert("QaXmbYcZ", out=scratch / "good.h5", overwrite=True)
    damaged = scratch / "damaged.h5"
    shutil.copyfile(adapter.path, damaged)
    with h5py.File(damaged, "r+") as f:
        values = f["adapter/blocks.0.attn.b_kv"]
        first = values[0, 0, 0]
        values[0, 0, 0] = np.nextafter(first, np.inf)  # one ulp: the checksum names the file
    with pytest.raises(ValueError) as refused:
        iclab.Model(induction_run, adapters=[damaged])
    assert str(refused.value).strip() == cli_refusal("predict", induction_run, "--text", "abc", "--adapter", damaged)


def test_adapter_of_another_model_is_refused(induction_run, other_induction_run, scratch):
    adapter = iclab.load(other_induction_run).model.convert("QaXmbYcZ", out=scratch / "other.h5", overwrite=True)
    with pytest.raises(ValueError) as refused:
        iclab.load(induction_run).model.with_adapters([adapter])
    assert str(refused.value).strip() == cli_refusal("predict", induction_run, "--text", "abc", "--adapter", adapter.path)
    assert "fingerprint" in str(refused.value) or "model" in str(refused.value)


def test_error_kinds_map_to_python_exceptions():
    with pytest.raises(ValueError, match="an InputError for the test"):
        iclab._iclab._raise_for_test("input")
    with pytest.raises(RuntimeError, match="an Error for the test"):
        iclab._iclab._raise_for_test("error")
