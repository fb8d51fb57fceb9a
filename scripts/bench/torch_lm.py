"""PyTorch reference of iclab's GPT-2-shaped language model (experiment `lm`, configs/*/lm_kjv.yaml), for
scripts/bench/torch_reference.py: the same model as framework/model/transformer.cpp with the GPT-2 option set
(docs/gpt2.md), written the way one writes GPT-2 in PyTorch (nanoGPT style, torch 1.13: no fused attention):
  x_0 = wte[tokens] + wpe[t]                                      (learned absolute positions, 0-based)
  per block (pre-LN):  x += W_o softmax(q kᵀ/√D, causal) v + b_o ;  x += W_proj gelu_tanh(W_fc LN2(x) + b_fc) + b_proj
  logits = LN_f(x) wteᵀ        (tied embeddings; untied: LN_f(x) W_out, no bias)
  loss = mean next-token cross-entropy over all B·T positions (framework/run/lm_training.cpp)
"""
import math
import sys

import torch
import torch.nn.functional as F
from torch import nn

LAYERNORM_EPS = 1e-5  # ModelSpec::layernorm_eps

# The keys this reference implements, with the only values it implements (the GPT-2 option set of the lm configs).
REQUIRED = {"model.attention": "softmax", "model.position_embedding": "learned", "model.rope": False,
            "model.layernorm": True, "model.final_layernorm": True, "model.mlp": True}
DEFAULTS = {"model.mlp_ratio": 4, "model.qkv_bias": True, "model.tie_embeddings": True, "model.init_std": 0.02,
            "task.seq_len": 0}


def resolve(cfg):
    """Fills the lm defaults and refuses what this reference does not implement; returns cfg with 'lm': True."""
    for key, value in DEFAULTS.items():
        cfg.setdefault(key, value)
    for key, wanted in REQUIRED.items():
        if cfg.get(key, wanted) != wanted:
            sys.exit(f"torch_reference: language models with {key} = {wanted} only, got {cfg[key]}")
    if not cfg["task.seq_len"]:
        cfg["task.seq_len"] = cfg["task.context_length"]
    cfg["lm"] = True
    return cfg


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        C, H = cfg["model.width"], cfg["model.heads"]
        self.H, self.D = H, C // H
        self.qkv = nn.Linear(C, 3 * C, bias=bool(cfg["model.qkv_bias"]))
        self.proj = nn.Linear(C, C)

    def forward(self, x, blocked):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.H, self.D).permute(2, 0, 3, 1, 4)  # each (B, H, T, D)
        scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(self.D))
        probs = torch.softmax(scores.masked_fill(blocked, float("-inf")), dim=-1)
        return self.proj((probs @ v).transpose(1, 2).reshape(B, T, C))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        C = cfg["model.width"]
        hidden = cfg["model.mlp_ratio"] * C
        self.ln1 = nn.LayerNorm(C, eps=LAYERNORM_EPS)
        self.attn = CausalSelfAttention(cfg)
        self.ln2 = nn.LayerNorm(C, eps=LAYERNORM_EPS)
        self.fc = nn.Linear(C, hidden)
        self.mlp_proj = nn.Linear(hidden, C)

    def forward(self, x, blocked):
        x = x + self.attn(self.ln1(x), blocked)
        return x + self.mlp_proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class LmTransformer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        V, C, L = cfg["task.vocab_size"], cfg["model.width"], cfg["model.layers"]
        context = cfg["task.context_length"]
        self.vocab = V
        self.wte = nn.Embedding(V, C)
        self.wpe = nn.Parameter(torch.zeros(context, C))
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(L))
        self.ln_f = nn.LayerNorm(C, eps=LAYERNORM_EPS)
        self.unembed = None if cfg["model.tie_embeddings"] else nn.Linear(C, V, bias=False)
        self.register_buffer("blocked", torch.ones(context, context, dtype=torch.bool).triu(1), persistent=False)
        std = cfg["model.init_std"]  # GPT-2's initialization as iclab's: residual projections / sqrt(2L)
        with torch.no_grad():
            for name, p in self.named_parameters():
                if p.dim() >= 2:
                    residual = name.endswith(("attn.proj.weight", "mlp_proj.weight"))
                    p.normal_(0.0, std / math.sqrt(2 * L) if residual else std)
                elif name.endswith(("ln1.weight", "ln2.weight")) or name == "ln_f.weight":
                    p.fill_(1.0)
                else:
                    p.zero_()

    def forward(self, tokens):
        T = tokens.shape[1]
        x = self.wte(tokens) + self.wpe[:T]
        blocked = self.blocked[:T, :T]
        for block in self.blocks:
            x = block(x, blocked)
        x = self.ln_f(x)
        return x @ self.wte.weight.T if self.unembed is None else self.unembed(x)

    def loss(self, logits, targets):
        return F.cross_entropy(logits.reshape(-1, self.vocab), targets.reshape(-1))


def iclab_names(model):
    """iclab parameter name -> (torch parameter, transposed?): iclab stores matrices (in, out), torch (out, in)."""
    names = {"embedding.wte": (model.wte.weight, False), "position_embedding": (model.wpe, False)}
    for l, b in enumerate(model.blocks):
        p = f"blocks.{l}."
        names.update({p + "ln1.gamma": (b.ln1.weight, False), p + "ln1.beta": (b.ln1.bias, False),
                      p + "attn.w_qkv": (b.attn.qkv.weight, True), p + "attn.w_o": (b.attn.proj.weight, True),
                      p + "attn.b_o": (b.attn.proj.bias, False),
                      p + "ln2.gamma": (b.ln2.weight, False), p + "ln2.beta": (b.ln2.bias, False),
                      p + "mlp.w_fc": (b.fc.weight, True), p + "mlp.b_fc": (b.fc.bias, False),
                      p + "mlp.w_proj": (b.mlp_proj.weight, True), p + "mlp.b_proj": (b.mlp_proj.bias, False)})
        if b.attn.qkv.bias is not None:
            names[p + "attn.b_qkv"] = (b.attn.qkv.bias, False)
    names.update({"final_norm.gamma": (model.ln_f.weight, False), "final_norm.beta": (model.ln_f.bias, False)})
    if model.unembed is not None:
        names["unembedding.w"] = (model.unembed.weight, True)
    assert len(names) == len(list(model.parameters())), "every torch parameter has an iclab name"
    return names
