#!/usr/bin/python3
"""GPT-2 checkpoints in and out of iclab (docs/gpt2.md), against an independent PyTorch GPT-2 forward written here.

  test_gpt2_checkpoint.py ICLAB                     the ctest: import + predict vs PyTorch (fp32, fp16, bf16; 2-12 layers;
                                                    tied and untied; with and without the transformer. prefix), export ->
                                                    PyTorch, damaged files (exit 2 naming the tensor), config refusals
  test_gpt2_checkpoint.py ICLAB --write-small DIR   writes a random-weight GPT-2-small-shaped folder (12 layers, C 768,
                                                    12 heads, V 50257, 1024 positions) for the docs/gpt2.md measurement

safetensors is written and read by hand here (8-byte LE header length, JSON header, raw tensors): no extra packages.
Debian's /usr/bin/python3 with python3-torch, python3-h5py (scripts/test.sh installs them).
"""
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import h5py
import numpy as np
import torch

ICLAB = os.path.abspath(sys.argv[1])
TOLERANCE = 1e-5  # relative logit error, iclab fp32 vs PyTorch fp64 on the same weights
FAILURES = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        FAILURES.append(what)


# ---- safetensors by hand ----------------------------------------------------------------------------------------
DTYPES = {"F32": (torch.float32, 4), "F16": (torch.float16, 2), "BF16": (torch.bfloat16, 2), "F64": (torch.float64, 8)}


def tensor_bytes(t):
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def write_safetensors(path, tensors, dtype="F32", header_edit=None, metadata=None):
    """tensors: list of (name, torch tensor); header_edit(header dict) may damage the header."""
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, t in tensors:
        blob = tensor_bytes(t.to(DTYPES[dtype][0]))
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    if header_edit:
        header_edit(header)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for blob in blobs:
            f.write(blob)


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = bytearray(data[8 + n + begin:8 + n + end])
        dtype = DTYPES[info["dtype"]][0]
        out[name] = torch.frombuffer(raw, dtype=dtype).reshape(info["shape"]) if raw else torch.zeros(info["shape"], dtype=dtype)
    return header, out


# ---- GPT-2 in PyTorch (independent of iclab) ----------------------------------------------------------------------
def random_gpt2(layers, width, heads, positions, vocab, seed, tie=True, std=0.2):
    g = torch.Generator().manual_seed(seed)
    r = lambda *shape: torch.randn(*shape, generator=g) * std
    w = {"wte.weight": r(vocab, width), "wpe.weight": r(positions, width)}
    for l in range(layers):
        h = f"h.{l}."
        w[h + "ln_1.weight"] = 1 + r(width)
        w[h + "ln_1.bias"] = r(width)
        w[h + "attn.c_attn.weight"] = r(width, 3 * width)
        w[h + "attn.c_attn.bias"] = r(3 * width)
        w[h + "attn.c_proj.weight"] = r(width, width)
        w[h + "attn.c_proj.bias"] = r(width)
        w[h + "ln_2.weight"] = 1 + r(width)
        w[h + "ln_2.bias"] = r(width)
        w[h + "mlp.c_fc.weight"] = r(width, 4 * width)
        w[h + "mlp.c_fc.bias"] = r(4 * width)
        w[h + "mlp.c_proj.weight"] = r(4 * width, width)
        w[h + "mlp.c_proj.bias"] = r(width)
    w["ln_f.weight"] = 1 + r(width)
    w["ln_f.bias"] = r(width)
    if not tie:
        w["lm_head.weight"] = r(vocab, width)
    config = {"model_type": "gpt2", "n_layer": layers, "n_embd": width, "n_head": heads, "n_positions": positions,
              "n_ctx": positions, "vocab_size": vocab, "layer_norm_epsilon": 1e-05, "activation_function": "gelu_new",
              "tie_word_embeddings": tie, "scale_attn_weights": True, "scale_attn_by_inverse_layer_idx": False,
              "reorder_and_upcast_attn": False, "n_inner": None, "resid_pdrop": 0.1}
    return config, w


