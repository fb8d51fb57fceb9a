"""ctest report_verdicts: the --check comparison of scripts/reproduce.sh fails when one claim's verdict changes
(also from "not run" to any other), when a claim disappears or appears, and passes on an identical set; the claims CSV
is read with the four verdicts only; the paper-band rule in closed form."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from verdicts import band_verdict, compare, parse_verdict_keys, read_claims_csv, verdict_keys_block  # noqa: E402

claims = [{"key": "configs/quick/gd_duals.yaml :: 002-T1 float32", "verdict": "not reproduced"},
          {"key": "configs/quick/vo_trained.yaml :: VO-T model_cos", "verdict": "reproduced"}]
page = "# page\n\n" + verdict_keys_block(claims) + "\n"
keys = parse_verdict_keys(page)
assert keys == {c["key"]: c["verdict"] for c in claims}, keys
assert compare(keys, dict(keys)) == []
broken = dict(keys)
broken["configs/quick/vo_trained.yaml :: VO-T model_cos"] = "not reproduced"   # one claim broken on purpose
assert compare(keys, broken) == ["configs/quick/vo_trained.yaml :: VO-T model_cos: committed reproduced, now not reproduced"]
missing = dict(keys)
del missing["configs/quick/gd_duals.yaml :: 002-T1 float32"]
assert len(compare(keys, missing)) == 1
# a claim that was not run (its pair's other arm missing) and now runs is a difference, and back
not_run = {"configs/paper/prefix_vs_causal_table7.yaml :: 003-T7 LR SL-L2 prefix": "not run"}
assert parse_verdict_keys(verdict_keys_block([{"key": k, "verdict": v} for k, v in not_run.items()])) == not_run
ran = {k: "reproduced" for k in not_run}
assert compare(not_run, ran) == ["configs/paper/prefix_vs_causal_table7.yaml :: 003-T7 LR SL-L2 prefix: committed not run, now reproduced"]
assert len(compare(ran, not_run)) == 1 and compare(not_run, dict(not_run)) == []
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "claims.csv")
    for verdict, ok in (("not run", True), ("inconclusive", True), ("n/a", False)):
        with open(path, "w") as f:
            f.write(f"setting,id,verdict\nconfigs/x.yaml,c1,{verdict}\n")
        try:
            assert read_claims_csv(path)[0]["key"] == "configs/x.yaml :: c1" and ok
        except ValueError:
            assert not ok, verdict
try:
    parse_verdict_keys("# no block")
    raise AssertionError("a page without keys must be refused")
except ValueError:
    pass
assert band_verdict(2.9e-7, 3e-7, "ratio", 3) == "reproduced"
assert band_verdict(1e-5, 3e-7, "ratio", 3) == "not reproduced"
assert band_verdict(-3e-7, 3e-7, "ratio", 3) == "not reproduced"
assert band_verdict(0.99, 0.9995, "abs", 0.02) == "reproduced"
assert band_verdict(0.5, float("nan"), "abs", 0.02) is None
print("verdicts: check comparison and band rule OK")
