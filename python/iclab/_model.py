"""iclab.Model, iclab.Adapter and iclab.tokenizer (docs/python.md). Model.logits runs the C++ forward of a model
loaded once (python/src/model.cpp); predict, convert and generate call the functions of `iclab predict`, `iclab
convert` and `iclab generate` (python/src/commands.cpp), whose files are read back here."""
import atexit
import itertools
import os
import shutil
import tempfile

import numpy as np

from . import _errors, _iclab


_SCRATCH_DIR = None
_SCRATCH_COUNT = itertools.count()


def _scratch_file(name):
    """A new path in this process's temporary folder (removed at exit): the files of predict, generate, convert."""
    global _SCRATCH_DIR
    if _SCRATCH_DIR is None:
        _SCRATCH_DIR = tempfile.mkdtemp(prefix="iclab_")
        atexit.register(shutil.rmtree, _SCRATCH_DIR, True)
    return os.path.join(_SCRATCH_DIR, f"{next(_SCRATCH_COUNT)}_{name}")


def _h5():
    import h5py  # imported on first use: `import iclab` stays fast
    return h5py


def _paths(items):
    return [os.fspath(a.path if isinstance(a, Adapter) else a) for a in items]


class Adapter:
    """An adapter file (docs/adapter_format.md): ICLCA (exact b_KV, b_D per layer), ICLAA (kernel biases of a softmax
    model), hybrid or a prompt cache. Made by Model.convert or read from a file: iclab.Adapter("qa.h5"). It is checked
    against the model when applied (Model.with_adapters), as `iclab predict --adapter` checks it."""

    def __init__(self, path):
        self.path = os.fspath(path)
        if not os.path.isfile(self.path):
            raise FileNotFoundError(2, "iclab: no adapter file", self.path)

    def __repr__(self):
        return f"iclab.Adapter({self.path!r}, kind={self.kind!r}, prompt length {len(self.prompt)})"

    def _read(self, fn):
        with _h5().File(self.path, "r") as f:
            return fn(f)

    @property
    def kind(self):
        """"iclca", "iclaa" (hybrid too: keep_tokens > 0) or "cache"."""
        return self._read(lambda f: "iclca" if "adapter" in f else "iclaa" if "iclaa" in f else "cache" if "cache" in f else "?")

    @property
    def attrs(self):
        def read(f):
            return {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
        return self._read(read)

    @property
    def prompt(self):
        """The prompt's token ids (int32 numpy, read from the file: a copy)."""
        def read(f):
            for group in ("adapter", "iclaa", "cache"):
                if group in f and "prompt_tokens" in f[group]:
                    return f[group]["prompt_tokens"][()]
            return np.asarray(f["prompt_tokens"][()]) if "prompt_tokens" in f else np.zeros(0, np.int32)
        return self._read(read)

    def _stacked(self, suffix):
        def read(f):
            if "adapter" in f:  # ICLCA: /adapter/blocks.<l>.attn.b_kv (H, F, D), .b_d (H, F)
                group, name = f["adapter"], "blocks.{}.attn." + suffix
                scale = None
            elif "iclaa" in f:  # ICLAA: /iclaa/blocks.<l>.b_kv scaled by exp(log_b_kv) per head
                group, name = f["iclaa"], "blocks.{}." + suffix
                scale = "blocks.{}.log_" + suffix
            else:
                raise ValueError(f"iclab: {self.path} is a prompt-cache adapter: it holds keys and values, no b_KV, b_D")
            layers = []
            while name.format(len(layers)) in group:
                values = group[name.format(len(layers))][()]
                if scale is not None:
                    log = group[scale.format(len(layers))][()]
                    values = np.exp(log).reshape((-1,) + (1,) * (values.ndim - 1)) * values
                layers.append(values)
            return np.stack(layers)
        return self._read(read)

    @property
    def b_kv(self):
        """b'_KV of every layer, (L, H, F, D) float64 (read from the file: a copy; ICLAA: exp(log_b_kv) · b_kv)."""
        return self._stacked("b_kv")

    @property
    def b_d(self):
        """b'_D of every layer, (L, H, F) float64 (read from the file: a copy; ICLAA: exp(log_b_d) · b_d)."""
        return self._stacked("b_d")

    def save(self, path, overwrite=False):
        """Copies the adapter file to `path` (refused when it exists, unless overwrite); returns the saved Adapter."""
        path = os.fspath(path)
        if os.path.lexists(path) and not overwrite:
            raise ValueError(f"iclab: {path} exists (overwrite=True replaces it)")
        staging = path + ".partial"
        shutil.copyfile(self.path, staging)
        os.replace(staging, path)
        return Adapter(path)


class Model:
    """A finished run's model, loaded once: iclab.load(RUN_DIR).model or iclab.Model(RUN_DIR, adapters=[...]).
    Induction-head runs compute in float64 (as `iclab predict`); lm runs in their model.dtype unless dtype is given
    (float64 with adapters)."""

    def __init__(self, run_dir, adapters=(), dtype=None, threads=0):
        self.run_dir = os.fspath(run_dir)
        self.adapters = [a if isinstance(a, Adapter) else Adapter(a) for a in adapters]
        self._dtype_arg = dtype
        self._tokenizer = None
        with _errors.inputs(self.run_dir, *_paths(self.adapters)):
            self._engine = _iclab.Model(self.run_dir, _paths(self.adapters), dtype or "", threads)

    def __repr__(self):
        kind = "lm" if self.is_lm else "induction-head"
        return f"iclab.Model({self.run_dir!r}, {kind}, {self.dtype}, {len(self.adapters)} adapter(s))"

    dtype = property(lambda self: self._engine.dtype, doc="float64 or float32: the type logits come in")
    vocab = property(lambda self: self._engine.vocab, doc="V")
    is_lm = property(lambda self: self._engine.is_lm, doc="a language-model (lm) run, else an induction-head run")
    parameter_count = property(lambda self: self._engine.parameter_count)

    def _tokens(self, tokens):
        """str -> ids (letters a-z, A-Z for induction-head runs; text through RUN_DIR/tokenizer for lm runs)."""
        if isinstance(tokens, str):
            if self.is_lm:
                if self._tokenizer is None:  # RUN_DIR/tokenizer, read once (a missing one: the CLI's message)
                    if not os.path.isdir(os.path.join(self.run_dir, "tokenizer")):
                        raise ValueError(f"iclab predict: {self.run_dir} has no tokenizer ({os.path.join(self.run_dir, 'tokenizer')}"
                                         " with encoder.json + vocab.bpe or vocab.json + merges.txt): give token ids instead of text")
                    self._tokenizer = tokenizer(os.path.join(self.run_dir, "tokenizer"))
                return self._tokenizer.encode(tokens)
            return np.asarray(_iclab.encode_letters(tokens), dtype=np.int32)
        return tokens

    def logits(self, tokens):
        """Next-token logits of `tokens`: ids (T) or a batch (B, T) (any integer array; int32 C-contiguous is read in
        place, others are converted), or a str. Returns (T, V) or (B, T, V) numpy in self.dtype, the same bits as
        `iclab predict --out` (copied out of the model's activations, which the next call overwrites)."""
        return self._engine.logits(self._tokens(tokens))

    def probabilities(self, tokens):
        """softmax of logits over the vocabulary, in float64 (numpy: for reading, not the CLI's printed numbers)."""
        z = np.asarray(self.logits(tokens), dtype=np.float64)
        z = np.exp(z - z.max(axis=-1, keepdims=True))
        return z / z.sum(axis=-1, keepdims=True)

    def predict(self, text=None, tokens=None, top=3, verbose=False):
        """`iclab predict` (same checks and messages; verbose=True prints its table): a DataFrame with one row per
        position (token, kind for induction-head runs, the top-k next tokens and their probabilities); .attrs["logits"]
        holds the (T, V) logits exactly as `iclab predict --out` writes them."""
        import pandas as pd
        out = _scratch_file("predict.h5")
        if text is None and tokens is None:
            raise ValueError("iclab predict: give exactly one of --text, --text-file and --tokens")
        ids = [] if tokens is None else [int(t) for t in np.asarray(tokens).ravel()]
        with _errors.inputs(self.run_dir, *_paths(self.adapters)):
            _iclab.predict_file(self.run_dir, text or "", ids, _paths(self.adapters), self._dtype_arg or "", out, int(top), verbose)
        with _h5().File(out, "r") as f:
            logits, ids = f["logits"][()], f["tokens"][()]
            kinds = f["position_kinds"][()] if "position_kinds" in f else None
        os.remove(out)
        z = np.exp(logits.astype(np.float64) - logits.max(axis=1, keepdims=True))
        p = z / z.sum(axis=1, keepdims=True)
        order = np.argsort(-p, axis=1, kind="stable")[:, :top]
        name = (lambda i: _iclab.decode_letters([int(i)])) if not self.is_lm else int
        frame = pd.DataFrame({"pos": np.arange(len(ids)), "token": [name(i) for i in ids]})
        if kinds is not None:
            frame["kind"] = pd.Categorical.from_codes(kinds, ["non_trigger", "first_trigger", "icl"])
        for k in range(order.shape[1]):
            frame[f"top{k + 1}"] = [name(i) for i in order[:, k]]
            frame[f"p{k + 1}"] = p[np.arange(len(ids)), order[:, k]]
        frame.attrs["logits"] = logits
        return frame

    def generate(self, prompt, max_new_tokens=50, temperature=0.0, top_k=0, seed=0, stop=True, dtype=None,
                 return_logits=False, verbose=False):
        """`iclab generate` (lm runs): the generated token ids (int32 numpy), and with return_logits the (N, V) logits
        each was chosen from (float64, as --out stores them). prompt: text (the run's tokenizer) or token ids."""
        out = _scratch_file("generate.h5")
        if not isinstance(prompt, str):
            prompt = [int(t) for t in np.asarray(prompt).ravel()]
        with _errors.inputs(self.run_dir, *_paths(self.adapters)):
            _iclab.generate_file(self.run_dir, prompt, _paths(self.adapters), int(max_new_tokens), float(temperature), int(top_k),
                                 int(seed), bool(stop), dtype or self._dtype_arg or "float64", out, verbose)
        with _h5().File(out, "r") as f:
            generated, logits = f["generated"][()], f["logits"][()]
        os.remove(out)
        return (generated, logits) if return_logits else generated

    def convert(self, prompt, method="auto", out=None, overwrite=False, feature_map=None, features=None, seed=None,
                rope_convention=None, fit_steps=None, keep_tokens=16, verbose=False):
        """`iclab convert` on this model (its adapters are the base: composition): the prompt (letters for
        induction-head runs; text or token ids for lm runs) as an Adapter. method: auto | iclca | iclaa, and for softmax
        lm runs exact | recent | heavy | hybrid. out=None: a temporary file (Adapter.save keeps it)."""
        target = os.fspath(out) if out is not None else _scratch_file("adapter.h5")
        if not isinstance(prompt, str):
            prompt = [int(t) for t in np.asarray(prompt).ravel()]
        with _errors.inputs(self.run_dir, *_paths(self.adapters)):
            _iclab.convert_file(self.run_dir, prompt, _paths(self.adapters), target, bool(overwrite or out is None), method,
                                feature_map, features, seed, rope_convention, fit_steps, int(keep_tokens), verbose)
        return Adapter(target)

    def with_adapters(self, adapters):
        """This model with `adapters` (Adapter objects or files) applied on top of its own, in order, as `iclab predict
        --adapter A --adapter B` applies a chain. iclab.load(RUN_DIR).model is the model without any."""
        return Model(self.run_dir, self.adapters + [a if isinstance(a, Adapter) else Adapter(a) for a in adapters],
                     self._dtype_arg, 0)


class Tokenizer:
    """GPT-2 byte-level BPE from a folder (encoder.json + vocab.bpe or vocab.json + merges.txt), as `iclab tokenize`."""

    def __init__(self, directory):
        self.directory = os.fspath(directory)
        with _errors.inputs(self.directory):
            self._bpe = _iclab.Tokenizer(self.directory)

    vocab_size = property(lambda self: self._bpe.vocab_size)
    end_of_text = property(lambda self: self._bpe.end_of_text, doc="the id of <|endoftext|>, or -1")

    def encode(self, text):
        """Token ids (int32 numpy) of `text`."""
        return self._bpe.encode(text)

    def decode_bytes(self, ids):
        return self._bpe.decode_bytes([int(i) for i in np.asarray(ids).ravel()])

    def decode(self, ids):
        """The text of `ids` (bytes that are not UTF-8 become U+FFFD)."""
        return self.decode_bytes(ids).decode("utf-8", errors="replace")


def tokenizer(directory):
    """iclab.tokenizer(DIR) -> Tokenizer."""
    return Tokenizer(directory)