def gpt2_forward(config, w, tokens):
    """Logits (T, V) in float64: Radford et al. 2019 / Hugging Face GPT2LMHeadModel, written out."""
    d = {k: v.to(torch.float64) for k, v in w.items()}
    C, H = config["n_embd"], config["n_head"]
    D, T = C // H, len(tokens)
    eps = config["layer_norm_epsilon"]
    idx = torch.tensor(tokens)

    def ln(x, p):
        return torch.nn.functional.layer_norm(x, (C,), d[p + ".weight"], d[p + ".bias"], eps)

    def gelu_new(x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))

    x = d["wte.weight"][idx] + d["wpe.weight"][:T]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for l in range(config["n_layer"]):
        h = f"h.{l}."
        qkv = ln(x, h + "ln_1") @ d[h + "attn.c_attn.weight"] + d[h + "attn.c_attn.bias"]
        q, k, v = qkv.split(C, dim=1)
        q, k, v = (t.view(T, H, D).transpose(0, 1) for t in (q, k, v))  # (H, T, D)
        scores = (q @ k.transpose(1, 2)) / math.sqrt(D)
        scores = scores.masked_fill(~mask, float("-inf"))
        att = torch.softmax(scores, dim=-1) @ v  # (H, T, D)
        att = att.transpose(0, 1).reshape(T, C)
        x = x + att @ d[h + "attn.c_proj.weight"] + d[h + "attn.c_proj.bias"]
        m = gelu_new(ln(x, h + "ln_2") @ d[h + "mlp.c_fc.weight"] + d[h + "mlp.c_fc.bias"])
        x = x + m @ d[h + "mlp.c_proj.weight"] + d[h + "mlp.c_proj.bias"]
    head = d["wte.weight"] if config.get("tie_word_embeddings", True) else d["lm_head.weight"]
    return ln(x, "ln_f") @ head.T


def relative_error(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


# ---- iclab --------------------------------------------------------------------------------------------------------
def iclab(*args):
    return subprocess.run([ICLAB, *map(str, args)], capture_output=True, text=True)


def write_folder(folder, config, tensors, dtype="F32", prefix="", extra=(), header_edit=None, tokenizer=True):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f)
    named = [(prefix + k if k != "lm_head.weight" else k, v) for k, v in tensors.items()] + list(extra)
    write_safetensors(os.path.join(folder, "model.safetensors"), named, dtype, header_edit, {"format": "pt"})
    if tokenizer:  # a small valid byte-level tokenizer: import parses the files with the loader before copying them
        with open(os.path.join(folder, "vocab.json"), "w") as f:
            json.dump(byte_level_vocab(), f)
        with open(os.path.join(folder, "merges.txt"), "w") as f:
            f.write("#version: 0.2\na b\n")


