"""Every trained claim stands on >= 5 seeds (issue 45): the seeds the quick profile gives each setting, read from its
reproduce configs (configs/reproduce/<profile>*.yaml), against the claims each experiment declares, read from a claims
CSV that `iclab claims --out` wrote (results/report/claims.csv) or from the committed page (docs/reproduction.md: its
verdict keys and details entries).

A claim needs 5 seeds unless it is a deterministic check (framework/io/claims_floor.hpp: declared so by its experiment,
io::Claim::deterministic, an identity on every value; one value decides it) or a claim over instances (its floor counts instances, not seeds: `iclab
claims` makes it inconclusive below 5). A setting's seeds: the `seed` of the reproduce file's grid (a range a:b or a
list; absent: the config's one seed) times the seeds one run trains itself (a config key named `seeds`: a count, or a
list), the fewest over the (non-rounding) reproduce files that list its config. Rounding twins make no rows of their
own and are not counted.

  seed_floor.py [--root DIR] [--profile quick] (--claims CSV | --page MD)
exit 0 when every such claim has >= 5 seeds, 1 listing each that has fewer (or whose config no reproduce file lists),
2 for bad arguments.
"""
import argparse
import csv
import glob
import os
import re
import sys

import yaml

MIN_SEEDS = 5  # framework/io/claims_floor.hpp kMinValues


def seed_count(value):
    """The seeds of a grid's `seed` entry: 'a:b' (b - a), a list (its length), one number (1)."""
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*:\s*-?\d+\s*", value):
        a, b = (int(x) for x in value.split(":"))
        return max(b - a, 0)
    if isinstance(value, list):
        return len(value)
    return 1


def resolved_config(root, path):
    """The config at `path` with its `inherit:` chain merged (the file's own keys over its base's)."""
    with open(os.path.join(root, path)) as f:
        node = yaml.safe_load(f) or {}
    base = node.pop("inherit", None)
    if base is None:
        return node
    merged = resolved_config(root, os.path.normpath(os.path.join(os.path.dirname(path), base)))

    def merge(into, over):
        for k, v in over.items():
            if isinstance(v, dict) and isinstance(into.get(k), dict):
                merge(into[k], v)
            else:
                into[k] = v
    merge(merged, node)
    return merged


def in_run_seeds(config, overrides=()):
    """The seeds one run trains itself: the largest count among keys named `seeds` (an int, or a list's length), 1
    when there is none; an override 'a.seeds=...' counts too."""
    found = []

    def walk(node):
        for k, v in node.items():
            if isinstance(v, dict):
                walk(v)
            elif k == "seeds":
                found.append(v if isinstance(v, int) else len(v) if isinstance(v, list) else 1)
    walk(config)
    for o in overrides:
        key, _, value = str(o).partition("=")
        if key.split(".")[-1] == "seeds":
            parsed = yaml.safe_load(value)
            found.append(parsed if isinstance(parsed, int) else len(parsed) if isinstance(parsed, list) else 1)
    return max(found) if found else 1


def profile_seeds(root, profile="quick"):
    """{config path: the fewest seeds any (non-rounding) reproduce file of the profile gives it}."""
    seeds = {}
    for path in sorted(glob.glob(os.path.join(root, "configs", "reproduce", profile + "*.yaml"))):
        if "rounding" in os.path.basename(path):
            continue  # rounding twins: the rounding column, no rows of their own
        with open(path) as f:
            spec = yaml.safe_load(f) or {}
        configs = spec.get("configs") or []
        runs = seed_count((spec.get("grid") or {}).get("seed"))
        for config in configs:
            n = runs * in_run_seeds(resolved_config(root, config), spec.get("overrides") or [])
            seeds[config] = min(n, seeds.get(config, n))
    return seeds


def deterministic(kind, rule, min_values=""):
    """framework/io/claims_floor.hpp deterministic_check, from what a CSV or the page shows: the column min_values
    (or the page's false-pass rate) when present, else, for a CSV of an iclab before the column, the shape those
    versions inferred it from: an own check whose count rule asks every value (not per-seed means, not paired)."""
    if min_values not in ("", None):
        return float(min_values) == 1
    return kind == "own check" and rule.endswith("for every value")


def claims_from_csv(path):
    with open(path, newline="") as f:
        return [{"setting": r["setting"], "id": r["id"], "kind": r["kind"], "unit": r["unit"], "rule": r["rule"],
                 "metric": r.get("metric", ""), "min_values": r.get("min_values", "")} for r in csv.DictReader(f)]


DETAIL = re.compile(r'^- <a id="[^"]*"></a>\*\*(?P<id>.*?)\*\* \([^)]*\): .*?; kind: (?P<kind>[^;]*); rule: (?P<rule>[^;]*?); '
                    r'x = (?P<metric>.*?); (?:false-pass rate: (?P<fp>.*?); )?setting: (?P<setting>[^;]*); (?P<unit>seeds|instances): ')


def claims_from_page(text):
    """The details entries of a reproduction page: id, kind, rule, metric, unit, setting (spec gates carry no kind)."""
    out = []
    for line in text.splitlines():
        m = DETAIL.match(line)
        if not m:
            continue
        out.append({"setting": m["setting"], "id": m["id"].rstrip("\u2020"), "kind": m["kind"], "rule": m["rule"],
                    "metric": m["metric"], "unit": "seed" if m["unit"] == "seeds" else "instance",
                    "min_values": "" if m["fp"] is None else "1" if m["fp"].startswith("deterministic") else "5"})
    return out


def check(claims, seeds):
    """Lines naming each claim about trained models (over seeds, not deterministic) with fewer than MIN_SEEDS seeds."""
    bad = []
    for c in claims:
        if c["unit"] != "seed" or c.get("kind") == "spec gate":
            continue
        if deterministic(c["kind"], c["rule"], c.get("min_values", "")) and \
                not c.get("metric", "").startswith("per training seed: the mean over its instances of ["):
            continue
        config = c["setting"].split(" ")[0]
        if os.path.isabs(config) and "/configs/" in config:  # a CSV of runs made elsewhere names its checkout
            config = config[config.rindex("/configs/") + 1:]
        n = seeds.get(config)
        if n is None:
            bad.append(f"{c['id']} ({c['setting']}): its config is in no reproduce file of the profile")
        elif n < MIN_SEEDS:
            bad.append(f"{c['id']} ({c['setting']}): {n} seed{'s' if n != 1 else ''} in the profile, needs >= {MIN_SEEDS}")
    return bad


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    parser.add_argument("--profile", default="quick")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--claims", help="a claims CSV written by `iclab claims --out`")
    source.add_argument("--page", help="a reproduction page (docs/reproduction.md)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    if args.claims:
        claims = claims_from_csv(args.claims)
    else:
        with open(args.page) as f:
            claims = claims_from_page(f.read())
    if not claims:
        print(f"seed_floor: no claim read from {args.claims or args.page}", file=sys.stderr)
        return 1
    seeds = profile_seeds(args.root, args.profile)
    bad = check(claims, seeds)
    for line in bad:
        print("seed_floor: " + line, file=sys.stderr)
    trained = sum(1 for c in claims if c["unit"] == "seed")
    print(f"seed_floor: {len(claims)} claims ({trained} over seeds), {len(seeds)} configs in profile {args.profile}; "
          f"{len(bad)} with fewer than {MIN_SEEDS} seeds", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
