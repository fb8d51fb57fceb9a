"""ctest report_families: which fingerprint families a run or a command depends on (scripts/report/families.py), and
make_report.record_sentence judging each run by its own families (issue 46), on a tiny git repository made here with a
runs file, configs (one reached through `inherit:`) and tests/data/fingerprints.txt changing one family at a time; and
on this checkout's runs file: a text experiment (lm) depends on tokenize, an unknown experiment on every family."""
import os
import subprocess
import sys
import tempfile

import h5py

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from families import Families, parse, run_attrs, text_of  # noqa: E402
from make_report import record_groups, record_rows, record_sentence  # noqa: E402

RUNS = """# family  iclab arguments
tokenize   tokenize --out {out}/tokens.h5
alpha      run configs/alpha.yaml
alpha_opt  run configs/alpha.yaml model.option=1
text       run configs/text.yaml data.tokens={tokenize}/tokens.h5
beta       run configs/beta.yaml
uses       predict {alpha} --text ab
"""
CONFIGS = {"configs/alpha.yaml": "experiment: alpha\n", "configs/base_text.yaml": "experiment: text\nmodel: {}\n",
           "configs/text.yaml": "inherit: base_text.yaml\nmodel:\n  width: 4\n", "configs/beta.yaml": "experiment: beta\n"}


def fingerprints(**hashes):
    lines = ["# fingerprints"]
    for family in ("tokenize", "alpha", "alpha_opt", "text", "beta", "uses"):
        lines += [f"family\t{family}\tH{hashes.get(family, '0')}\t1", f"{family}\tout.h5:/x\tfloat32\t2\t{hashes.get(family, '0')}"]
    return "\n".join(lines) + "\n"


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def commit(repo, files, message):
    for path, text in files.items():
        full = os.path.join(repo, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)
        git(repo, "add", path)
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


class Run:
    def __init__(self, commit, experiment, dirty=False):
        self.attrs = {"git_commit": commit, "git_dirty": "true" if dirty else "false", "experiment": experiment}


with tempfile.TemporaryDirectory(prefix="iclab_families_") as repo:
    git(repo, "init", "-q")
    first = commit(repo, dict(CONFIGS, **{"scripts/fingerprints/runs.txt": RUNS,
                                          "tests/data/fingerprints.txt": fingerprints()}), "v1")
    known = Families(repo)

    # a run: every family running its experiment (alpha_opt: the same config with an option), closed over {NAME}
    assert known.of_experiment("alpha") == {"alpha", "alpha_opt"}, known.of_experiment("alpha")
    assert known.of_experiment("text") == {"text", "tokenize"}, known.of_experiment("text")   # experiment via inherit:
    assert known.of_experiment("gamma") is None                                              # unknown: every family
    assert known.of_run({"experiment": b"beta"}) == {"beta"}
    assert known.of_run({}) is None
    # a command: `run CONFIG` as its experiment; another subcommand: the families running it, closed over {NAME}
    assert known.of_command("OMP_NUM_THREADS=1 build/iclab run configs/text.yaml seed=1") == {"text", "tokenize"}
    assert known.of_command("iclab run configs/{alpha,beta}.yaml; iclab claims results/x") == {"alpha", "alpha_opt", "beta"}
    assert known.of_command("iclab predict results/r --text ab") == {"uses", "alpha"}
    assert known.of_command("iclab claims results/x") is None and known.of_command("scripts/x.sh") is None
    assert known.of_command("iclab run configs/missing.yaml") is None
    assert parse(text_of(frozenset({"b", "a"}))) == {"a", "b"} and text_of(None) == "all" and parse("all") is None

    # record_sentence: runs of an older commit are HEAD's when their own families' lines are unchanged
    second = commit(repo, {"tests/data/fingerprints.txt": fingerprints(beta="1")}, "beta's bits moved")
    third = commit(repo, {"src.txt": "x\n"}, "code")
    ok = record_sentence([Run(third, "alpha"), Run(third, "alpha"), Run(first, "text"), Run(first, "alpha")], root=repo)
    assert ok.startswith(f"Every number below is what commit {third[:7]} computes: 2 runs at {third[:7]}; "
                         f"2 at {first[:7]}, whose families' fingerprint lines (alpha, alpha_opt, text, tokenize) are "
                         f"{third[:7]}'s"), ok
    bad = record_sentence([Run(third, "alpha"), Run(first, "beta")], root=repo)
    assert bad.startswith(f"**Not one commit of record:** 1 run at {first[:7]} (families beta; family beta's line "
                          f"'beta\tout.h5:/x\tfloat32\t2\t0…' is not in {third[:7]}'s file)"), bad
    assert f"1 run at {third[:7]}" in bad, bad
    unknown = record_sentence([Run(first, "gamma")], root=repo)   # an unknown experiment: every family, beta moved
    assert unknown.startswith("**Not one commit of record:** 1 run at") and "every family" in unknown, unknown
    dirty = record_sentence([Run(third, "alpha", dirty=True)], root=repo)
    assert dirty.startswith(f"**Not one commit of record:** 1 run at {third[:7]} (dirty tree)"), dirty
    assert record_sentence([Run(second, "beta")], root=repo).startswith("Every number below")   # beta at its new bits
    rows = record_rows(record_groups([Run(first, "text"), Run(first, "text"), Run(third, "gamma", dirty=True)], root=repo))
    assert rows == [(first[:12], "text, tokenize", "2"), (third[:12] + " (dirty)", "all", "1")], rows

    # a run folder's results.h5 (h5py): its experiment's families
    for experiment, want in (("text", {"text", "tokenize"}), ("gamma", None)):
        folder = os.path.join(repo, "results", experiment)
        os.makedirs(folder)
        with h5py.File(os.path.join(folder, "results.h5"), "w") as f:
            f.attrs.update({"experiment": experiment, "git_commit": first, "config": f"experiment: {experiment}\n"})
        assert known.of_run(run_attrs(folder)) == want, (experiment, known.of_run(run_attrs(folder)))

# this checkout's runs file: an lm run (a text experiment) depends on tokenize; an imported model on gpt2_import
checkout = Families()
with tempfile.TemporaryDirectory(prefix="iclab_families_") as folder:
    with h5py.File(os.path.join(folder, "results.h5"), "w") as f:
        f.attrs.update({"experiment": "lm", "config_source": "configs/quick/lm_kjv.yaml"})
    lm = checkout.of_run(run_attrs(folder))
assert lm is not None and {"lm", "tokenize"} <= lm and "induction_head" not in lm, lm
assert {"induction_head", "decay_learned"} <= checkout.of_experiment("induction_head")
assert "gpt2_import" in checkout.of_run({"experiment": "lm", "imported_from": "/x/hf"})
assert checkout.of_experiment("no_such_experiment") is None
# prompt_baking_lm (issue 43 on the KJV models, in the quick profile): both configs run its two families and read
# tokenize's output; a measured block's command names the same families
for config in ("configs/quick/prompt_baking_lm.yaml", "configs/quick/prompt_baking_lm_softmax.yaml"):
    fams = checkout.of_subcommand("run", [config, "seed=0"])
    assert fams == {"prompt_baking_lm", "prompt_baking_lm_softmax", "tokenize"}, (config, fams)
print("families: runs and commands mapped to their fingerprint families; record_sentence judges each run by its own")
