"""ctest readme_tables: scripts/report/readme_tables.py on results.h5 files made here (the layout iclab writes: root
attributes git_commit / git_dirty / simd / blas_core, /tables/NAME groups of column datasets). --write fills a block
with a caption naming the runs, the commit and the CPU and a markdown table (templates over columns and {@attributes},
float formats, n/a for NaN, a where filter with alternatives, a pivot, several runs in path order), leaves the text around it alone and is
idempotent; --check exits 1 after a hand edit and 0 after --write; runs of two commits, a missing run, a missing
column and an unclosed block are refused without writing anything; a marker quoted in inline code is left alone."""
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "readme_tables.py")


def make_run(folder, commit, seed, loss, experiment="bias_training"):
    os.makedirs(folder)
    with h5py.File(os.path.join(folder, "results.h5"), "w") as f:
        f.attrs.update({"git_commit": commit, "git_dirty": "false", "simd": "AVX2", "blas_core": "Haswell", "seed": seed,
                        "wall_time_s": 12.5, "experiment": experiment})
        t = f.create_group("tables/summary")
        t["variant"] = np.array([b"no_bias", b"trainable_bias"])
        t["loss"] = np.array([loss, float("nan")])
        t["steps"] = np.array([1150.0, 1133.3333])
        t.attrs["column_order"] = "variant,loss,steps"


def run(root, results, *args):
    r = subprocess.run([sys.executable, SCRIPT, *args, "--root", root, "--results", results, os.path.join(root, "README.md")],
                       capture_output=True, text=True)
    return r.returncode, r.stderr


