"""PyTorch reference of iclab's in-context regression model (papers 003/004; framework/run/regression_training.cpp),
for scripts/bench/torch_reference.py, which documents the model in its docstring."""
import math
import sys

import torch
import torch.nn.functional as F
from torch import nn

LAYERNORM_EPS = 1e-5  # ModelSpec::layernorm_eps


def regression_layout(cfg):
    """T, prefix P, token width d_in, output width d_out, and the kind of each position (0 none, 1 context,
    2 query) of the task's token format (framework/tasks/regression.hpp)."""
    N, Q, X = cfg["task.examples"], cfg["task.queries"], cfg["task.x_dim"]
    out = cfg["task.classes"] if cfg["task.kind"] == "classification" else cfg["task.y_dim"]
    if cfg["task.format"] == "stacked":  # token i = [x_i; y_i] (context), then [x_q; 0] (queries)
        kinds = [1] * N + [2] * Q
    else:  # interleaved: [x_i; 0], [0; y_i] per example, then the queries
        kinds = [1, 0] * N + [2] * Q
    P = N if cfg["task.format"] == "stacked" else 2 * N
    return len(kinds), P, X + out, out, torch.tensor(kinds, dtype=torch.int64)


def regression_visible(cfg, T, P):
    """(T, T) bool, [i, j]: position i attends to key j (framework/nn/attention_mask.hpp, written out as sets)."""
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    mask = cfg["model.mask"]
    if mask == "causal":
        visible = j <= i
    elif mask == "prefix":  # the prefix sees itself entirely, later positions causally
        visible = (j <= i) | ((i < P) & (j < P))
    elif mask == "full":
        visible = torch.ones(T, T, dtype=torch.bool)
    else:
        sys.exit(f"torch_reference: unknown mask {mask}")
    if cfg["model.isolate_queries"]:
        visible = visible & (j < P)                      # nobody sees a query ...
        visible = visible | ((i >= P) & (j < P))         # ... and a query sees the whole context
        if cfg["model.query_self"]:
            visible = visible | ((i >= P) & (i == j))    # ... and, optionally, itself
    return visible


class SoftmaxAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        C, H = cfg["model.width"], cfg["model.heads"]
        self.C, self.H, self.D = C, H, C // H
        self.qkv = nn.Linear(C, 3 * C, bias=bool(cfg["model.qkv_bias"]))
        self.proj = nn.Linear(C, C)

    def forward(self, x, blocked):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.H, self.D).permute(2, 0, 3, 1, 4)  # each (B, H, T, D)
        scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(self.D))          # (B, H, T, T)
        probs = torch.softmax(scores.masked_fill(blocked, float("-inf")), dim=-1)
        return self.proj((probs @ v).transpose(1, 2).reshape(B, T, C))


class RegressionBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        C = cfg["model.width"]
        norm = (lambda: nn.LayerNorm(C, eps=LAYERNORM_EPS)) if cfg["model.layernorm"] else nn.Identity
        self.ln1 = norm()
        self.attn = SoftmaxAttention(cfg)
        self.mlp = bool(cfg["model.mlp"])
        if self.mlp:
            hidden = cfg["model.mlp_ratio"] * C
            self.ln2 = norm()
            self.fc = nn.Linear(C, hidden)
            self.mlp_proj = nn.Linear(hidden, C)

    def forward(self, x, blocked):
        x = x + self.attn(self.ln1(x), blocked)
        if self.mlp:
            x = x + self.mlp_proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))
        return x


