"""The team's reading of why a claim does not reproduce (docs/claim_reasons.yaml), for the page's opening list.

    load_reasons(path=None) -> {claim id: (reason, see)}   InputError-like ValueError on a malformed file
    reason_line(c, link_prefix) -> ('why: <reason>', link) or ('no reason recorded', '')

A reason is an explanation written from the experiment READMEs' analyses, not a verdict: the rule and the numbers
decide (the claim's note says how); ctest report_reasons (test_reasons.py) checks that every claim the committed pages
call "not reproduced" has one.
"""
import os

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
REASONS = os.path.join(ROOT, "docs", "claim_reasons.yaml")
NO_REASON = "no reason recorded (docs/claim_reasons.yaml)"
_cache = {}


def load_reasons(path=None):
    """{claim id: (reason, see)} from the YAML list of {ids, reason, see}; ValueError naming the entry when an entry
    lacks a field or names a claim twice."""
    path = path or REASONS
    if path in _cache:
        return _cache[path]
    with open(path) as f:
        entries = yaml.safe_load(f) or []
    if not isinstance(entries, list):
        raise ValueError(f"{path}: a list of entries expected")
    out = {}
    for k, entry in enumerate(entries):
        if not isinstance(entry, dict) or not entry.get("ids") or not entry.get("reason") or not entry.get("see"):
            raise ValueError(f"{path}: entry {k + 1} needs ids, reason and see")
        for cid in entry["ids"]:
            if cid in out:
                raise ValueError(f"{path}: claim '{cid}' has two entries")
            out[cid] = (" ".join(str(entry["reason"]).split()), str(entry["see"]))
    _cache[path] = out
    return out


def reason_line(c, link_prefix, path=None):
    """('why: <reason>', link to its README section) for a claim with an entry, (NO_REASON, '') otherwise. The link is
    link_prefix + see ('' when link_prefix is None: inside a README)."""
    found = load_reasons(path).get(c["id"])
    if not found:
        return NO_REASON, ""
    reason, see = found
    return "why: " + reason, ("" if link_prefix is None else link_prefix + see)
