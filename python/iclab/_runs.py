"""iclab.load, iclab.run, iclab.sweep, iclab.claims and iclab.import_gpt2 (docs/python.md): the commands `iclab run`,
`iclab sweep`, `iclab claims`, `iclab import` and `iclab export`, with finished runs read into pandas by
iclab_runs.py (scripts/python/iclab_runs.py, copied beside this file by the build)."""
import os
import signal
import subprocess
import tempfile

from . import _errors, _iclab
from ._model import Model, _scratch_file


class Run:
    """A finished run folder (RUN_DIR/results.h5). .config: the resolved config as a nested dict (validated by its
    experiment's schema, as `iclab predict` validates it); .tables: {name: DataFrame}; .curves: DataFrame (or None);
    .attrs: results.h5's summary numbers and provenance; .claims: `iclab claims RUN_DIR` as a DataFrame; .model: the
    trained model (Model), loaded on first use."""

    def __init__(self, run_dir):
        import yaml
        self.run_dir = os.path.abspath(os.fspath(run_dir))
        with _errors.inputs(self.run_dir):
            self.config = yaml.safe_load(_iclab.finished_run_config(self.run_dir))
        self._results = None
        self._model = None

    def __repr__(self):
        return f"iclab.Run({self.run_dir!r}, experiment {self.config.get('experiment')!r})"

    def _read(self):
        if self._results is None:
            from . import iclab_runs
            self._results = iclab_runs.load_run(self.run_dir)
        return self._results

    tables = property(lambda self: self._read().tables)
    curves = property(lambda self: self._read().curves)
    attrs = property(lambda self: self._read().attrs)

    @property
    def claims(self):
        return claims([self.run_dir])

    @property
    def model(self):
        if self._model is None:
            self._model = Model(self.run_dir)
        return self._model

    def export(self, out, overwrite=False):
        """`iclab export RUN_DIR --format safetensors --out DIR` (lm runs; docs/gpt2.md). Returns DIR."""
        args = [self.run_dir, "--format", "safetensors", "--out", os.fspath(out), "--quiet"] + (["--overwrite"] if overwrite else [])
        with _errors.inputs(self.run_dir):
            _iclab.command("export", args, False)
        return os.fspath(out)


def load(run_dir):
    """iclab.load(RUN_DIR) -> Run. ValueError when RUN_DIR is no finished run (the CLI's message)."""
    return Run(run_dir)


def run(config=None, overrides=(), out=None, threads=0, overwrite=False, quiet=True, resume=None, stop_after=0):
    """`iclab run CONFIG key=value ...` -> Run. config: a YAML file or a dict (written to a temporary file first).
    out: output.dir (the folder the run folder goes in). resume=RUN_DIR continues an interrupted run (`iclab run
    --resume`). Ctrl-C stops the training after its step with a checkpoint and raises KeyboardInterrupt saying how to
    resume. stop_after=N stops after step N as `--stop-after` does (no results.h5: returns the run folder's path)."""
    overrides = [str(o) for o in overrides]
    if out is not None:
        overrides.append(f"output.dir={os.fspath(out)}")
    path = ""
    if resume is None:
        if config is None:
            raise ValueError("iclab run: missing CONFIG")
        if isinstance(config, dict):
            import yaml
            path = _scratch_file("config.yaml")
            with open(path, "w") as f:
                yaml.safe_dump(config, f, sort_keys=False)
        else:
            path = os.fspath(config)
    with _errors.inputs(path or None, resume):
        run_dir = _iclab.run_config(path, overrides, os.fspath(resume) if resume is not None else "", int(threads), bool(overwrite),
                                    bool(quiet), int(stop_after))
    if stop_after:
        return run_dir
    return Run(run_dir)


def claims(dirs):
    """`iclab claims DIR...` -> DataFrame (the CSV `--out` writes): every declared claim of the finished runs under the
    folders, pooled over seeds, with its verdict."""
    import pandas as pd
    dirs = [os.fspath(d) for d in ([dirs] if isinstance(dirs, (str, os.PathLike)) else dirs)]
    out = _scratch_file("claims.csv")
    with _errors.inputs(*dirs):
        _iclab.claims_csv(dirs, out, False)
    frame = pd.read_csv(out)
    os.remove(out)
    return frame


def sweep(file, jobs=1, threads=0, name=None, dry_run=False):
    """`iclab sweep SWEEP.yaml --jobs N` (local launcher): runs the iclab binary the module was built with, which
    starts each job as its own process. Returns the finished runs as a DataFrame (scripts/python/iclab_runs.py
    load_runs), its attrs["sweep_dir"] the sweep folder. Ctrl-C is passed on: the jobs checkpoint, then
    KeyboardInterrupt."""
    from . import iclab_runs
    args = [_iclab.binary, "sweep", os.fspath(file), "--jobs", str(int(jobs)), "--threads", str(int(threads)), "--quiet"]
    if name is not None:
        args += ["--name", str(name)]
    if dry_run:
        args.append("--dry-run")
    if not os.path.lexists(os.fspath(file)):
        raise FileNotFoundError(2, f"iclab sweep: cannot read {os.fspath(file)}", os.fspath(file))
    with tempfile.TemporaryFile() as errors:
        child = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=errors, text=True)
        try:
            stdout, _ = child.communicate()
        except KeyboardInterrupt:
            child.send_signal(signal.SIGINT)
            child.wait()
            raise
        errors.seek(0)
        message = errors.read().decode(errors="replace").strip()
    _errors.check_status(child.returncode, message or f"iclab sweep: exit status {child.returncode}")
    lines = stdout.strip().splitlines()
    sweep_dir = lines[-1] if lines else ""
    frame = iclab_runs.load_runs([sweep_dir]) if not dry_run else None
    if frame is not None:
        frame.attrs["sweep_dir"] = sweep_dir
    return frame if frame is not None else sweep_dir


def import_gpt2(directory, out, overwrite=False):
    """`iclab import gpt2 DIR --out RUN_DIR` (a Hugging Face GPT-2 folder; docs/gpt2.md) -> Run."""
    args = ["gpt2", os.fspath(directory), "--out", os.fspath(out), "--quiet"] + (["--overwrite"] if overwrite else [])
    with _errors.inputs(directory):
        _iclab.command("import", args, False)
    return Run(out)
