"""The claims of a reproduction (what `iclab claims` pooled, plus the paper-band rows of tables without declared
claims) and the verdict keys that `scripts/reproduce.sh --check` compares with the committed docs/reproduction.md.

One verdict vocabulary (framework/io/claims.hpp): reproduced / not reproduced / inconclusive / not run. A claim going
from "not run" to any other verdict (or back) is a difference like any other.
"""
import csv
import math
import re

VERDICTS = ("reproduced", "not reproduced", "inconclusive", "not run")
PAPER_ORDER = ("000", "002", "003", "004", "von Oswald 2023", "beyond")
# The papers a claim of a paper kind must name to count as a paper claim: the four of /work/shared/papers and the von
# Oswald et al. 2023 reference, which the project reproduces as a paper (its Prop. 1, Fig. 2); "beyond" is our own.
PAPERS = PAPER_ORDER[:5]
PAPER_TITLES = {
    "000": "Paper 000: exact conversion of ICL to weights (Chen et al., ICML 2024)",
    "002": "Paper 002: ICL as greedy layer-wise GD (poster)",
    "003": "Paper 003: CausalLM is not optimal for ICL (Ding et al., ICLR 2024)",
    "004": "Paper 004: ICL as contrastive learning (Ren and Liu)",
    "von Oswald 2023": "von Oswald et al. 2023: transformers learn in context by GD",
    "beyond": "Beyond the papers (issue 43): decayed linear attention, prompt baking; own hypotheses, no paper value",
}


def paper_group(paper):
    """The page's group of a claim's `paper`: a paper id of PAPER_ORDER, "beyond" for our own hypotheses (a claim that
    names an issue instead of a paper, e.g. "issue 43" or "none (issue 43: own hypothesis)"), else "other"."""
    if paper in PAPER_ORDER:
        return paper
    return "beyond" if "issue" in str(paper) else "other"
BEGIN, END = "<!-- verdict keys: begin -->", "<!-- verdict keys: end -->"


def band_verdict(ours, paper, kind, tol):
    """A paper_bands row: 'ratio T' (within a factor T) or 'abs T'. None when the paper printed no value."""
    try:
        o, p = float(ours), float(paper)
    except (TypeError, ValueError):
        return None
    if math.isnan(p):
        return None
    if math.isnan(o):
        return "inconclusive"
    if kind == "ratio":
        ok = p != 0 and o / p > 0 and 1 / float(tol) <= o / p <= float(tol)
    else:
        ok = abs(o - p) <= float(tol)
    return "reproduced" if ok else "not reproduced"


def read_claims_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        if row["verdict"] not in VERDICTS:
            raise ValueError(f"{path}: claim {row['id']}: verdict '{row['verdict']}' is not one of {VERDICTS}")
        row["key"] = f"{row['setting']} :: {row['id']}"
    return rows


def verdict_keys_block(claims):
    """The machine-readable block at the end of docs/reproduction.md: one 'key<TAB>verdict' line per claim."""
    lines = [BEGIN, "```text"] + [f"{c['key']}\t{c['verdict']}" for c in claims] + ["```", END]
    return "\n".join(lines)


def parse_verdict_keys(markdown):
    match = re.search(re.escape(BEGIN) + r"\s*```text\n(.*?)```\s*" + re.escape(END), markdown, re.S)
    if match is None:
        raise ValueError("no verdict keys block in the committed reproduction page")
    keys = {}
    for line in match.group(1).splitlines():
        if line.strip():
            key, verdict = line.rsplit("\t", 1)
            keys[key] = verdict
    return keys


def compare(committed, measured):
    """Differences between two {key: verdict} maps, as lines; empty when every claim has the same verdict."""
    out = []
    for key in sorted(set(committed) | set(measured)):
        a, b = committed.get(key, "(absent)"), measured.get(key, "(absent)")
        if a != b:
            out.append(f"{key}: committed {a}, now {b}")
    return out
