"""iclab from Python (issue 42; docs/python.md): the same C++ engine as the `iclab` command, with numpy and pandas
in and out.

    export PYTHONPATH=$PWD/build/python        # once per shell, from the checkout (scripts/setup.sh builds it)

    import iclab
    run = iclab.run("configs/quick/induction_head.yaml", ["train.steps=300"], out="results/py")
    model = run.model
    model.logits("QaXmbYcZpaXtbYrc")          # (T, V) float64 numpy
    adapter = model.convert("QaXmbYcZdWeV")   # ICLCA: the prompt as b_KV, b_D
    model.with_adapters([adapter]).logits("abcde")

Errors: bad input -> ValueError with the CLI's message; a missing input file -> FileNotFoundError; another failure
-> RuntimeError. Compute runs without the GIL; Ctrl-C raises KeyboardInterrupt (a training run first writes its
checkpoint, so iclab.run(resume=RUN_DIR) continues it).
"""
import os as _os

# As the iclab command sets for itself (framework/core/threads.hpp reexec_with_wait_policy): libgomp reads its wait
# policy when it loads, which is when the extension below loads it.
if not any(_os.environ.get(k) for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "LD_PRELOAD")):
    _os.environ["GOMP_SPINCOUNT"] = "10000"

from . import _iclab  # noqa: E402
from ._model import Adapter, Model, Tokenizer, tokenizer  # noqa: E402
from ._runs import Run, claims, import_gpt2, load, run, sweep  # noqa: E402

__all__ = ["Adapter", "Model", "Run", "Tokenizer", "claims", "import_gpt2", "load", "run", "sweep", "tokenizer"]
