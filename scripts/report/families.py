"""Which fingerprint families a published number depends on (issue 46: a number is judged by the fingerprint lines of
its own families, not by the whole of tests/data/fingerprints.txt).

tests/data/fingerprints.txt holds lines `FAMILY<TAB>file:dataset<TAB>dtype<TAB>shape<TAB>hash`; scripts/fingerprints/
runs.txt says which iclab commands each family runs ("FAMILY iclab-arguments", {NAME}: the output of family NAME).
  - A run (its results.h5 root attributes) depends on every family whose `run` command runs the same experiment (the
    `experiment:` of the family's config, through its `inherit:` chain): conservative, so an induction_head run
    depends on induction_head and on decay_learned (the same config with model.decay=learned), an lm run on lm and
    lm_linear; a run made by `iclab import` (attribute imported_from) on gpt2_import. Then closed over {NAME}: an lm
    run also depends on tokenize. An experiment no family runs, or a run that names none: None, every family (the
    old global rule).
  - A command (a measured block's source): `iclab run CONFIG` as a run of CONFIG's experiment; another subcommand
    (predict, convert, generate, tokenize, export, import) depends on every family that runs that subcommand
    (predict: predict and adapters), closed over {NAME}; `iclab claims` pools runs and adds no family of its own (the
    runs of the same source name them); a source with no recognised iclab command, or only `claims`: None.
A family whose config cannot be read counts for every experiment (conservative).

  families.py RESULTS_DIR...        the families of each run folder (a results.h5 in it)
  families.py --command "TEXT"      the families of a command, as a measured block's families="…" attribute
"""
import argparse
import os
import re
import shlex
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNS = "scripts/fingerprints/runs.txt"
USES = re.compile(r"\{([^}]*)\}")
ICLAB = re.compile(r"(?:^|[\s;&|(/])iclab\s+([a-z_]+)((?:\s+[^\s;&|]+)*)")  # "iclab SUB ARGS" (build/iclab too)
ALL = "all"


def read_runs(path):
    """{family: [command words]} in file order (several lines of one family: several commands); {} without the file
    (then every run and command depends on every family)."""
    out = {}
    if not os.path.isfile(path):
        return out
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                words = shlex.split(line)
                out.setdefault(words[0], []).append(words[1:])
    return out


def config_experiment(path, seen=()):
    """The experiment of a config file, following `inherit:`; None when unreadable or named nowhere."""
    import yaml
    if not os.path.isfile(path) or path in seen or len(seen) > 20:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f) or {}
    except (OSError, yaml.YAMLError):
        return None
    if not isinstance(data, dict):
        return None
    if data.get("experiment"):
        return str(data["experiment"])
    base = data.get("inherit")
    return config_experiment(os.path.normpath(os.path.join(os.path.dirname(path), str(base))), seen + (path,)) if base else None


def expand_braces(word):
    """configs/quick/x{,_softmax}.yaml -> [configs/quick/x.yaml, configs/quick/x_softmax.yaml] (one brace group)."""
    m = re.search(r"\{([^{}]*,[^{}]*)\}", word)
    if not m:
        return [word]
    return [w for alt in m.group(1).split(",") for w in expand_braces(word[:m.start()] + alt + word[m.end():])]


class Families:
    def __init__(self, root=ROOT):
        self.root = root
        self.runs = read_runs(os.path.join(root, RUNS))
        self.all = frozenset(self.runs)
        self.uses = {f: {u for cmd in cmds for w in cmd for u in USES.findall(w) if u in self.runs} for f, cmds in self.runs.items()}
        self.experiment = {}   # family -> experiment of its `run` commands ("?" unreadable)
        self.subcommands = {}  # family -> subcommands it runs
        for family, cmds in self.runs.items():
            self.subcommands[family] = {c[0] for c in cmds if c}
            for c in cmds:
                if len(c) >= 2 and c[0] == "run":
                    self.experiment[family] = config_experiment(os.path.join(root, c[1])) or "?"

    def closure(self, families):
        out, todo = set(families), list(families)
        while todo:
            for u in self.uses.get(todo.pop(), ()):
                if u not in out:
                    out.add(u)
                    todo.append(u)
        return frozenset(out)

    def of_experiment(self, experiment):
        """The families a run of `experiment` depends on; None (every family) for an experiment no family runs."""
        direct = {f for f, e in self.experiment.items() if e == experiment}
        if not experiment or not direct:
            return None
        return self.closure(direct | {f for f, e in self.experiment.items() if e == "?"})

    def of_run(self, attrs):
        """The families of a run from its results.h5 root attributes (experiment, imported_from); None: every family."""
        def text(v):
            return v.decode() if isinstance(v, bytes) else str(v)
        if attrs.get("imported_from") is not None:
            direct = {f for f, subs in self.subcommands.items() if "import" in subs}
            return self.closure(direct) if direct else None
        return self.of_experiment(text(attrs.get("experiment", "")))

    def of_subcommand(self, sub, args):
        if sub == "run":
            configs = [w for a in args[:1] for w in expand_braces(a)]
            found = set()
            for c in configs:
                fams = self.of_experiment(config_experiment(os.path.join(self.root, c)))
                if fams is None:
                    return None
                found |= fams
            return frozenset(found) if configs else None
        direct = {f for f, subs in self.subcommands.items() if sub in subs}
        return self.closure(direct) if direct else None

    def of_command(self, command):
        """The families of a command text (a measured block's source): None when it names every family."""
        found, any_command = set(), False
        for m in ICLAB.finditer(command):
            sub, args = m.group(1), m.group(2).split()
            if sub == "claims":
                continue  # pools the runs the rest of the source names
            fams = self.of_subcommand(sub, args)
            if fams is None:
                return None
            found |= fams
            any_command = True
        return frozenset(found) if any_command else None


def text_of(families):
    """The attribute / caption form: sorted, comma-separated; "all" for None."""
    return ALL if families is None else ",".join(sorted(families))


def parse(text):
    """Inverse of text_of: a frozenset, or None for "all"."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    return None if not names or names == [ALL] else frozenset(names)


def run_attrs(run_dir):
    import h5py
    with h5py.File(os.path.join(run_dir, "results.h5"), "r") as f:
        return {k: v for k, v in f.attrs.items() if k != "config"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="*")
    parser.add_argument("--command")
    parser.add_argument("--root", default=ROOT)
    args = parser.parse_args()
    fam = Families(os.path.abspath(args.root))
    if args.command:
        print(text_of(fam.of_command(args.command)))
    for run in args.runs:
        print(f"{run}\t{text_of(fam.of_run(run_attrs(run)))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