with tempfile.TemporaryDirectory(prefix="iclab_readme_tables_") as tmp:
    results, root = os.path.join(tmp, "results"), os.path.join(tmp, "checkout")
    os.makedirs(root)
    commit = "0123456789abcdef0123456789abcdef01234567"
    make_run(os.path.join(results, "sweeps/q/job_seed-0"), commit, 0, 0.0026)
    make_run(os.path.join(results, "sweeps/q/job_seed-1"), commit, 1, 0.00213)
    readme = os.path.join(root, "README.md")
    marker = ('<!-- table: run=sweeps/q/job_seed-* dataset=/tables/summary columns="{@seed}|`{variant}`|loss|'
              '{steps:.0f} steps" headers="seed|variant|final loss|to 90 %" format=.2g -->')
    text = f"# Measured\n\nbefore\n\n{marker}\nstale\n<!-- /table -->\n\nafter, and `<!-- table: run=nothing -->` quoted\n"
    with open(readme, "w") as f:
        f.write(text)
    rc, err = run(root, results, "--check")
    assert rc == 1 and "1 files differ" in err, err
    rc, err = run(root, results, "--write")
    assert rc == 0, err
    written = open(readme).read()
    assert written.startswith("# Measured\n\nbefore\n\n" + marker + "\n") and written.endswith(
        "<!-- /table -->\n\nafter, and `<!-- table: run=nothing -->` quoted\n"), written
    assert "`results/sweeps/q/job_seed-*` (2 runs)" in written and "commit 0123456789ab, AVX2, OpenBLAS core Haswell" in written
    # the runs' fingerprint families (this checkout's scripts/fingerprints/runs.txt), by which measured_blocks ages it
    assert "; do not edit. Fingerprint families: bias_training.*" in written, written
    assert "| seed | variant | final loss | to 90 % |\n|---|---|---|---|\n" in written, written
    assert "| 0 | `no_bias` | 0.0026 | 1150 steps |\n| 0 | `trainable_bias` | n/a | 1133 steps |\n" in written, written
    assert "| 1 | `no_bias` | 0.0021 | 1150 steps |" in written, written           # the second run, format .2g
    assert run(root, results, "--write")[0] == 0 and open(readme).read() == written  # idempotent
    assert run(root, results, "--check")[0] == 0
    with open(readme, "w") as f:
        f.write(written.replace("0.0026", "0.0027"))                              # a hand edit
    rc, err = run(root, results, "--check")
    assert rc == 1 and "README.md" in err, err

    # a where filter and one row per run from the root attributes
    with open(readme, "w") as f:
        f.write('<!-- table: run=sweeps/q/job_seed-1 dataset=/tables/summary columns="variant|loss" where="variant=trainable_bias" -->\n'
                '<!-- /table -->\n<!-- table: run=sweeps/q/job_seed-* dataset=/ columns="{@seed}|{@wall_time_s:.1f} s" headers="seed|wall" -->\n'
                '<!-- /table -->\n')
    assert run(root, results, "--write")[0] == 0
    written = open(readme).read()
    assert "| variant | loss |\n|---|---|\n| trainable_bias | n/a |\n" in written and "no_bias" not in written, written
    assert "| 0 | 12.5 s |\n| 1 | 12.5 s |\n" in written, written
    # "\|" is a literal bar inside a cell, not a separator
    with open(readme, "w") as f:
        f.write('<!-- table: run=sweeps/q/job_seed-0 dataset=/ columns="\\|{@seed}\\|" headers="\\|seed\\|" -->\n<!-- /table -->\n')
    assert run(root, results, "--write")[0] == 0
    assert "| \\|seed\\| |\n|---|\n| \\|0\\| |\n" in open(readme).read(), open(readme).read()

    # the caption's families are the union of the runs' (an experiment no family runs: every family), read back by
    # measured_blocks.py as the block's families
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from measured_blocks import blocks
    make_run(os.path.join(results, "sweeps/mixed/a"), commit, 0, 0.1, experiment="regression")
    make_run(os.path.join(results, "sweeps/mixed/b"), commit, 0, 0.1, experiment="bias_training")
    make_run(os.path.join(results, "sweeps/unknown/a"), commit, 0, 0.1, experiment="no_such_experiment")
    for pattern, families, parsed in (("sweeps/mixed/*", "bias_training, regression, regression_claims",
                                       {"bias_training", "regression", "regression_claims"}),
                                      ("sweeps/unknown/*", "all", None)):
        with open(readme, "w") as f:
            f.write(f'<!-- table: run={pattern} dataset=/ columns="{{@seed}}" -->\n<!-- /table -->\n')
        assert run(root, results, "--write")[0] == 0
        written = open(readme).read()
        assert f"Fingerprint families: {families}.*" in written, written
        assert blocks(written)[0]["families"] == parsed, blocks(written)

    # where= with alternatives ("COL=V1|V2") and pivot=: one column per value of a column, keyed by the other cells
    for seed in (0, 1):
        with h5py.File(os.path.join(results, f"sweeps/q/job_seed-{seed}/results.h5"), "a") as f:
            t = f.create_group("tables/long")
            t["gamma"] = np.array([1.0, 1.0, 1.0, 0.5, 0.5, 0.5])
            t["position"] = np.array([0, 1, 2, 0, 1, 2])
            t["change"] = np.array([1.5, 1.25, 1.0, 0.5, 0.25, 0.125]) * (seed + 1)
    with open(readme, "w") as f:
        f.write('<!-- table: run=sweeps/q/job_seed-* dataset=/tables/long columns="{@seed}|gamma|change" pivot=position '
                'where="position=0|2" headers="seed|γ|t = {position}" -->\n<!-- /table -->\n'
                '<!-- table: run=sweeps/q/job_seed-1 dataset=/tables/long columns="gamma|change" pivot=position -->\n<!-- /table -->\n')
    rc, err = run(root, results, "--write")
    assert rc == 0, err
    written = open(readme).read()
    assert ("| seed | γ | t = 0 | t = 2 |\n|---|---|---|---|\n| 0 | 1 | 1.5 | 1 |\n| 0 | 0.5 | 0.5 | 0.125 |\n"
            "| 1 | 1 | 3 | 2 |\n| 1 | 0.5 | 1 | 0.25 |\n") in written, written
    assert "| gamma | 0 | 1 | 2 |\n|---|---|---|---|\n| 1 | 3 | 2.5 | 2 |\n| 0.5 | 1 | 0.5 | 0.25 |\n" in written, written
    assert run(root, results, "--check")[0] == 0
    for body, message in (('columns="gamma|change" pivot=position', "two rows for (1) at position=0"),  # no seed key
                          ('columns="change" pivot=position', "pivot= needs a key column")):
        text = f'<!-- table: run=sweeps/q/job_seed-* dataset=/tables/long {body} -->\nold\n<!-- /table -->\n'
        with open(readme, "w") as f:
            f.write(text)
        rc, err = run(root, results, "--write")
        assert rc == 1 and message in err and open(readme).read() == text, (message, err)

    # refused, nothing written: two commits, a missing run, a missing column, an unclosed block (exit 2)
    make_run(os.path.join(results, "sweeps/q/job_seed-2"), "fedcba9876543210fedcba9876543210fedcba98", 2, 0.1)
    for body, message in ((marker, "several commits"),
                          ('<!-- table: run=sweeps/none dataset=/ columns="{@seed}" -->', "no finished run"),
                          ('<!-- table: run=sweeps/q/job_seed-0 dataset=/tables/summary columns="nope" -->', "no column")):
        with open(readme, "w") as f:
            f.write(body + "\nold\n<!-- /table -->\n")
        rc, err = run(root, results, "--write")
        assert rc == 1 and message in err and "nothing written" in err, (message, err)
        assert open(readme).read() == body + "\nold\n<!-- /table -->\n"
    with open(readme, "w") as f:
        f.write('<!-- table: run=sweeps/q/job_seed-0 dataset=/ columns="{@seed}" -->\nno end\n')
    assert run(root, results, "--write")[0] == 2
print("readme_tables: ok")
