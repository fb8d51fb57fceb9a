"""The config as iclab resolves it, for the PyTorch reference (scripts/bench/torch_reference.py): the YAML file with its
`inherit:` chain and overrides, then iclab's schema defaults for the keys the reference uses."""
import os
import sys

import yaml

import torch_lm  # the GPT-2-shaped lm model's keys (configs with task.vocab_size)

# iclab's schema defaults for the keys used here (experiments/common.cpp, experiments/induction_head.cpp).
DEFAULTS = {
    "seed": 0,
    "task.seq_len": 64,
    "model.dtype": "float32", "model.layers": 2, "model.width": 64, "model.heads": 2, "model.mlp": True,
    "model.mlp_ratio": 4, "model.feature_map": "elu1", "model.normalizer": "kernel", "model.normalizer_eps": 1e-6,
    "model.unnormalized_scale": 0.0, "model.rope": True, "model.rope_base": 10000.0,
    "model.attention_bias_trainable": False, "model.init_std": 0.02,
    "train.steps": 1000, "train.batch_size": 32, "train.optimizer": "adamw", "train.lr": 1e-3,
    "train.schedule": "warmup_cosine", "train.warmup_steps": 100, "train.min_lr_ratio": 0.1, "train.beta1": 0.9,
    "train.beta2": 0.99, "train.eps": 1e-8, "train.weight_decay": 0.0, "train.grad_clip": 1.0,
}
# ... and of the regression task and model keys (framework/run/regression_training.cpp, framework/run/config_keys.cpp).
REGRESSION_DEFAULTS = {
    "task.kind": "linear", "task.format": "stacked", "task.x_dim": 11, "task.y_dim": 1, "task.examples": 15,
    "task.queries": 1, "task.classes": 3, "task.loss_positions": "query",
    "model.attention": "linear", "model.mask": "causal", "model.isolate_queries": False, "model.query_self": True,
    "model.layernorm": True, "model.final_layernorm": True, "model.position_embedding": "none", "model.residual": True,
    "model.output_projection": True, "model.qkv_bias": True, "model.shared_layers": False,
    "model.read_in": "linear", "model.read_out": "linear",
    "train.warmup_fraction": 0.0, "train.context_output_l2": 0.0, "train.context_output_l2_form": "context_mean",
    "train.loss_reduction": "mean",
}

def flatten(tree, prefix=""):
    out = {}
    for key, value in (tree or {}).items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, path + "."))
        else:
            out[path] = value
    return out


def read_config(path, overrides=()):
    """The config as iclab resolves it: the inherited file first, the including file's keys win, then overrides."""
    with open(path) as f:
        tree = yaml.safe_load(f) or {}
    flat = {}
    if "inherit" in tree:
        flat.update(read_config(os.path.join(os.path.dirname(path), tree.pop("inherit"))))
    flat.update(flatten(tree))
    for text in overrides:
        key, _, value = text.partition("=")
        flat[key] = yaml.safe_load(value)
    return flat


def is_regression(flat):
    """Which model, by the task's keys as `iclab bench` decides: trigger tokens (induction head) or a regression task."""
    return "task.triggers" not in flat and any(k in flat for k in ("task.kind", "task.format", "task.x_dim"))


def resolved(flat):
    cfg = dict(DEFAULTS)
    if "task.vocab_size" in flat:  # a language model (experiment lm)
        cfg.update(flat)
        cfg["regression"] = False
        torch_lm.resolve(cfg)
    elif is_regression(flat):
        cfg.update(REGRESSION_DEFAULTS)
        cfg.update(flat)
        cfg["regression"] = True
        required = {"model.attention": "softmax", "model.rope": False, "model.residual": True, "model.output_projection": True}
        for key, wanted in required.items():  # what this reference implements
            if cfg[key] != wanted:
                sys.exit(f"torch_reference: regression models with {key} = {wanted} only, got {cfg[key]}")
    else:
        cfg.update(flat)
        cfg["regression"] = False
        cfg["lm"] = False
        if cfg.get("experiment", "induction_head") != "induction_head":
            sys.exit(f"torch_reference: only induction_head and regression-task configs, got {cfg['experiment']}")
    if cfg["train.optimizer"] != "adamw":
        sys.exit("torch_reference: times AdamW only (train.optimizer: adamw)")
    if cfg.get("train.warmup_fraction", 0.0) > 0:  # iclab: the fraction replaces train.warmup_steps
        cfg["train.warmup_steps"] = round(cfg["train.warmup_fraction"] * cfg["train.steps"])
    return cfg
