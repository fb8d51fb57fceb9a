#!/usr/bin/python3
"""ctest script_arguments: every script under scripts/ and experiments/ refuses bad arguments (an unknown option, a
missing value, a bad number, a missing input, an output onto an input) with exit 2, a usage line on stderr, no
traceback and nothing written (docs/cli.md#scripts); `scripts/reproduce.sh --plan` refused by the sweep leaves the old
page byte for byte and no stray file, and written leaves no temporary one; `experiments/lm/iclca_text_demo.sh`
refuses a count of 0, a missing run and a softmax run (exit 2), and exits 0 (exact) on a tiny linear run.

    test_script_arguments.py ICLAB SOURCE_DIR

The scripts run from a scratch copy of scripts/, experiments/lm and configs/ (they cd to their checkout), and the
whole copy is compared file by file before and after every refused case.
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor

ICLAB, SOURCE = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
failures = []
checked = 0
lock = threading.Lock()


def check(name, ok, detail=""):
    global checked
    with lock:
        checked += 1
    if not ok:
        failures.append(f"{name}: {detail}")
        print(f"FAIL {name}: {detail}", file=sys.stderr)


def snapshot(root):
    """Every path under root with its type and content hash: a refused case must leave it as it was."""
    state = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in dirs + files:
            path = os.path.join(folder, name)
            if os.path.islink(path) or os.path.isdir(path):
                state[os.path.relpath(path, root)] = "link" if os.path.islink(path) else "dir"
            else:
                with open(path, "rb") as f:
                    state[os.path.relpath(path, root)] = hashlib.sha256(f.read()).hexdigest()
    return state


STUBS = None  # a folder first on PATH whose installers, builders and daemons fail at once (exit 97)


def run(argv, cwd, env=None, timeout=120):
    full_env = dict(os.environ, **(env or {}))
    full_env["PATH"] = STUBS + os.pathsep + full_env.get("PATH", "")
    return subprocess.run(argv, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def refused(name, argv, tree, env=None, expect=None, usage=True):
    """argv must exit 2 with a usage line on stderr (unless usage=False), no traceback, and leave `tree` as it was."""
    before = snapshot(tree)
    done = run(argv, tree, env)
    after = snapshot(tree)
    detail = f"exit {done.returncode}, stderr {done.stderr.strip()[-400:]!r}"
    check(f"{name}: exit 2", done.returncode == 2, detail)
    if usage:
        check(f"{name}: usage line", "usage" in done.stderr.lower(), detail)
    check(f"{name}: no traceback", "Traceback" not in done.stderr, detail)
    if expect:
        check(f"{name}: says {expect!r}", expect in done.stderr, detail)
    changed = sorted(set(before) ^ set(after) | {k for k in before if k in after and before[k] != after[k]})
    check(f"{name}: nothing written", not changed, f"changed {changed[:5]}")
    return done


def byte_tokenizer(folder):
    """GPT-2's byte-to-unicode map as a tokenizer without merges: ids 0..255 are the bytes, 256 is <|endoftext|>
    (as tests/lm_run_helpers.hpp writes it)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    os.makedirs(folder)
    encoder = {chars[b]: b for b in range(256)}
    encoder["<|endoftext|>"] = 256
    with open(os.path.join(folder, "encoder.json"), "w", encoding="utf-8") as f:
        json.dump(encoder, f, ensure_ascii=False)
    with open(os.path.join(folder, "vocab.bpe"), "w") as f:
        f.write("#version: 0.2\n")


def tiny_lm_run(scratch, tree, name, overrides):
    """A 3-step lm run of configs/quick/lm_kjv.yaml at width 16 on two KJV lines (tests/lm_run_helpers.hpp)."""
    done = run([ICLAB, "run", "configs/quick/lm_kjv.yaml", "--quiet", f"data.tokens={scratch}/tokens.h5",
                f"data.tokenizer={scratch}/tok", "task.vocab_size=257", "task.context_length=96", "task.seq_len=16",
                "model.width=16", "model.heads=2", "model.init_std=0.3", "train.steps=3", "train.warmup_steps=1",
                "eval.every=3", "eval.sequences=2", f"output.dir={scratch}/{name}", *overrides], tree)
    if done.returncode != 0:
        sys.exit(f"test_script_arguments: training the tiny {name} run failed: {done.stderr}")
    return done.stdout.splitlines()[0]


