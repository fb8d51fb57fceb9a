"""ctest report_seed_floor: seed_floor.py counts a setting's seeds from the profile's reproduce configs (grid seeds,
a run's own `seeds` key through its inherit chain, rounding twins left out) and fails on a claim about trained models
with fewer than 5, never on a deterministic check or a claim over instances; it reads claims from a CSV and from a
page's details entries."""
import csv
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import seed_floor  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def write(root, path, text):
    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as f:
        f.write(text)


def claim(setting, cid, kind="reproduces a qualitative claim", rule="95 % t-interval of the mean > 0", unit="seed", **kw):
    c = {"setting": setting, "id": cid, "kind": kind, "rule": rule, "unit": unit, "metric": "x", "min_values": ""}
    c.update(kw)
    return c


with tempfile.TemporaryDirectory() as root:
    write(root, "configs/quick/trained.yaml", "experiment: a\n")
    write(root, "configs/quick/three.yaml", "experiment: b\n")
    write(root, "configs/quick/exact.yaml", "experiment: c\n")
    write(root, "configs/paper/inrun.yaml", "experiment: d\nd:\n  seeds: 5\n")
    write(root, "configs/quick/inrun.yaml", "inherit: ../paper/inrun.yaml\ntrain:\n  epochs: 2\n")  # 5 seeds by inheritance
    write(root, "configs/quick/two_listed.yaml", "experiment: e\ne:\n  seeds: [0, 1]\n")
    write(root, "configs/reproduce/quick.yaml", "name: q\nconfigs:\n  - configs/quick/exact.yaml\n  - configs/quick/inrun.yaml\n"
                                                 "  - configs/quick/two_listed.yaml\n")
    write(root, "configs/reproduce/quick_seeds.yaml", "name: s\nconfigs:\n  - configs/quick/trained.yaml\ngrid:\n  seed: 0:5\n")
    write(root, "configs/reproduce/quick_three.yaml", "name: t\nconfigs: [configs/quick/three.yaml]\ngrid:\n  seed: [0, 1, 2]\n")
    # a rounding twin with more seeds does not count: it makes no rows
    write(root, "configs/reproduce/quick_rounding.yaml", "name: r\nconfigs: [configs/quick/three.yaml]\noverrides: [train.perturb_init_ulps=1]\n"
                                                          "grid:\n  seed: 0:9\n")
    write(root, "configs/reproduce/paper_seeds.yaml", "name: p\nconfigs: [configs/quick/three.yaml]\ngrid:\n  seed: 0:9\n")
    seeds = seed_floor.profile_seeds(root, "quick")
    assert seeds == {"configs/quick/exact.yaml": 1, "configs/quick/inrun.yaml": 5, "configs/quick/two_listed.yaml": 2,
                     "configs/quick/trained.yaml": 5, "configs/quick/three.yaml": 3}, seeds
    assert seed_floor.profile_seeds(root, "paper") == {"configs/quick/three.yaml": 9}
    ok = [claim("configs/quick/trained.yaml model.mask=prefix", "trained on 5"),
          claim("configs/quick/inrun.yaml", "trained in the run on 5", rule="x > 0 for every value"),
          claim("configs/quick/exact.yaml", "identity", kind="own check", rule="x <= 1e-12 for every value"),  # one value decides
          claim("configs/quick/exact.yaml", "timing over instances", unit="instance"),  # its floor counts instances
          claim("shared/specs/x.md", "gate", kind="spec gate")]
    assert seed_floor.check(ok, seeds) == []
    bad = [claim("configs/quick/three.yaml", "trained on 3"),
           claim("configs/quick/two_listed.yaml", "trained in the run on 2"),
           claim("configs/quick/exact.yaml", "per-seed means of one run", kind="own check", rule="x > 0 for every value",
                 metric="per training seed: the mean over its instances of [G]"),
           claim("configs/quick/exact.yaml", "a trained own check with min_values 5", kind="own check",
                 rule="x > 0 for every value", min_values="5"),
           claim("configs/quick/nowhere.yaml", "not in the profile")]
    lines = seed_floor.check(bad, seeds)
    assert len(lines) == 5, lines
    assert lines[0] == "trained on 3 (configs/quick/three.yaml): 3 seeds in the profile, needs >= 5", lines[0]
    assert "2 seeds in the profile" in lines[1] and "1 seed in the profile" in lines[2] and "1 seed in" in lines[3]
    assert "in no reproduce file" in lines[4]
    # a CSV that `iclab claims` wrote elsewhere names its checkout's absolute path
    assert seed_floor.check([claim("/elsewhere/configs/quick/three.yaml", "abs")], seeds)[0].startswith("abs (")

    # the command line: a CSV with one claim on 3 seeds fails (exit 1), on 5 passes (exit 0)
    path = os.path.join(root, "claims.csv")
    columns = ["setting", "id", "kind", "rule", "unit", "metric", "min_values"]

    def run_with(rows):
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=columns)
            w.writeheader()
            w.writerows(rows)
        return subprocess.run([sys.executable, os.path.join(HERE, "seed_floor.py"), "--root", root, "--claims", path],
                              capture_output=True, text=True)
    failed = run_with([claim("configs/quick/three.yaml", "trained on 3")])
    assert failed.returncode == 1 and "trained on 3 (configs/quick/three.yaml): 3 seeds" in failed.stderr, failed.stderr
    assert run_with([claim("configs/quick/trained.yaml", "trained on 5")]).returncode == 0
    assert run_with([claim("configs/quick/three.yaml", "exact on 3", kind="own check", rule="x <= 0 for every value",
                           min_values="1")]).returncode == 0

# the page's details entries (page_md.py) parse to the same fields
line = ('- <a id="c-x"></a>**003-A3 eta3.2_causal_query_mse_l50_max†** (reproduced): statement: causal does not diverge; '
        'source: Part A; kind: own check; rule: 0 <= x <= 1 for every value; x = eta3.2 (<= 1 at l = L; every replicate); '
        'false-pass rate: deterministic: one value decides (an own check held in every value; ...); '
        'setting: configs/quick/lsa_gd.yaml; seeds: 0,1,2,3,4; per seed: 0.42')
parsed = seed_floor.claims_from_page("intro\n" + line + "\n")
assert len(parsed) == 1, parsed
p = parsed[0]
assert p["id"] == "003-A3 eta3.2_causal_query_mse_l50_max" and p["kind"] == "own check" and p["unit"] == "seed", p
assert p["rule"] == "0 <= x <= 1 for every value" and p["setting"] == "configs/quick/lsa_gd.yaml" and p["min_values"] == "1", p
# an entry without a false-pass rate (a count rule on fewer values than it needs) parses too
bare = line.replace("false-pass rate: deterministic: one value decides (an own check held in every value; ...); ", "")
assert seed_floor.claims_from_page(bare)[0]["min_values"] == "" and seed_floor.claims_from_page(bare)[0]["setting"] == p["setting"]
# a count rule over every value with a coin's rate (an own check on a data draw, not declared an identity): 5 seeds
coin = line.replace("deterministic: one value decides (an own check held in every value; ...)", "3.1 % (5 of 5 seeds by a fair coin)")
assert seed_floor.claims_from_page(coin)[0]["min_values"] == "5", seed_floor.claims_from_page(coin)[0]
print("seed_floor: seeds from grids, in-run seeds and inherit; trained claims below 5 fail; deterministic and instance "
      "claims pass; CSV and page read OK")
