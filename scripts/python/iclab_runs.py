"""Read iclab runs into pandas: one run's tables and curves, or many runs as one table.

    import sys; sys.path.insert(0, "scripts/python")
    from iclab_runs import load_run, load_runs
    run = load_run("results/quick_induction_head_seed0")
    run.config["train.lr"], run.attrs["final_icl_accuracy"], run.tables["final_eval"], run.curves
    runs = load_runs(["results/sweeps/induction_head_0a1b2c3d"])   # one row per run, like `iclab collect`
    runs = load_runs("runs.h5")                                     # or read what `iclab collect` wrote

Strings come back as str (h5py returns string datasets as bytes), steps as int64. Needs Debian's
python3-h5py and python3-pandas (/usr/bin/python3).
"""
import os
from dataclasses import dataclass, field

import h5py
import numpy as np
import pandas as pd
import yaml

MAX_TABLE_ROWS = 32  # as framework/workflow/collect.hpp kMaxTableRows


def _decode(values):
    if values.dtype.kind in ("O", "S"):
        return [v.decode() if isinstance(v, bytes) else str(v) for v in values]
    return values


def _table(group):
    order = group.attrs["column_order"]
    order = order.decode() if isinstance(order, bytes) else order
    frame = pd.DataFrame({name: _decode(group[name][()]) for name in order.split(",")})
    if "step" in frame.columns:
        frame["step"] = frame["step"].astype("int64")
    return frame


def _tables_below(group, prefix=""):
    """{name: DataFrame} for every group holding a table (attribute column_order) below `group`."""
    found = {}
    if "column_order" in group.attrs:
        found[prefix] = _table(group)
        return found
    for name, child in group.items():
        if isinstance(child, h5py.Group):
            found.update(_tables_below(child, f"{prefix}/{name}" if prefix else name))
    return found


def _flatten(tree, prefix=""):
    flat = {}
    for key, value in tree.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict):
            flat.update(_flatten(value, path))
        else:
            flat[path] = value
    return flat


@dataclass
class Run:
    run_dir: str
    config: dict                                 # dotted keys -> values of the resolved config
    attrs: dict                                  # results.h5 root attributes (summary numbers, provenance)
    tables: dict = field(default_factory=dict)   # /tables/<name> -> DataFrame
    curves: pd.DataFrame = None                  # /curves (several sub-run curves: a 'curve' column)


def load_run(run_dir):
    with h5py.File(os.path.join(run_dir, "results.h5"), "r") as f:
        attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
        config = _flatten(yaml.safe_load(attrs.pop("config", "") or "{}") or {})
        tables = _tables_below(f["tables"]) if "tables" in f else {}
        curves = None
        if "curves" in f:
            parts = []
            for name, frame in _tables_below(f["curves"]).items():
                frame = frame.copy()
                frame.insert(0, "curve", "curves" + (f"/{name}" if name else ""))
                parts.append(frame)
            curves = pd.concat(parts, ignore_index=True) if parts else None
    return Run(os.path.abspath(run_dir), config, attrs, tables, curves)


def _row(run):
    row = {"run_dir": run.run_dir}
    row.update(run.config)
    for key, value in run.attrs.items():
        if isinstance(value, str) and (len(value) > 200 or "\n" in value):
            continue
        row.setdefault(key, value)
    for name, table in run.tables.items():
        if len(table) == 0 or len(table) > MAX_TABLE_ROWS:
            continue
        strings = [c for c in table.columns if table[c].dtype == object]
        keys = None
        if strings and table[strings[0]].is_unique:
            keys = [str(k).replace(",", ";").replace("/", ";") for k in table[strings[0]]]
        for r in range(len(table)):
            suffix = "" if len(table) == 1 else f"[{keys[r] if keys else r}]"
            for column in table.columns:
                value = table[column].iloc[r]
                if isinstance(value, str) and len(table) > 1 and keys:
                    continue
                row.setdefault(f"{name.replace('/', ';')}.{column}{suffix}", value)
    return row


def find_runs(paths):
    found = []
    for path in paths:
        for folder, _, files in os.walk(path):
            if "results.h5" in files and "config.yaml" in files:
                found.append(folder)
    return sorted(found)


def load_runs(paths):
    """One row per run: from run or sweep folders (walked), or from a file `iclab collect` wrote (.h5 or .csv)."""
    if isinstance(paths, str):
        if paths.endswith(".h5"):
            with h5py.File(paths, "r") as f:
                return _table(f["runs"])
        if paths.endswith(".csv"):
            return pd.read_csv(paths)
        paths = [paths]
    return pd.DataFrame([_row(load_run(d)) for d in find_runs(paths)])


def load_curves(paths):
    """All runs' curves in long form: run_dir, curve, step, metric, value."""
    parts = []
    for d in find_runs([paths] if isinstance(paths, str) else paths):
        run = load_run(d)
        if run.curves is None:
            continue
        long = run.curves.melt(id_vars=["curve", "step"], var_name="metric", value_name="value")
        long.insert(0, "run_dir", run.run_dir)
        parts.append(long)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
