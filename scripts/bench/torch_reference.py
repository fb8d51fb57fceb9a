#!/usr/bin/python3
"""PyTorch reference of iclab's model, for `iclab bench` (issue 3 item 8).

The same model as framework/model/transformer.cpp + framework/nn/linear_attention.cpp, written the way
one writes it in PyTorch (docs/checkpoint_format.md gives the conventions):
  x_0 = wte[tokens]                                   (no absolute positions: RoPE only)
  per block (pre-norm):  x += W_o attn(LN1(x)) + b_o ;  x += W_proj gelu_tanh(W_fc LN2(x) + b_fc) + b_proj
  logits = LN_f(x) W_out                              (no bias)
  attention per head, 0-based positions, φ = elu + 1 or identity, R_t = RoPE on pairs (2p, 2p+1):
    num_i = (R_i φ(q_i))ᵀ [Σ_{j≤i} R_j φ(k_j) v_jᵀ + b_KV]
    den_i = φ(q_i)ᵀ [Σ_{j≤i} φ(k_j) + b_D] + eps      (normalizer kernel; RoPE in the numerator only)
          = 1 / unnormalized_scale                    (normalizer none; 0 means 1/D)
    out_i = num_i / den_i

Language models (experiment lm, configs with task.vocab_size, e.g. configs/quick/lm_kjv.yaml): GPT-2's
architecture, in scripts/bench/torch_lm.py.

The in-context regression model of papers 003/004 (framework/run/regression_training.cpp, configs with task.kind /
task.format, e.g. the paper-003 cpu2 model configs/cpu2/prefix_vs_causal.yaml), softmax attention:
  x_0 = tokens W_in + b_in  (+ E_pos[t], learned absolute positions)   tokens [x; y] (stacked) or x, y (interleaved)
  per block (pre-norm, one block looped L times with model.shared_layers):
    x += W_o softmax(q kᵀ/√D + mask) v + b_o ;  x += W_proj gelu_tanh(W_fc LN2(x) + b_fc) + b_proj
  out = [LN_f](x) W_ro + b_ro                                          (no final LayerNorm in paper 003's pre-LN)
  mask over the prefix P of in-context positions: causal (j ≤ i) or prefix (j ≤ i or j < P); isolated queries
  (i ≥ P) see only j < P (and themselves with model.query_self), and no position sees a query
  loss = Σ_query |ŷ − y|² / #query + λ Σ_context |ŷ|² / #context                 (context_output_l2_form context_mean)
       = (Σ_query |ŷ − y|² + λ Σ_context |ŷ|²) / (#query + #context)           (all_positions, λ > 0)
    counts over the whole batch, times train.batch_size with train.loss_reduction: sum.

Usage (Debian's /usr/bin/python3 with python3-torch 1.13, python3-yaml, python3-h5py):
  torch_reference.py CONFIG [key.path=value ...] [--threads N] [--warmup K] [--iters K] [--json OUT]
      reads the YAML config (following `inherit:`, then the overrides, then iclab's defaults), builds
      the model at the config's batch size and sequence length, and times, as the median over `iters`
      after `warmup`: forward tokens/s (torch.no_grad) and training-step tokens/s (forward + mean
      cross-entropy + backward + clip_grad_norm_ + AdamW step, iclab's trainer step; regression models: the
      loss above on one random batch).
  torch_reference.py --check EXPORT.h5
      loads the parameters, tokens and targets (regression: inputs, targets, position kinds) that
      `iclab bench --export` wrote, runs forward and backward in the export's dtype and compares logits
      (regression: outputs), loss and every gradient with iclab's.
      Exit status 1 when a difference exceeds the tolerance of the dtype.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from script_io import atomic_write_text, check_output, usage_error  # noqa: E402


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", nargs="?", help="iclab YAML config")
    parser.add_argument("overrides", nargs="*", help="key.path=value overrides, as for iclab")
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    parser.add_argument("--blas-threads", type=int, default=None,
                        help="OPENBLAS_NUM_THREADS for torch's BLAS (default: left as found in the environment)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--form", choices=["quadratic", "cumsum"], default="quadratic",
                        help="causal attention as tril(RφQ (RφK)ᵀ) V (default) or as cumulative sums of the "
                             "(F, D) states (memory B·H·T·F·D per layer)")
    parser.add_argument("--foreach", action="store_true", help="AdamW(foreach=True) (multi-tensor update)")
    parser.add_argument("--json", help="write the measured numbers to this JSON file")
    parser.add_argument("--check", metavar="EXPORT_H5", help="compare with an `iclab bench --export` file")
    args = parser.parse_args()
    if args.check is None and args.config is None:
        parser.error("give CONFIG (benchmark) or --check EXPORT_H5")
    for name, value, low in (("--threads", args.threads, 1), ("--blas-threads", args.blas_threads, 1),
                             ("--warmup", args.warmup, 0), ("--iters", args.iters, 1)):
        if value is not None and not low <= value <= 1_000_000:
            parser.error(f"{name} must be an integer in [{low}, 1000000], got {value}")
    for name, path in (("CONFIG", args.config), ("--check", args.check)):
        if path is not None and not os.path.isfile(path):
            parser.error(f"{name}: no file {path}")
    if args.json is not None:
        args.json = check_output(args.json, [p for p in (args.config, args.check) if p], parser.format_usage().strip(), {".json"})
    return args


ARGS = parse_args()
if ARGS.blas_threads is not None:  # must be set before torch loads OpenBLAS
    os.environ["OPENBLAS_NUM_THREADS"] = str(ARGS.blas_threads)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import yaml  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_lm  # noqa: E402  (the GPT-2-shaped lm model: configs with task.vocab_size)
from torch_config import flatten, read_config, resolved  # noqa: E402
from torch_regression import (RegressionTransformer, regression_iclab_names, regression_layout,  # noqa: E402
                              regression_loss, regression_loss_weights)

VOCAB = 52  # induction-head task: a-z, A-Z

LAYERNORM_EPS = 1e-5  # ModelSpec::layernorm_eps
ATTENTION_BIASES = ("attn.b_kv", "attn.b_d")  # b_KV, b_D of Eq. 13: zero at initialization, never decayed


# ---- the model ------------------------------------------------------------------------------------

def rope_tables(time_steps, features, base, dtype):
    """cos, sin (T, F/2) of angle t·θ_p, θ_p = base^(-2p/F), computed in double as iclab does."""
    p = torch.arange(features // 2, dtype=torch.float64)
    theta = base ** (-2.0 * p / features)
    angle = torch.arange(time_steps, dtype=torch.float64)[:, None] * theta[None, :]
    return torch.cos(angle).to(dtype), torch.sin(angle).to(dtype)


def rotate(x, cos, sin):
    """R_t x on pairs (2p, 2p+1) of the last axis; x (..., T, F)."""
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack((cos * x0 - sin * x1, sin * x0 + cos * x1), dim=-1).flatten(-2)


class LinearAttention(nn.Module):
    def __init__(self, cfg, form):
        super().__init__()
        C, H = cfg["model.width"], cfg["model.heads"]
        self.C, self.H, self.D = C, H, C // H
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)
        trainable = bool(cfg["model.attention_bias_trainable"])
        self.b_kv = nn.Parameter(torch.zeros(H, self.D, self.D), requires_grad=trainable)  # (H, F, D)
        self.b_d = nn.Parameter(torch.zeros(H, self.D), requires_grad=trainable)            # (H, F)
        self.elu1 = cfg["model.feature_map"] == "elu1"
        self.rope = bool(cfg["model.rope"])
        self.normalize = cfg["model.normalizer"] == "kernel"
        self.eps = cfg["model.normalizer_eps"]
        scale = cfg["model.unnormalized_scale"]
        self.scale = scale if scale > 0 else 1.0 / self.D
        self.form = form

    def forward(self, x, cos, sin, causal_mask):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.H, self.D).permute(2, 0, 3, 1, 4)  # each (B, H, T, D)
        fq, fk = (F.elu(q) + 1, F.elu(k) + 1) if self.elu1 else (q, k)
        rq, rk = (rotate(fq, cos, sin), rotate(fk, cos, sin)) if self.rope else (fq, fk)
        if self.form == "quadratic":
            scores = (rq @ rk.transpose(-1, -2)).masked_fill_(causal_mask, 0.0)  # (B, H, T, T), j > i zeroed
            num = scores @ v + rq @ self.b_kv
        else:  # S_i = Σ_{j≤i} R_j φ(k_j) v_jᵀ + b_KV: (B, H, T, F, D)
            states = torch.cumsum(rk.unsqueeze(-1) * v.unsqueeze(-2), dim=2) + self.b_kv[:, None]
            num = (rq.unsqueeze(-2) @ states).squeeze(-2)
        if self.normalize:
            den = (fq * (fk.cumsum(dim=2) + self.b_d[:, None, :])).sum(-1, keepdim=True) + self.eps
            out = num / den
        else:
            out = num * self.scale
        return self.proj(out.transpose(1, 2).reshape(B, T, C))


class Block(nn.Module):
    def __init__(self, cfg, form):
        super().__init__()
        C = cfg["model.width"]
        self.ln1 = nn.LayerNorm(C, eps=LAYERNORM_EPS)
        self.attn = LinearAttention(cfg, form)
        self.mlp = bool(cfg["model.mlp"])
        if self.mlp:
            hidden = cfg["model.mlp_ratio"] * C
            self.ln2 = nn.LayerNorm(C, eps=LAYERNORM_EPS)
            self.fc = nn.Linear(C, hidden)
            self.mlp_proj = nn.Linear(hidden, C)

    def forward(self, x, cos, sin, causal_mask):
        x = x + self.attn(self.ln1(x), cos, sin, causal_mask)
        if self.mlp:
            x = x + self.mlp_proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))
        return x


class Transformer(nn.Module):
    def __init__(self, cfg, form="quadratic"):
        super().__init__()
        C, L = cfg["model.width"], cfg["model.layers"]
        self.wte = nn.Embedding(VOCAB, C)
        self.blocks = nn.ModuleList(Block(cfg, form) for _ in range(L))
        self.ln_f = nn.LayerNorm(C, eps=LAYERNORM_EPS)
        self.unembed = nn.Linear(C, VOCAB, bias=False)
        cos, sin = rope_tables(cfg["task.seq_len"], C // cfg["model.heads"], cfg["model.rope_base"], torch.float64)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        T = cfg["task.seq_len"]  # causal mask as in GPT implementations (masked_fill_ is 2x faster than tril here)
        self.register_buffer("causal_mask", torch.ones(T, T, dtype=torch.bool).triu(1), persistent=False)
        # GPT-2 initialization as iclab's: N(0, init_std), residual projections / sqrt(2L), zero biases.
        std = cfg["model.init_std"]
        with torch.no_grad():
            for name, p in self.named_parameters():
                if p.dim() >= 2 and not name.endswith(ATTENTION_BIASES):
                    residual = name.endswith(("attn.proj.weight", "mlp_proj.weight"))
                    p.normal_(0.0, std / math.sqrt(2 * L) if residual else std)
                elif name.endswith("ln1.weight") or name.endswith("ln2.weight") or name == "ln_f.weight":
                    p.fill_(1.0)
                else:
                    p.zero_()

    def forward(self, tokens):
        T = tokens.shape[1]
        cos, sin = self.cos[:T].to(self.wte.weight.dtype), self.sin[:T].to(self.wte.weight.dtype)
        x = self.wte(tokens)
        mask = self.causal_mask[:T, :T]
        for block in self.blocks:
            x = block(x, cos, sin, mask)
        return self.unembed(self.ln_f(x))


def iclab_names(model):
    """iclab parameter name -> (torch parameter, transposed?): iclab stores matrices (in, out), torch (out, in)."""
    names = {"embedding.wte": (model.wte.weight, False)}
    for l, b in enumerate(model.blocks):
        p = f"blocks.{l}."
        names.update({p + "ln1.gamma": (b.ln1.weight, False), p + "ln1.beta": (b.ln1.bias, False),
                      p + "attn.w_qkv": (b.attn.qkv.weight, True), p + "attn.b_qkv": (b.attn.qkv.bias, False),
                      p + "attn.w_o": (b.attn.proj.weight, True), p + "attn.b_o": (b.attn.proj.bias, False),
                      p + "attn.b_kv": (b.attn.b_kv, False), p + "attn.b_d": (b.attn.b_d, False)})
        if b.mlp:
            names.update({p + "ln2.gamma": (b.ln2.weight, False), p + "ln2.beta": (b.ln2.bias, False),
                          p + "mlp.w_fc": (b.fc.weight, True), p + "mlp.b_fc": (b.fc.bias, False),
                          p + "mlp.w_proj": (b.mlp_proj.weight, True), p + "mlp.b_proj": (b.mlp_proj.bias, False)})
    names.update({"final_norm.gamma": (model.ln_f.weight, False), "final_norm.beta": (model.ln_f.bias, False),
                  "unembedding.w": (model.unembed.weight, True)})
    assert len(names) == len(list(model.parameters())), "every torch parameter has an iclab name"
    return names


# ---- training step as iclab's trainer (experiments/induction_head.cpp) ---------------------------

def learning_rate(cfg, step):
    base = cfg["train.lr"]
    if cfg["train.schedule"] == "constant":
        return base
    warmup, total = cfg["train.warmup_steps"], cfg["train.steps"]
    if step < warmup:
        return base * (step + 1) / warmup
    decay = max(total - warmup, 1)
    progress = min((step - warmup) / max(decay - 1, 1), 1.0)
    low = cfg["train.min_lr_ratio"] * base
    return low + 0.5 * (base - low) * (1 + math.cos(math.pi * progress))


def make_optimizer(model, cfg, foreach):
    # iclab decays the matrices (embedding, projections, unembedding), not biases, norms, b_KV or b_D
    trainable = [p for p in model.parameters() if p.requires_grad]
    decay = [p for n, p in model.named_parameters() if p.requires_grad and p.dim() >= 2 and not n.endswith(ATTENTION_BIASES)]
    decay_ids = {id(p) for p in decay}
    rest = [p for p in trainable if id(p) not in decay_ids]
    groups = [{"params": decay, "weight_decay": cfg["train.weight_decay"]}, {"params": rest, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg["train.lr"], betas=(cfg["train.beta1"], cfg["train.beta2"]),
                             eps=cfg["train.eps"], foreach=foreach or None), trainable


def timed(warmup, iters, work):
    for _ in range(warmup):
        work()
    samples = []
    for _ in range(iters):
        start = time.perf_counter()
        work()
        samples.append(time.perf_counter() - start)
    return samples


def benchmark(args):
    cfg = resolved(read_config(args.config, args.overrides))
    torch.set_num_threads(args.threads)
    dtype = torch.float64 if cfg["model.dtype"] == "float64" else torch.float32
    torch.manual_seed(cfg["seed"])
    B = cfg["train.batch_size"]
    generator = torch.Generator().manual_seed(cfg["seed"] + 101)
    if cfg["regression"]:  # one random batch of real-valued tokens with the task's position kinds
        model = RegressionTransformer(cfg).to(dtype)
        T, _, d_in, d_out, kinds = regression_layout(cfg)
        tokens = torch.rand(B, T, d_in, generator=generator, dtype=torch.float64).mul_(2).sub_(1).to(dtype)
        targets = torch.randn(B, T, d_out, generator=generator, dtype=torch.float64).to(dtype)
        w_fit, w_l2 = regression_loss_weights(cfg, kinds.expand(B, T), dtype)
        compute_loss = lambda outputs: regression_loss(outputs, targets, w_fit, w_l2)  # noqa: E731
    elif cfg["lm"]:  # random tokens of the real vocabulary: throughput does not depend on their values
        model = torch_lm.LmTransformer(cfg).to(dtype)
        T, V = cfg["task.seq_len"], cfg["task.vocab_size"]
        tokens = torch.randint(0, V, (B, T), generator=generator)
        targets = torch.randint(0, V, (B, T), generator=generator)
        compute_loss = lambda logits: model.loss(logits, targets)  # noqa: E731
    else:
        model = Transformer(cfg, args.form).to(dtype)
        T = cfg["task.seq_len"]
        tokens = torch.randint(0, VOCAB, (B, T), generator=generator)
        targets = torch.randint(0, VOCAB, (B, T), generator=generator)
        compute_loss = lambda logits: F.cross_entropy(logits.view(-1, VOCAB), targets.view(-1))  # noqa: E731
    optimizer, trainable = make_optimizer(model, cfg, args.foreach)
    clip = cfg["train.grad_clip"]
    step = [0]

    def forward():
        with torch.no_grad():
            model(tokens)

    def train_step():
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(cfg, step[0])
        optimizer.zero_grad(set_to_none=True)
        loss = compute_loss(model(tokens))  # induction head: the mean cross-entropy over all positions
        if not math.isfinite(loss.item()):
            sys.exit(f"torch_reference: the loss is {loss.item()} at step {step[0] + 1}")
        loss.backward()
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(trainable, clip)
        optimizer.step()
        step[0] += 1

    forward_s = timed(args.warmup, args.iters, forward)
    train_s = timed(args.warmup, args.iters, train_step)
    n_tokens = B * T
    result = {
        "config": args.config, "overrides": args.overrides, "torch_version": torch.__version__,
        "model_kind": "regression" if cfg["regression"] else "lm" if cfg["lm"] else "induction_head",
        "threads": torch.get_num_threads(), "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS", ""),
        "dtype": str(dtype).replace("torch.", ""), "form": args.form, "foreach": bool(args.foreach),
        "batch_size": B, "seq_len": T, "tokens_per_step": n_tokens,
        "parameter_count": sum(p.numel() for p in model.parameters()),
        "trainable_parameter_count": sum(p.numel() for p in trainable),
        "warmup": args.warmup, "iters": args.iters,
        "forward_tokens_per_s": n_tokens / statistics.median(forward_s),
        "train_tokens_per_s": n_tokens / statistics.median(train_s),
        "forward_s": forward_s, "train_step_s": train_s,
        "load_average": open("/proc/loadavg").read().split()[:3],
    }
    print(f"torch reference {args.config} {' '.join(args.overrides)}")
    print(f"  torch {torch.__version__}, {result['threads']} threads, OPENBLAS_NUM_THREADS="
          f"{result['openblas_num_threads'] or '(unset)'}, {result['dtype']}, "
          + ("regression model, softmax attention" if cfg["regression"] else "GPT-2-shaped language model" if cfg["lm"]
             else f"attention form {args.form}"))
    print(f"  {result['parameter_count']} parameters ({result['trainable_parameter_count']} trainable); "
          f"batch {B} x seq_len {T} = {n_tokens} tokens per step; warmup {args.warmup}, median of {args.iters}")
    print(f"  forward        {result['forward_tokens_per_s']:12.0f} tokens/s  ({statistics.median(forward_s) * 1e3:.2f} ms)")
    print(f"  training step  {result['train_tokens_per_s']:12.0f} tokens/s  ({statistics.median(train_s) * 1e3:.2f} ms)")
    if args.json:
        atomic_write_text(args.json, json.dumps(result, indent=1))


# ---- cross-check against iclab ----------------------------------------------------------------------

def relative_max_error(ours, reference):
    """max |ours − reference| / max |reference| (in double)."""
    reference = reference.to(torch.float64)
    return ((ours.detach().to(torch.float64) - reference).abs().max() / max(reference.abs().max().item(), 1e-30)).item()


def check_regression(args, cfg):
    import h5py
    import numpy as np
    with h5py.File(args.check, "r") as f:
        dtype = torch.float64 if f.attrs["dtype"] == "float64" else torch.float32
        checkpoint = {name: f["checkpoint"][name][()] for name in f["checkpoint"]}
        grads = {name: f["check/grads"][name][()] for name in f["check/grads"]}
        inputs = torch.from_numpy(f["check/inputs"][()]).to(dtype)
        targets = torch.from_numpy(f["check/targets"][()]).to(dtype)
        positions = torch.from_numpy(f["check/positions"][()].astype(np.int64))
        outputs_iclab = torch.from_numpy(f["check/outputs"][()])
        loss_iclab = float(f.attrs["loss"])
        count_iclab = int(f.attrs["parameter_count"])
        prefix_iclab = int(f.attrs["prefix_length"])
    B = inputs.shape[0]
    T, P, d_in, d_out, kinds = regression_layout(cfg)
    if (T, P, d_in, d_out) != (inputs.shape[1], prefix_iclab, inputs.shape[2], targets.shape[2]):
        sys.exit(f"check: the task gives T {T}, prefix {P}, d_in {d_in}, d_out {d_out}; the export T {inputs.shape[1]}, "
                 f"prefix {prefix_iclab}, d_in {inputs.shape[2]}, d_out {targets.shape[2]}")
    if not torch.equal(positions, kinds.expand(B, T)):
        sys.exit("check: the export's position kinds are not the task format's")
    model = RegressionTransformer(cfg).to(dtype)
    names = regression_iclab_names(model)
    count = sum(p.numel() for p in model.parameters())
    if count != count_iclab or set(names) != set(checkpoint):
        sys.exit(f"check: parameters differ: torch {count} {sorted(set(names) ^ set(checkpoint))}, iclab {count_iclab}")
    with torch.no_grad():
        for name, (p, transposed) in names.items():
            value = torch.from_numpy(checkpoint[name]).to(dtype)
            value = value.T if transposed else value
            if tuple(value.shape) != tuple(p.shape):
                sys.exit(f"check: {name} has shape {tuple(value.shape)} in iclab, {tuple(p.shape)} here")
            p.copy_(value)
    cfg = dict(cfg, **{"train.batch_size": B})  # the export's batch (loss_reduction sum scales by it)
    w_fit, w_l2 = regression_loss_weights(cfg, positions, dtype)
    outputs = model(inputs)
    loss = regression_loss(outputs, targets, w_fit, w_l2)
    loss.backward()
    output_error = relative_max_error(outputs, outputs_iclab)
    loss_error = abs(loss.item() - loss_iclab) / abs(loss_iclab)
    worst_name, worst = "", 0.0
    for name, (p, transposed) in names.items():
        g = p.grad.T if transposed else p.grad
        error = relative_max_error(g, torch.from_numpy(grads[name]))
        if error > worst:
            worst_name, worst = name, error
    tolerance = 1e-10 if dtype == torch.float64 else 1e-4  # fp64 agrees to rounding (~1e-15)
    print(f"check {args.check}: regression model, {str(dtype).replace('torch.', '')}, batch {B}, {count} parameters (same "
          f"names and shapes as iclab): outputs max|Δ|/max|ŷ| {output_error:.2e}, loss {loss.item():.6g} rel {loss_error:.2e}, "
          f"gradients max|Δ|/max|g| {worst:.2e} (worst {worst_name}); tolerance {tolerance:.0e}")
    if max(output_error, loss_error, worst) > tolerance:
        sys.exit("check FAILED: the torch model is not iclab's model")
    print("check passed")


def check(args):
    import h5py
    import numpy as np
    torch.set_num_threads(args.threads)
    with h5py.File(args.check, "r") as f:
        cfg = resolved(flatten(yaml.safe_load(f.attrs["config"])))
    if cfg["regression"]:
        return check_regression(args, cfg)
    with h5py.File(args.check, "r") as f:
        dtype = torch.float64 if f.attrs["dtype"] == "float64" else torch.float32
        checkpoint = {name: f["checkpoint"][name][()] for name in f["checkpoint"]}
        grads = {name: f["check/grads"][name][()] for name in f["check/grads"]}
        tokens = torch.from_numpy(f["check/tokens"][()].astype(np.int64))
        targets = torch.from_numpy(f["check/targets"][()].astype(np.int64))
        logits_iclab = torch.from_numpy(f["check/logits"][()]).to(torch.float64)
        loss_iclab = float(f.attrs["loss"])
        count_iclab = int(f.attrs["parameter_count"])
    failures = []
    results = {}
    for form in (("softmax",) if cfg["lm"] else ("quadratic", "cumsum")):
        model = torch_lm.LmTransformer(cfg).to(dtype) if cfg["lm"] else Transformer(cfg, form).to(dtype)
        names = torch_lm.iclab_names(model) if cfg["lm"] else iclab_names(model)
        count = sum(p.numel() for p in model.parameters())
        if count != count_iclab or set(names) != set(checkpoint):
            sys.exit(f"check: parameters differ: torch {count} {sorted(set(names) ^ set(checkpoint))}, iclab {count_iclab}")
        with torch.no_grad():
            for name, (p, transposed) in names.items():
                value = torch.from_numpy(checkpoint[name]).to(dtype)
                value = value.T if transposed else value
                if tuple(value.shape) != tuple(p.shape):
                    sys.exit(f"check: {name} has shape {tuple(value.shape)} in iclab, {tuple(p.shape)} here")
                p.copy_(value)
                p.requires_grad_(True)  # b_KV, b_D too: their gradients are compared even when not trained
        logits = model(tokens)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        loss.backward()
        logit_error = ((logits.detach().to(torch.float64) - logits_iclab).abs().max() / logits_iclab.abs().max()).item()
        loss_error = abs(loss.item() - loss_iclab) / abs(loss_iclab)
        worst_name, worst = "", 0.0
        for name, (p, transposed) in names.items():
            g = torch.zeros_like(p) if p.grad is None else p.grad  # b_D is unused without the normalizer
            g = g.T if transposed else g
            reference = torch.from_numpy(grads[name]).to(torch.float64)
            scale = max(reference.abs().max().item(), 1e-30)
            error = (g.to(torch.float64) - reference).abs().max().item() / scale
            if error > worst:
                worst_name, worst = name, error
        results[form] = (logit_error, loss_error, worst, worst_name)
        tolerance = 1e-9 if dtype == torch.float64 else 1e-4
        print(f"check {args.check}: {str(dtype).replace('torch.', '')}, {count} parameters (same names and shapes as "
              f"iclab), torch form {form}: logits max|Δ|/max|z| {logit_error:.2e}, loss rel {loss_error:.2e}, gradients "
              f"max|Δ|/max|g| {worst:.2e} (worst {worst_name}); tolerance {tolerance:.0e}")
        if max(logit_error, loss_error, worst) > tolerance:
            failures.append(form)
    if failures:
        sys.exit(f"check FAILED ({', '.join(failures)}): the torch model is not iclab's model")
    print("check passed")


if __name__ == "__main__":
    if ARGS.check:
        check(ARGS)
    else:
        benchmark(ARGS)
