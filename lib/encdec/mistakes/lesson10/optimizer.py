"""Exercise 10.3, make_optimizer: the mistakes of AdamW and its two parameter groups."""

from .. import mistake


# -- Exercise 10.3 make_optimizer ----------------------------------------------------------------------------
@mistake("make_optimizer", "decay_everything",
         "weight decay is applied to every parameter, the RMSNorm gains and the FFN biases too. Decay "
         "pulls a parameter towards 0 at every step. That is meant for the weight matrices, to keep them "
         "small; a gain's neutral value is 1, not 0, and the biases are a few numbers that are left alone "
         "too (as encdec.capstone does). Make two parameter groups: the matrices (p.ndim >= 2, the "
         "embedding included) with weight_decay, the gains and biases with 0.")
def make_optimizer(model, lr, weight_decay, betas):
    import torch
    return torch.optim.AdamW(model.parameters(), lr=lr, betas=betas, weight_decay=weight_decay)


@mistake("make_optimizer", "adam_with_l2",
         "torch.optim.Adam(weight_decay=...) is not AdamW: it adds weight_decay * p to the gradient "
         "(an L2 penalty), which then goes through Adam's normalisation, so a parameter with a zero "
         "gradient still moves by about lr. AdamW decays the weights directly, p -= lr * weight_decay * p, "
         "apart from the gradient: use torch.optim.AdamW.")
def make_optimizer(model, lr, weight_decay, betas):  # noqa: F811
    import torch
    params = list(model.parameters())
    return torch.optim.Adam([{"params": [p for p in params if p.ndim >= 2], "weight_decay": weight_decay},
                             {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}], lr=lr, betas=betas)


@mistake("make_optimizer", "embedding_not_decayed",
         "the embedding is left out of the decayed group (a rule by name, such as decaying only the "
         "parameters called W..., misses it). The embedding is a matrix too (V x d_model, and the tied "
         "output head as well): decay exactly the parameters with p.ndim >= 2.")
def make_optimizer(model, lr, weight_decay, betas):  # noqa: F811
    import torch
    named = list(model.named_parameters())
    decay = [p for n, p in named if n.split(".")[-1].startswith("W")]
    rest = [p for n, p in named if not n.split(".")[-1].startswith("W")]
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                              {"params": rest, "weight_decay": 0.0}], lr=lr, betas=betas)


@mistake("make_optimizer", "biases_decayed",
         "the FFN biases (b1, b2) are decayed with the matrices: only the gains were left out. Decay is "
         "meant for the weight matrices; biases, like gains, are 1-D vectors that are left out of it (as "
         "encdec.capstone does): decay exactly the parameters with p.ndim >= 2.")
def make_optimizer(model, lr, weight_decay, betas):  # noqa: F811
    import torch
    named = list(model.named_parameters())
    decay = [p for n, p in named if "gamma" not in n]
    rest = [p for n, p in named if "gamma" in n]
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                              {"params": rest, "weight_decay": 0.0}], lr=lr, betas=betas)


@mistake("make_optimizer", "betas_ignored",
         "the betas are not passed on, so AdamW uses its defaults (0.9, 0.999), not the rates asked for: "
         "its running averages of the gradient and of its square forget at other speeds (with the "
         "capstone's (0.9, 0.98), the average of the squared gradient would forget far more slowly). "
         "Pass betas=betas.")
def make_optimizer(model, lr, weight_decay, betas):  # noqa: F811
    import torch
    params = list(model.parameters())
    return torch.optim.AdamW([{"params": [p for p in params if p.ndim >= 2], "weight_decay": weight_decay},
                              {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}], lr=lr)


# -- more shape-preserving slips (every shape still fits; only the values show them) -----------------------
@mistake("make_optimizer", "lr_ignored",
         "the learning rate is not passed on, so AdamW uses its default 1e-3. Pass lr=lr.")
def make_optimizer(model, lr, weight_decay, betas):  # noqa: F811
    import torch
    params = list(model.parameters())
    return torch.optim.AdamW([{"params": [p for p in params if p.ndim >= 2], "weight_decay": weight_decay},
                              {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}], betas=betas)


@mistake("make_optimizer", "groups_swapped",
         "the two groups are swapped: the gains and biases (1-D) are decayed and the matrices are not. "
         "Decay the parameters with p.ndim >= 2 (the embedding included); give the others weight_decay 0.")
def make_optimizer(model, lr, weight_decay, betas):  # noqa: F811
    import torch
    params = list(model.parameters())
    return torch.optim.AdamW([{"params": [p for p in params if p.ndim < 2], "weight_decay": weight_decay},
                              {"params": [p for p in params if p.ndim >= 2], "weight_decay": 0.0}],
                             lr=lr, betas=betas)