class RegressionTransformer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        C, L = cfg["model.width"], cfg["model.layers"]
        T, P, d_in, d_out, _ = regression_layout(cfg)
        self.layers = L
        self.identity_in = cfg["model.read_in"] == "identity"
        self.slice_out = d_out if cfg["model.read_out"] == "slice" else 0
        self.read_in = None if self.identity_in else nn.Linear(d_in, C)
        self.pos = nn.Parameter(torch.zeros(T, C)) if cfg["model.position_embedding"] == "learned" else None
        self.blocks = nn.ModuleList(RegressionBlock(cfg) for _ in range(1 if cfg["model.shared_layers"] else L))
        self.ln_f = nn.LayerNorm(C, eps=LAYERNORM_EPS) if cfg["model.layernorm"] and cfg["model.final_layernorm"] else None
        self.read_out = None if self.slice_out else nn.Linear(C, d_out)
        self.register_buffer("blocked", ~regression_visible(cfg, T, P), persistent=False)
        # iclab's initialization: N(0, init_std) matrices (position embeddings too), residual projections
        # / sqrt(2L), zero biases, unit LayerNorm gains.
        std = cfg["model.init_std"]
        with torch.no_grad():
            for name, p in self.named_parameters():
                if p.dim() >= 2:
                    residual = name.endswith(("attn.proj.weight", "mlp_proj.weight"))
                    p.normal_(0.0, std / math.sqrt(2 * L) if residual else std)
                elif name.endswith(("ln1.weight", "ln2.weight")) or name == "ln_f.weight":
                    p.fill_(1.0)
                else:
                    p.zero_()

    def forward(self, inputs):
        T = inputs.shape[1]
        x = inputs if self.identity_in else self.read_in(inputs)
        if self.pos is not None:
            x = x + self.pos[:T]
        blocked = self.blocked[:T, :T]
        for l in range(self.layers):
            x = self.blocks[0 if len(self.blocks) == 1 else l](x, blocked)
        if self.ln_f is not None:
            x = self.ln_f(x)
        return x[..., -self.slice_out:] if self.slice_out else self.read_out(x)


def regression_iclab_names(model):
    """iclab parameter name -> (torch parameter, transposed?) for the regression model."""
    names = {}
    if model.read_in is not None:
        names.update({"read_in.w": (model.read_in.weight, True), "read_in.b": (model.read_in.bias, False)})
    if model.pos is not None:
        names["position_embedding"] = (model.pos, False)
    for l, b in enumerate(model.blocks):
        p = f"blocks.{l}."
        if isinstance(b.ln1, nn.LayerNorm):
            names.update({p + "ln1.gamma": (b.ln1.weight, False), p + "ln1.beta": (b.ln1.bias, False)})
        names.update({p + "attn.w_qkv": (b.attn.qkv.weight, True), p + "attn.w_o": (b.attn.proj.weight, True),
                      p + "attn.b_o": (b.attn.proj.bias, False)})
        if b.attn.qkv.bias is not None:
            names[p + "attn.b_qkv"] = (b.attn.qkv.bias, False)
        if b.mlp:
            if isinstance(b.ln2, nn.LayerNorm):
                names.update({p + "ln2.gamma": (b.ln2.weight, False), p + "ln2.beta": (b.ln2.bias, False)})
            names.update({p + "mlp.w_fc": (b.fc.weight, True), p + "mlp.b_fc": (b.fc.bias, False),
                          p + "mlp.w_proj": (b.mlp_proj.weight, True), p + "mlp.b_proj": (b.mlp_proj.bias, False)})
    if model.ln_f is not None:
        names.update({"final_norm.gamma": (model.ln_f.weight, False), "final_norm.beta": (model.ln_f.bias, False)})
    if model.read_out is not None:
        names.update({"read_out.w": (model.read_out.weight, True), "read_out.b": (model.read_out.bias, False)})
    assert len(names) == len(list(model.parameters())), "every torch parameter has an iclab name"
    return names


def regression_loss_weights(cfg, positions, dtype):
    """(w_fit, w_l2), each (B, T): loss = Σ w_fit |ŷ − y|² + Σ w_l2 |ŷ|² (the docstring's formula; counts over the batch)."""
    context, query = positions == 1, positions == 2
    fit = query | (context & (cfg["task.loss_positions"] == "all"))
    as_weights = lambda mask, value: mask.to(torch.float64) * value  # noqa: E731  (bool * float would be float32)
    l2 = float(cfg["train.context_output_l2"])
    scale = float(cfg["train.batch_size"]) if cfg["train.loss_reduction"] == "sum" else 1.0
    n_fit, n_context = int(fit.sum()), int(context.sum())
    if l2 > 0 and cfg["train.context_output_l2_form"] == "all_positions":
        # one mean over every fitted and every in-context position (a context position counts once)
        total = max(int((fit | context).sum()), 1)
        w_fit, w_l2 = as_weights(fit, scale / total), as_weights(context, scale * l2 / total)
    else:
        w_fit = as_weights(fit, scale / max(n_fit, 1))
        w_l2 = as_weights(context, scale * l2 / n_context if l2 > 0 and n_context > 0 else 0.0)
    return w_fit.to(dtype), w_l2.to(dtype)


def regression_loss(outputs, targets, w_fit, w_l2):
    return (w_fit * (outputs - targets).square().sum(-1)).sum() + (w_l2 * outputs.square().sum(-1)).sum()
