"""ctest report_readme_claims: a README's generated claims block is appended once, replaced in place on the next
report (text around it kept), per profile; broken markers are refused; the block lists the not-reproduced claims;
`readme_claims.py --check` exits 1 when a README's block differs from the report's (missing or hand-edited), 0 once written.
The README block, the page and the HTML show compact rows (a count rule's k/n, an interval rule's mean and interval),
fold the per-seed values, rules and settings in <details>, and count the not-run claims apart."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from claim_text import assign_anchors  # noqa: E402
from counts import counts_text  # noqa: E402
from page_html import compact_table_html  # noqa: E402
from page_md import claims_page_md, readme_blocks  # noqa: E402
from readme_claims import replace_block  # noqa: E402

readme = "# x\n\ntext before\n"
first = replace_block(readme, "quick", "block one")
assert first.startswith(readme.rstrip("\n")) and first.count("<!-- claims:quick -->") == 1 and "block one" in first, first
assert "## Claims of record: quick profile (generated)" in first
edited = first + "\ntext after\n"
second = replace_block(edited, "quick", "block two")
assert "block one" not in second and "block two" in second and second.endswith("\ntext after\n"), second
assert replace_block(second, "quick", "block two") == second            # idempotent: nothing to write
both = replace_block(second, "paper", "paper block")
assert "block two" in both and "paper block" in both and both.count("<!-- /claims:paper -->") == 1
for broken in (readme + "<!-- claims:quick -->\n", readme + "<!-- claims:quick -->a<!-- /claims:quick -->" * 2):
    try:
        replace_block(broken, "quick", "x")
        raise AssertionError("broken markers must be refused")
    except ValueError:
        pass

claim = {"id": "VO-T model_cos", "setting": "configs/quick/vo_trained.yaml", "rule": "95 % t-interval of the mean > 0.99",
         "units": "0,1,2", "unit": "seed", "mean": "0.9991", "ci95_low": "0.9989", "ci95_high": "0.9994", "paper_value": "nan",
         "kind": "reproduces a qualitative claim", "verdict": "reproduced", "readme": "experiments/vo_trained/README.md#claims",
         "statement": "the trained model's output is aligned with one GD step", "paper": "von Oswald 2023"}
failing = dict(claim, id="VO-T loss gap", verdict="not reproduced")
blocks = readme_blocks([claim, failing, dict(claim, readme="")], "report T", "docs/reproduction.md")
assert list(blocks) == ["experiments/vo_trained/README.md"], blocks
text = blocks["experiments/vo_trained/README.md"]
assert "Not reproduced: VO-T loss gap." in text and "(../../docs/reproduction.md)" in text, text
# the compact row (claim, statement, kind, ours, paper, verdict, leave one out, rounding); the setting in the details
assert "| VO-T model_cos | the trained model's output is aligned with one GD step | qualitative | 0.9991 [0.9989, 0.9994] |  | reproduced |  |  |" in text, text
assert "**not reproduced**" in text and "setting: configs/quick/vo_trained.yaml" in text, text
# a sign count over seeds: 2 of 3 seeds positive, the mean negative; what x is follows the rule
sign = dict(claim, id="003-T3 LR SL-L2", statement="prefix < causal", source="Table 3", rule="x > 0 in >= 2 values", test="count_above", metric="ln(causal / prefix) test MSE",
            units="0,1,2", values="0.412, 1.2, -2.4", n="3", on_claimed_side="2", mean="-0.2627", ci95_low="-4.8",
            ci95_high="4.3", verdict="reproduced", readme="experiments/prefix_vs_causal/README.md#x", paper="003")
never = dict(sign, id="003-T7 LR SL-L2", units="", values="", n="0", on_claimed_side="0", mean="nan", ci95_low="nan",
             ci95_high="nan", verdict="not run")
over_instances = dict(sign, id="002-T1", unit="instance", units="300 instances", values="", n="300", on_claimed_side="297",
                      test="count_at_most", verdict="not reproduced")
text = readme_blocks([sign, never, over_instances], "report T", "docs/reproduction_paper.md")["experiments/prefix_vs_causal/README.md"]
assert "**3 claims: 1 reproduced, 1 not reproduced, 0 inconclusive, 1 not run.**" in text, text
assert "Not run: 003-T7 LR SL-L2." in text, text
# a count rule shows its count, not its t-interval; the per-seed values and the rule are folded in the details
assert "| 003-T3 LR SL-L2 | prefix < causal | qualitative | 2/3 seeds |  | reproduced |  |  |" in text, text
assert "rule: x > 0 in >= 2 values; x = ln(causal / prefix) test MSE; setting: configs/quick/vo_trained.yaml; seeds: 0,1,2; per seed: 0.412, 1.2, -2.4; on the claimed side: 2/3; mean: -0.2627" in text, text
assert "[-4.8, 4.3]" not in text  # a count rule's details: its count and mean, no t-interval (issue 45)
assert "| 003-T7 LR SL-L2 | prefix < causal | qualitative | - |  | **not run** |  |  |" in text, text
assert "| 002-T1 | prefix < causal | qualitative | 297/300 instances |  | **not reproduced** |" in text, text
assert "<details>" in text and "</details>" in text
assert counts_text([sign, never]) == "2 claims: 1 reproduced, 0 not reproduced, 0 inconclusive, 1 not run"
page = "\n".join(claims_page_md([sign, never], [], "../"))
assert "| 003-T3 LR SL-L2 | prefix < causal | qualitative | 2/3 seeds |  | reproduced |  |  |" in page, page
assert "| **not run** |" in page, page
table = compact_table_html(assign_anchors([sign, never]))
assert '<td class="l">2/3 seeds</td>' in table and '<td class="na">not run</td>' in table, table

# --check exits 1 when a README's block differs from the report's (a hand edit, or a stale block), 0 once written
import json  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402

script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "readme_claims.py")
with tempfile.TemporaryDirectory() as root:
    os.makedirs(os.path.join(root, "experiments", "x"))
    readme_path = os.path.join(root, "experiments", "x", "README.md")
    with open(readme_path, "w") as f:
        f.write("# x\n")
    blocks_path = os.path.join(root, "blocks.json")
    with open(blocks_path, "w") as f:
        json.dump({"experiments/x/README.md": "| a | reproduced |"}, f)

    def run(*extra):
        return subprocess.run([sys.executable, script, blocks_path, "--profile", "quick", "--root", root, *extra],
                              capture_output=True, text=True)

    missing = run("--check")  # no block yet
    assert missing.returncode == 1 and "1 differ from the report: experiments/x/README.md" in missing.stderr, missing
    assert open(readme_path).read() == "# x\n"  # --check writes nothing
    assert run().returncode == 0 and run("--check").returncode == 0  # written: the check passes
    with open(readme_path) as f:
        written = f.read()
    with open(readme_path, "w") as f:
        f.write(written.replace("| a | reproduced |", "| a | **not reproduced** |"))  # a hand-edited verdict
    edited = run("--check")
    assert edited.returncode == 1 and "experiments/x/README.md" in edited.stderr, edited
    assert run("--check", "--root", os.path.join(root, "nowhere")).returncode == 2

# --against-page (ctest readme_claims_page): the committed README blocks against the committed page, no runs needed.
# A page and blocks made from the same claims agree; a hand-edited README row, or a row the page lacks, fails.
from page_md import reproduction_page  # noqa: E402

with tempfile.TemporaryDirectory() as root:
    os.makedirs(os.path.join(root, "docs"))
    os.makedirs(os.path.join(root, "experiments", "vo_trained"))
    os.makedirs(os.path.join(root, "experiments", "other"))
    rows = [dict(claim, key="k1"), dict(failing, key="k2")]
    with open(os.path.join(root, "docs", "reproduction.md"), "w") as f:
        f.write(reproduction_page(rows, [], [], "T", "quick", [], []))
    block = readme_blocks([dict(claim), dict(failing)], "T", "docs/reproduction.md")["experiments/vo_trained/README.md"]
    vo_readme = os.path.join(root, "experiments", "vo_trained", "README.md")
    with open(vo_readme, "w") as f:
        f.write(replace_block("# vo\n", "quick", block))
    with open(os.path.join(root, "experiments", "other", "README.md"), "w") as f:
        f.write("# other, no block\n")

    def against(page="docs/reproduction.md"):
        return subprocess.run([sys.executable, script, "--against-page", page, "--profile", "quick", "--root", root],
                              capture_output=True, text=True)

    agree = against()
    assert agree.returncode == 0 and "1 README blocks of profile quick" in agree.stderr and "0 differ" in agree.stderr, agree
    with open(vo_readme) as f:
        good = f.read()
    with open(vo_readme, "w") as f:  # a hand-edited verdict in the README's table
        f.write(good.replace("| **not reproduced** |", "| reproduced |", 1))
    edited = against()
    assert edited.returncode == 1 and "experiments/vo_trained/README.md: 1 rows not on the page, 1 page rows missing" in edited.stderr, edited
    with open(vo_readme, "w") as f:  # the same rows, a hand-edited details entry (its per-seed values)
        f.write(good.replace("statement: ", "statement: (edited) ", 1))
    entry = against()
    assert entry.returncode == 1 and "a details entry differs from the page's" in entry.stderr, entry
    counts = re.search(r"\*\*2 claims: (\d+) reproduced, (\d+) not reproduced", good)
    assert counts, good
    with open(vo_readme, "w") as f:  # the same rows and entries, a hand-edited counts line
        f.write(good.replace(counts.group(0), f"**2 claims: {int(counts.group(1)) + 1} reproduced, {int(counts.group(2)) - 1} not reproduced", 1))
    summary = against()
    assert summary.returncode == 1 and "its counts line says 2 claims" in summary.stderr, summary
    only_one = readme_blocks([dict(claim)], "T", "docs/reproduction.md")["experiments/vo_trained/README.md"]
    with open(vo_readme, "w") as f:  # a block from another report (one row fewer)
        f.write(replace_block("# vo\n", "quick", only_one))
    stale = against()
    assert stale.returncode == 1 and "0 rows not on the page, 1 page rows missing" in stale.stderr, stale
    os.remove(vo_readme)  # the page explains a row by a README that has no block
    absent = against()
    assert absent.returncode == 1 and "no <!-- claims:quick --> block, the page has 2 of its rows" in absent.stderr, absent
    assert against("docs/none.md").returncode == 2

print("readme_claims: blocks appended, replaced, refused and built as stated; --check fails on a block that differs; "
      "--against-page fails on a README row, details entry or counts line that differs from the committed page")