def byte_level_vocab():
    """GPT-2's byte-to-character map (printable bytes stand for themselves, the others shifted past 255), one token per
    byte, the merge 'a b' as token 256 and <|endoftext|> as 257."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    chars, shift = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + shift)
            shift += 1
    vocab = {chars[b]: b for b in range(256)}
    vocab["ab"] = 256
    vocab["<|endoftext|>"] = 257
    return vocab


def iclab_logits(run, tokens, out):
    result = iclab("predict", run, "--tokens", ",".join(map(str, tokens)), "--top", "1", "--out", out)
    if result.returncode != 0:
        print(result.stdout, result.stderr)
        return None
    with h5py.File(out, "r") as f:
        return f["logits"][()]


def test_roundtrip(tmp, name, config, w, dtype="F32", prefix="", extra=(), tokens_len=None):
    folder, run = os.path.join(tmp, name), os.path.join(tmp, name + "_run")
    write_folder(folder, config, w, dtype, prefix, extra)
    # the weights PyTorch sees are the stored ones: fp16/bf16 rounded, then exactly float
    stored = {k: v.to(DTYPES[dtype][0]).to(torch.float32) for k, v in w.items()}
    result = iclab("import", "gpt2", folder, "--out", run)
    check(result.returncode == 0, f"{name}: import ({result.stderr.strip()})")
    if result.returncode != 0:
        return
    check(os.path.exists(os.path.join(run, "tokenizer", "vocab.json")), f"{name}: tokenizer files copied into the run")
    rng = np.random.default_rng(len(name))
    T = tokens_len or config["n_positions"]
    tokens = [int(t) for t in rng.integers(0, config["vocab_size"], T)]
    ours = iclab_logits(run, tokens, os.path.join(tmp, name + "_logits.h5"))
    reference = gpt2_forward(config, stored, tokens).numpy()
    if ours is None:
        check(False, f"{name}: predict")
        return
    error = relative_error(ours, reference)
    check(ours.shape == reference.shape and error <= TOLERANCE,
          f"{name} ({dtype}, {config['n_layer']} layers, T {T}): iclab vs PyTorch relative logit error {error:.2e} <= {TOLERANCE}")
    # export -> the same tensors, and PyTorch on them gives the same logits
    out = os.path.join(tmp, name + "_export")
    result = iclab("export", run, "--format", "safetensors", "--out", out)
    check(result.returncode == 0, f"{name}: export ({result.stderr.strip()})")
    if result.returncode != 0:
        return
    with open(os.path.join(out, "config.json")) as f:
        exported_config = json.load(f)
    header, exported = read_safetensors(os.path.join(out, "model.safetensors"))
    check(set(exported) == set(stored) and all(torch.equal(exported[k], stored[k]) for k in stored),
          f"{name}: export writes every tensor back bit-exact with Hugging Face names ({len(exported)} tensors)")
    check(all(exported_config[k] == config[k] for k in ("n_layer", "n_embd", "n_head", "n_positions", "vocab_size",
                                                        "tie_word_embeddings", "activation_function")),
          f"{name}: exported config.json")
    again = gpt2_forward(exported_config, exported, tokens).numpy()
    check(relative_error(ours, again) <= TOLERANCE, f"{name}: PyTorch on the export gives iclab's logits ({relative_error(ours, again):.2e})")
    check(os.path.exists(os.path.join(out, "merges.txt")), f"{name}: export copies the tokenizer files")
    result = iclab("export", run, "--format", "safetensors", "--out", out)
    check(result.returncode == 2 and "exists" in result.stderr, f"{name}: export refuses to overwrite without --overwrite")


def expect_refusal(tmp, name, config, w, needle, edit_file=None, **kw):
    folder, run = os.path.join(tmp, name), os.path.join(tmp, name + "_run")
    write_folder(folder, config, w, **kw)
    if edit_file:
        edit_file(os.path.join(folder, "model.safetensors"))
    result = iclab("import", "gpt2", folder, "--out", run)
    message = result.stderr.strip()
    check(result.returncode == 2 and needle in message and not os.path.exists(run) and not os.path.exists(run + ".partial"),
          f"refused {name}: exit {result.returncode}, names '{needle}': {message}")


def main_tests():
    tmp = tempfile.mkdtemp(prefix="iclab_gpt2_")
    try:
        V, P = 97, 24
        c2, w2 = random_gpt2(2, 32, 4, P, V, seed=1)
        test_roundtrip(tmp, "l2_f32", c2, w2)
        c3, w3 = random_gpt2(3, 24, 3, P, V, seed=2)
        buffers = [(f"transformer.h.{l}.attn.{b}", torch.ones(1, 1, P, P)) for l in range(3) for b in ("bias", "masked_bias")]
        test_roundtrip(tmp, "l3_prefixed_lmhead", c3, w3, prefix="transformer.",
                       extra=buffers + [("lm_head.weight", w3["wte.weight"].clone())], tokens_len=P - 5)
        c12, w12 = random_gpt2(12, 32, 2, P, V, seed=3, std=0.1)
        test_roundtrip(tmp, "l12_f32", c12, w12)
        cu, wu = random_gpt2(2, 16, 2, P, V, seed=4, tie=False)
        test_roundtrip(tmp, "l2_untied", cu, wu)
        test_roundtrip(tmp, "l2_f16", c2, w2, dtype="F16")
        test_roundtrip(tmp, "l2_bf16", c2, w2, dtype="BF16")
        test_roundtrip(tmp, "l2_f64", c2, w2, dtype="F64")

        # predict past the context: the limit, not a damaged-file message
        run = os.path.join(tmp, "l2_f32_run")
        result = iclab("predict", run, "--tokens", ",".join(["1"] * (P + 1)))
        check(result.returncode == 2 and f"context of {P}" in result.stderr, f"predict past the context says the limit: {result.stderr.strip()}")

        # damaged files: exit 2 naming the tensor, nothing written
        def truncate(path):
            size = os.path.getsize(path)
            with open(path, "r+b") as f:
                f.truncate(size - 6)
        expect_refusal(tmp, "truncated", c2, w2, "tensor 'ln_f.bias'", truncate)

        def outside(header):
            header["h.1.mlp.c_fc.bias"]["data_offsets"] = [10 ** 9, 10 ** 9 + 4 * 128]
        expect_refusal(tmp, "offsets_outside", c2, w2, "tensor 'h.1.mlp.c_fc.bias'", header_edit=outside)

        def overlap(header):
            header["h.0.ln_1.bias"]["data_offsets"] = header["h.0.ln_1.weight"]["data_offsets"]
        expect_refusal(tmp, "overlapping", c2, w2, "overlaps tensor", header_edit=overlap)

        def size_mismatch(header):
            begin, end = header["h.0.attn.c_proj.bias"]["data_offsets"]
            header["h.0.attn.c_proj.bias"]["shape"] = [31]
        expect_refusal(tmp, "size_vs_offsets", c2, w2, "tensor 'h.0.attn.c_proj.bias'", header_edit=size_mismatch)

        wrong = dict(w2)
        wrong["h.1.mlp.c_fc.weight"] = w2["h.1.mlp.c_fc.weight"].T.contiguous()
        expect_refusal(tmp, "wrong_shape", c2, wrong, "tensor 'h.1.mlp.c_fc.weight' has shape [128, 32]")

        nan = {k: v.clone() for k, v in w2.items()}
        nan["h.1.attn.c_proj.weight"][3, 5] = float("nan")
        expect_refusal(tmp, "nan", c2, nan, "tensor 'h.1.attn.c_proj.weight' holds a non-finite value")
        expect_refusal(tmp, "nan_bf16", c2, nan, "tensor 'h.1.attn.c_proj.weight' holds a non-finite value", dtype="BF16")

        def bad_length(path):
            with open(path, "r+b") as f:
                f.write(struct.pack("<Q", 10 ** 12))
        expect_refusal(tmp, "header_length", c2, w2, "header length", bad_length)

        def long_length(path):
            with open(path, "r+b") as f:
                f.write(struct.pack("<Q", 10 ** 6))
        expect_refusal(tmp, "header_past_end", c2, w2, "runs past the end", long_length)

        missing = {k: v for k, v in w2.items() if k != "h.1.ln_2.bias"}
        expect_refusal(tmp, "missing_tensor", c2, missing, "no tensor 'h.1.ln_2.bias'")
        expect_refusal(tmp, "unknown_tensor", c2, w2, "tensor 'h.2.ln_1.weight' is not part of GPT-2",
                       extra=[("h.2.ln_1.weight", torch.ones(32))])
        expect_refusal(tmp, "lm_head_differs", c2, w2, "tensor 'lm_head.weight' differs from wte.weight",
                       extra=[("lm_head.weight", w2["wte.weight"] + 1)])
        for key, value, needle in [("scale_attn_by_inverse_layer_idx", True, "scale_attn_by_inverse_layer_idx"),
                                   ("reorder_and_upcast_attn", True, "reorder_and_upcast_attn"),
                                   ("activation_function", "gelu", "activation_function 'gelu'"),
                                   ("layer_norm_epsilon", 1e-6, "layer_norm_epsilon"),
                                   ("n_inner", 100, "n_inner")]:
            expect_refusal(tmp, "config_" + key, dict(c2, **{key: value}), w2, needle)
        check(iclab("import", "gpt2", os.path.join(tmp, "l2_f32"), "--out", run).returncode == 2,
              "import refuses to overwrite a run folder without --overwrite")
    finally:
        shutil.rmtree(tmp)
    print(f"{len(FAILURES)} failures")
    return 1 if FAILURES else 0


def write_small(folder):
    config, w = random_gpt2(12, 768, 12, 1024, 50257, seed=0, std=0.02)
    write_folder(folder, config, w)
    tokens = [int(t) for t in np.random.default_rng(0).integers(0, 50257, 1024)]
    with open(os.path.join(folder, "tokens.txt"), "w") as f:
        f.write(",".join(map(str, tokens)))
    np.save(os.path.join(folder, "reference_logits_last.npy"), gpt2_forward(config, w, tokens)[-8:].numpy())
    print(f"wrote {folder}: {sum(v.numel() for v in w.values())} parameters; tokens.txt (1024 ids)")
    return 0


if __name__ == "__main__":
    torch.set_num_threads(1)
    if len(sys.argv) == 4 and sys.argv[2] == "--write-small":
        sys.exit(write_small(sys.argv[3]))
    sys.exit(main_tests())
