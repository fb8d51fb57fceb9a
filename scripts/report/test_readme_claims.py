"""ctest report_readme_claims: a README's generated claims block is appended once, replaced in place on the next
report (text around it kept), per profile; broken markers are refused; the block lists the not-reproduced claims."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from make_report import readme_blocks  # noqa: E402
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
         "kind": "reproduces a qualitative claim", "verdict": "reproduced", "readme": "experiments/vo_trained/README.md#claims"}
failing = dict(claim, id="VO-T loss gap", verdict="not reproduced")
blocks = readme_blocks([claim, failing, dict(claim, readme="")], "report T", "docs/reproduction.md")
assert list(blocks) == ["experiments/vo_trained/README.md"], blocks
text = blocks["experiments/vo_trained/README.md"]
assert "Not reproduced: VO-T loss gap." in text and "(../../docs/reproduction.md)" in text, text
assert "| VO-T model_cos | configs/quick/vo_trained.yaml |" in text and "**not reproduced**" in text, text
assert "0.9991 [0.9989, 0.9994]" in text, text
print("readme_claims: blocks appended, replaced, refused and built as stated")