def main():
    global STUBS
    scratch = tempfile.mkdtemp(prefix="iclab_script_args_")
    try:
        # A script that failed to refuse its arguments would go on to install, build, test or start daemons: here
        # those commands fail at once, so such a regression is a quick failure of this test and touches nothing.
        STUBS = os.path.join(scratch, "stubs")
        os.makedirs(STUBS)
        for command in ("apt-get", "sudo", "dpkg-query", "cmake", "ctest", "clang++", "chromium", "munged", "slurmctld",
                        "slurmd", "npm", "bible"):
            with open(os.path.join(STUBS, command), "w") as f:
                f.write(f"#!/bin/sh\necho 'test stub: {command} not run' >&2\nexit 97\n")
            os.chmod(os.path.join(STUBS, command), 0o755)
        tree = os.path.join(scratch, "tree")
        os.makedirs(os.path.join(tree, "experiments"))
        shutil.copytree(os.path.join(SOURCE, "scripts"), os.path.join(tree, "scripts"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(os.path.join(SOURCE, "configs"), os.path.join(tree, "configs"))
        shutil.copytree(os.path.join(SOURCE, "experiments", "lm"), os.path.join(tree, "experiments", "lm"),
                        ignore=shutil.ignore_patterns("*.cpp", "__pycache__"))
        os.makedirs(os.path.join(tree, "docs"))
        # inputs the cases point at: a finished-looking run folder, a history file, a folder the script did not make
        fake_run = os.path.join(tree, "run")
        os.makedirs(fake_run)
        with open(os.path.join(fake_run, "results.h5"), "wb") as f:
            f.write(b"not an HDF5 file")
        with open(os.path.join(tree, "history.csv"), "w") as f:
            f.write("date,config\n")
        os.makedirs(os.path.join(tree, "someone_elses"))
        with open(os.path.join(tree, "someone_elses", "keep.txt"), "w") as f:
            f.write("keep")
        bash, py = "/bin/bash", "/usr/bin/python3"
        s = lambda path: os.path.join(tree, path)  # noqa: E731
        demo = s("experiments/lm/iclca_text_demo.sh")

        shell_cases = [
            ("reproduce.sh", ["scripts/reproduce.sh", "--profile"], {}),
            ("reproduce.sh", ["scripts/reproduce.sh", "--profile", "--plan"], {}),
            ("reproduce.sh", ["scripts/reproduce.sh", "--jobs"], {}),
            ("reproduce.sh", ["scripts/reproduce.sh", "--jobs", "0"], {}),
            ("reproduce.sh", ["scripts/reproduce.sh", "--jobs", "two"], {}),
            ("reproduce.sh", ["scripts/reproduce.sh", "--bogus"], {}),
            ("reproduce.sh", ["scripts/reproduce.sh", "--plan", "--check"], {}),
            ("reproduce.sh", ["scripts/reproduce.sh", "--profile", "no_such_profile"], {}),
            ("reproduce.sh", ["scripts/reproduce.sh", "--profile", "../x"], {}),
            ("run.sh", ["scripts/run.sh"], {"ICLAB_CONFIG": "no/such.yaml"}),
            ("test.sh", ["scripts/test.sh", "--bogus"], {}),
            ("test.sh", ["scripts/test.sh", "--slurm", "--sanitize"], {}),
            ("test.sh", ["scripts/test.sh"], {"JOBS": "0"}),
            ("setup.sh", ["scripts/setup.sh", "extra"], {}),
            ("setup.sh", ["scripts/setup.sh"], {"JOBS": "x"}),
            ("fuzz.sh", ["scripts/fuzz.sh", "no_such_target"], {}),
            ("fuzz.sh", ["scripts/fuzz.sh", "config", "many"], {}),
            ("fuzz.sh", ["scripts/fuzz.sh", "config", "1", "2"], {}),
            ("fuzz.sh", ["scripts/fuzz.sh", "config", "1"], {"FUZZ_SECONDS": "-1"}),
            ("bench/bit_check.sh", ["scripts/bench/bit_check.sh"], {}),
            ("bench/bit_check.sh", ["scripts/bench/bit_check.sh", "--fast", "b"], {}),
            ("bench/bit_check.sh", ["scripts/bench/bit_check.sh", "no_build_a", "no_build_b"], {}),
            ("bench/compare.sh", ["scripts/bench/compare.sh", "--bogus"], {}),
            ("bench/compare.sh", ["scripts/bench/compare.sh", "no/such.yaml"], {}),
            ("bench/compare.sh", ["scripts/bench/compare.sh"], {"REPEATS": "0"}),
            ("bench/setup.sh", ["scripts/bench/setup.sh", "extra"], {}),
            ("bench/gemm_ab.sh", ["scripts/bench/gemm_ab.sh", "--bogus"], {}),
            ("bench/gemm_ab.sh", ["scripts/bench/gemm_ab.sh", "0"], {}),
            ("bench/gemm_ab.sh", ["scripts/bench/gemm_ab.sh", "--march"], {}),
            ("plot/setup.sh", ["scripts/plot/setup.sh", "extra"], {}),
            ("plot/figure1.sh", ["scripts/plot/figure1.sh"], {}),
            ("plot/figure1.sh", ["scripts/plot/figure1.sh", "run", "a.png", "extra"], {}),
            ("report/screenshot.sh", ["scripts/report/screenshot.sh"], {}),
            ("report/screenshot.sh", ["scripts/report/screenshot.sh", "no_such_page.html"], {}),
            ("text/prepare_kjv.sh", ["scripts/text/prepare_kjv.sh", "--heldout-every"], {}),
            ("text/prepare_kjv.sh", ["scripts/text/prepare_kjv.sh", "--heldout-every", "1"], {}),
            ("text/prepare_kjv.sh", ["scripts/text/prepare_kjv.sh", "--bogus"], {}),
            ("text/setup_tokenizer.sh", ["scripts/text/setup_tokenizer.sh", "--bogus"], {}),
            ("slurm/local_cluster.sh", ["scripts/slurm/local_cluster.sh", "start"], {}),
            ("iclca_text_demo.sh", [demo], {}),
            ("iclca_text_demo.sh", [demo, "run"], {}),
            ("iclca_text_demo.sh", [demo, "--run", "x"], {}),
            ("iclca_text_demo.sh", [demo, "run", "t.h5", "1", "2", "3", "4", "float64", "extra"], {}),
            ("iclca_text_demo.sh", [demo, "run", "t.h5", "x"], {}),
            ("iclca_text_demo.sh", [demo, "run", "t.h5", "1", "-5"], {}),
            ("iclca_text_demo.sh", [demo, "run", "t.h5", "1", "8", "4", "4", "float16"], {}),
        ]
        # Two cases at a time (the Python ones spend most of their time importing): a case that writes anything
        # changes the tree between its own two snapshots, whatever runs beside it.
        cases = [(f"{name} {' '.join(argv[1:])} {env or ''}".strip(),
                  [bash, s(argv[0]) if not argv[0].startswith("/") else argv[0], *argv[1:]], env)
                 for name, argv, env in shell_cases]
        # bit_check replaces only an output folder it made: a folder with someone's file is refused and kept
        builds = os.path.join(scratch, "build_a")
        os.makedirs(builds)
        os.symlink(ICLAB, os.path.join(builds, "iclab"))
        refused("bit_check.sh: OUT_DIR not made by it", [bash, s("scripts/bench/bit_check.sh"), builds, builds,
                "scripts/bench/bit_check_runs.txt", s("someone_elses")], tree, expect="not made by bit_check")
        refused("bit_check.sh: OUT_DIR above an input", [bash, s("scripts/bench/bit_check.sh"), builds, builds,
                "scripts/bench/bit_check_runs.txt", scratch], tree, expect="lies above")

        python_cases = [
            ("scripts/bench/bars.py", ["--last"]), ("scripts/bench/bars.py", ["--last", "x"]),
            ("scripts/bench/bars.py", ["no_such.csv"]), ("scripts/bench/bars.py", ["--bogus"]),
            ("scripts/bench/compare_exports.py", []), ("scripts/bench/compare_exports.py", ["--bogus", "a", "b"]),
            ("scripts/bench/compare_exports.py", ["no_a.h5", "no_b.h5"]),
            ("scripts/bench/plot_history.py", ["a", "b", "c"]),
            ("scripts/bench/plot_history.py", ["history.csv", "history.csv"]),
            ("scripts/bench/torch_reference.py", []), ("scripts/bench/torch_reference.py", ["--bogus"]),
            ("scripts/bench/torch_reference.py", ["configs/quick/induction_head.yaml", "--threads", "0"]),
            ("scripts/bench/torch_reference.py", ["configs/quick/induction_head.yaml", "--iters", "x"]),
            ("scripts/bench/torch_reference.py", ["no/such.yaml"]),
            ("scripts/bench/torch_reference.py", ["configs/quick/induction_head.yaml", "--json", "configs/quick/induction_head.yaml"]),
            ("scripts/bench/region_trace/region_trace.py", []),
            ("scripts/bench/region_trace/region_trace.py", ["/bin/sh", "no_such_trace"]),
            ("scripts/plot/figure1.py", ["--bogus"]), ("scripts/plot/figure1.py", ["run", "run"]),
            ("scripts/plot/figure1.py", ["run", "run/results.h5"]),
            ("scripts/plot/figure1.py", ["run"]),  # not an HDF5 file: refused, not a traceback
            ("scripts/plot/gd004_fig3_left.py", ["run", "a.png", "b"]),
            ("scripts/plot/gd004_fig5.py", ["run", "run", "../up_"]),
            ("scripts/plot/gd004_figures.py", ["no_such_run"]),
            ("scripts/plot/iclaa_pareto.py", ["run", "no/such/dir/a.png"]),
            ("scripts/plot/prompt_baking_tradeoff.py", ["--bogus"]), ("scripts/plot/prompt_baking_tradeoff.py", ["a.png"]),
            ("scripts/plot/prompt_baking_tradeoff.py", ["a.png", "no_such_run"]),
            ("scripts/plot/prompt_baking_tradeoff.py", ["run/results.h5", "run"]),
            ("scripts/python/prefix_vs_causal_figure3.py", ["run", "--seed", "x"]),
            ("scripts/python/prefix_vs_causal_figure6.py", ["run", "--png", "run"]),
            ("scripts/python/prefix_vs_causal_table.py", ["run", "--out", "run/results.h5"]),
            ("scripts/report/make_report.py", ["run", "--out", "run", "--iclab", ICLAB]),
            ("scripts/report/make_report.py", ["run", "--iclab", "no_such_iclab"]),
            ("scripts/report/readme_claims.py", ["no_such.json", "--profile", "quick"]),
            ("scripts/report/readme_claims.py", ["history.csv", "--profile", "quick"]),
            ("scripts/report/readme_claims.py", ["history.csv"]),
            ("scripts/lint/check_includes.py", ["no_such_dir"]),
            ("scripts/lint/check_test_names.py", ["no_such_dir"]),
            ("experiments/lm/generate_heldout.py", []),
            ("experiments/lm/generate_heldout.py", ["run", "--count", "0", "--iclab", ICLAB]),
            ("experiments/lm/generate_heldout.py", ["run", "--count"]),
            ("experiments/lm/generate_heldout.py", ["run", "--new-tokens", "x"]),
            ("experiments/lm/generate_heldout.py", ["run", "--temperature", "nan", "--iclab", ICLAB]),
            ("experiments/lm/generate_heldout.py", ["no_such_run", "--iclab", ICLAB]),
            ("experiments/lm/generate_heldout.py", ["run", "--iclab", ICLAB, "--heldout", "no_such.txt"]),
            ("experiments/lm/generate_heldout.py", ["run", "--iclab", ICLAB, "--heldout", "/dev/zero"]),
            ("experiments/lm/generate_heldout.py", ["run", "--iclab", ICLAB, "--heldout", "run/results.h5"]),
        ]
        cases += [(f"{script} {' '.join(args)}", [py, s(script), *args], None) for script, args in python_cases]
        if shutil.which("node"):
            cases += [(f"gen_unicode_tables.js {' '.join(args)}", ["node", s("scripts/text/gen_unicode_tables.js"), *args], None)
                      for args in (["a.cpp", "b.cpp"], ["no/such/dir/t.cpp"], ["--bogus"])]
        with ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(lambda case: refused(case[0], case[1], tree, case[2]), cases))

        # reproduce.sh --plan: a part the sweep refuses leaves the old page byte for byte and nothing beside it
        with open(s("configs/reproduce/refused.yaml"), "w") as f:
            f.write("name: refused\nconfigs:\n  - configs/quick/no_such_config.yaml\n")
        with open(s("configs/reproduce/listed.yaml"), "w") as f:
            f.write("name: listed\nconfigs:\n  - configs/quick/gd_duals.yaml\n")
        old_page = s("docs/reproduction_plan_refused.md")
        with open(old_page, "w") as f:
            f.write("the committed plan\n")
        done = refused("reproduce.sh --plan refused by the sweep", [bash, s("scripts/reproduce.sh"), "--profile", "refused",
                       "--plan"], tree, {"ICLAB": ICLAB}, expect="nothing written", usage=False)
        check("reproduce.sh --plan refused: iclab's message on the terminal", "no_such_config" in done.stderr, done.stderr)
        with open(old_page) as f:
            check("reproduce.sh --plan refused: the old page intact", f.read() == "the committed plan\n")
        done = run([bash, s("scripts/reproduce.sh"), "--profile", "listed", "--plan"], tree, {"ICLAB": ICLAB})
        check("reproduce.sh --plan: exit 0", done.returncode == 0, done.stderr)
        docs = sorted(os.listdir(s("docs")))
        check("reproduce.sh --plan: the page and no temporary file", docs == ["reproduction_plan_listed.md",
              "reproduction_plan_refused.md"], str(docs))
        page = ""
        if os.path.isfile(s("docs/reproduction_plan_listed.md")):
            with open(s("docs/reproduction_plan_listed.md")) as f:
                page = f.read()
        check("reproduce.sh --plan: the page lists the job", "pending" in page and "iclab: sweep" in page, page[-600:])

        # iclca_text_demo.sh on real runs: count 0, a missing run, a softmax run refused; a linear run exact (exit 0)
        byte_tokenizer(os.path.join(scratch, "tok"))
        with open(os.path.join(scratch, "train.txt"), "w") as f:
            f.write("In the beginning God created the heaven and the earth. And the earth was without form.\n")
        with open(os.path.join(scratch, "heldout.txt"), "w") as f:
            f.write("And God said, Let there be light: and there was light.\n")
        done = run([ICLAB, "tokenize", "--tokenizer", f"{scratch}/tok", "--out", f"{scratch}/tokens.h5", "--train",
                    f"{scratch}/train.txt", "--heldout", f"{scratch}/heldout.txt"], tree)
        if done.returncode != 0:
            sys.exit(f"test_script_arguments: tokenize failed: {done.stderr}")
        softmax = tiny_lm_run(scratch, tree, "softmax", [])
        linear = tiny_lm_run(scratch, tree, "linear", ["model.attention=linear", "model.feature_map=elu1",
                             "model.normalizer=kernel", "model.rope=true", "model.position_embedding=none"])
        tokens, env = f"{scratch}/tokens.h5", {"ICLAB": ICLAB}
        refused("demo: count 0", [bash, demo, linear, tokens, "0", "8", "4", "4"], tree, env, expect="K must be")
        refused("demo: count 0 on a missing run", [bash, demo, f"{scratch}/no_such_run", tokens, "0"], tree, env)
        refused("demo: a missing run", [bash, demo, f"{scratch}/no_such_run", tokens, "1", "8", "4", "4"], tree, env,
                expect="no run folder")
        refused("demo: a missing token file", [bash, demo, linear, f"{scratch}/none.h5", "1", "8", "4", "4"], tree, env)
        refused("demo: more chapters than the token file has", [bash, demo, linear, tokens, "2", "8", "4", "4"], tree, env,
                expect="held-out chapters")
        refused("demo: more positions than the model's context", [bash, demo, linear, tokens, "1", "8", "4", "200"], tree, env,
                expect="exceed the model's context")
        refused("demo: a softmax run", [bash, demo, softmax, tokens, "1", "8", "4", "4", "float64"], tree, env,
                expect="ICLCA is exact only for linearized attention")
        done = run([bash, demo, linear, tokens, "1", "8", "4", "4", "both"], tree, env)
        check("demo: a linear run is exact (exit 0)", done.returncode == 0, done.stdout + done.stderr)
        check("demo: both dtypes pass", done.stdout.count("1/1") == 2 and "FAIL" not in done.stdout, done.stdout)
        # An iclab that drops --adapter: X is continued without the prompt, which is not exact: exit 3, not 1 or 2.
        dropper = os.path.join(scratch, "iclab_without_adapter")
        with open(dropper, "w") as f:
            f.write('#!/bin/bash\nargs=(); skip=0\nfor a in "$@"; do\n  if [ $skip = 1 ]; then skip=0; continue; fi\n'
                    '  if [ "$a" = --adapter ]; then skip=1; continue; fi\n  args+=("$a")\ndone\n'
                    f'exec {ICLAB} "${{args[@]}}"\n')
        os.chmod(dropper, 0o755)
        done = run([bash, demo, linear, tokens, "1", "8", "4", "4", "float64"], tree, {"ICLAB": dropper})
        check("demo: not exact is exit 3", done.returncode == 3 and "FAIL" in done.stdout, f"exit {done.returncode}: "
              + done.stdout + done.stderr)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"{checked - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
