"""Lesson 10: the capstone in PyTorch. The weight transfer from NumPy, the warm-up + cosine schedule,
AdamW's parameter groups, one training step with clipping, exact-match evaluation, and greedy decoding
with a KV cache.

Written with tensor methods, and `import torch` inside the functions that need the module itself:
every grading kernel imports all the catalogs at start-up, and only this lesson should pay for
importing torch. Helpers that stand in for code the notebook gives carry a trailing underscore
(`rms_norm_`, `attend_`, `embed_at_`), so that pasting a mistake into a notebook never replaces the
student's own function of the plain name.
"""

import math

from . import mistake


# -- what the notebook gives (section 10.9), for tensors -------------------------------------------------
def rms_norm_(x, gamma, eps=1e-6):
    """x / sqrt(mean(x^2) + eps) * gamma over the last axis."""
    return x * (x.pow(2).mean(dim=-1, keepdim=True) + eps).rsqrt() * gamma


def split_heads_(x, n_heads):
    """(..., T, d_model) -> (..., h, T, d_k)."""
    *lead, T, d = x.shape
    return x.reshape(*lead, T, n_heads, d // n_heads).transpose(-2, -3)


def merge_heads_(x):
    """(..., h, T, d_k) -> (..., T, h * d_k)."""
    x = x.transpose(-2, -3)
    return x.reshape(*x.shape[:-2], x.shape[-2] * x.shape[-1])


def attend_(Q, K, V, mask=None):
    """softmax(Q K^T / sqrt(d_k) + mask) V for every head: (..., h, m, d_k) over (..., h, n, d_k)."""
    scores = Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores + mask
    return scores.softmax(dim=-1) @ V


def embed_at_(model, tokens, position):
    """One token per sequence, tokens (B,), embedded at `position`: (B, 1, d_model)."""
    import torch
    from encdec.layers import sinusoidal_positions
    d = model.config.d_model
    x = model.embedding[tokens[:, None]] * math.sqrt(d)
    pe = torch.from_numpy(sinusoidal_positions(position + 1, d)[position])
    return x + pe.to(device=x.device, dtype=x.dtype)


# -- Exercise 10.1 load_numpy_parameters -------------------------------------------------------------------
@mistake("load_numpy_parameters", "transposed",
         "the matrices are transposed on the way in, as if they were nn.Linear weights. nn.Linear "
         "stores (d_out, d_in) and computes x @ W.T; the course stores every W as (d_in, d_out) and "
         "computes x @ W, in NumPy and in torch alike: copy the arrays as they are.")
def load_numpy_parameters(module, params):
    import torch
    own = dict(module.named_parameters())
    if set(own) != set(params):
        raise ValueError(f"parameter names differ: {sorted(set(own) ^ set(params))}")
    with torch.no_grad():
        for name, p in own.items():
            value = params[name].T if params[name].ndim == 2 else params[name]
            p.copy_(torch.from_numpy(value.copy()))
    return module


@mistake("load_numpy_parameters", "no_shape_check",
         "the names are checked but not the shapes: an array of the wrong shape reaches copy_, which raises "
         "a RuntimeError (or broadcasts a smaller array silently). Check every array's shape against its "
         "parameter's before copying, and raise a ValueError that names the parameter and both shapes.")
def load_numpy_parameters(module, params):  # noqa: F811
    import torch
    own = dict(module.named_parameters())
    if set(own) != set(params):
        raise ValueError(f"parameter names differ: {sorted(set(own) ^ set(params))}")
    with torch.no_grad():
        for name, p in own.items():
            p.copy_(torch.from_numpy(params[name]))
    return module


@mistake("load_numpy_parameters", "data_from_numpy",
         "`p.data = torch.from_numpy(value)` swaps in NumPy's own tensor: a float32 model gets "
         "float64 parameters, and each parameter now shares its memory with the NumPy array. Copy "
         "into the existing parameter instead, keeping its dtype and device: p.copy_(torch.from_numpy(value)) "
         "under torch.no_grad().")
def load_numpy_parameters(module, params):  # noqa: F811
    import torch
    own = dict(module.named_parameters())
    if set(own) != set(params):
        raise ValueError(f"parameter names differ: {sorted(set(own) ^ set(params))}")
    for name, p in own.items():
        if tuple(p.shape) != params[name].shape:
            raise ValueError(f"{name}: torch shape {tuple(p.shape)} vs NumPy shape {params[name].shape}")
        p.data = torch.from_numpy(params[name])
    return module


@mistake("load_numpy_parameters", "no_checks",
         "names and shapes are never checked: a parameter missing from the dict keeps its random "
         "initial value, and an unexpected name is silently ignored. Compare the two sets of names "
         "(and each pair of shapes) first, and raise a ValueError that names the difference.")
def load_numpy_parameters(module, params):  # noqa: F811
    import torch
    own = dict(module.named_parameters())
    with torch.no_grad():
        for name, value in params.items():
            if name in own:
                own[name].copy_(torch.from_numpy(value))
    return module


@mistake("load_numpy_parameters", "copy_with_grad",
         "an in-place copy into a parameter while autograd is recording: torch refuses to modify a "
         "leaf tensor that requires grad. Do the copies inside `with torch.no_grad():`.")
def load_numpy_parameters(module, params):  # noqa: F811
    import torch
    own = dict(module.named_parameters())
    if set(own) != set(params):
        raise ValueError(f"parameter names differ: {sorted(set(own) ^ set(params))}")
    for name, p in own.items():
        if tuple(p.shape) != params[name].shape:
            raise ValueError(f"{name}: torch shape {tuple(p.shape)} vs NumPy shape {params[name].shape}")
        p.copy_(torch.from_numpy(params[name]))
    return module


@mistake("load_numpy_parameters", "new_parameters",
         "every parameter is replaced by a new nn.Parameter. The values are right, but anything that "
         "holds the old tensors (an optimizer made before the copy, a DDP wrapper) keeps training "
         "those. Copy the values into the existing parameters with p.copy_(...) under torch.no_grad().")
def load_numpy_parameters(module, params):  # noqa: F811
    import torch
    own = dict(module.named_parameters())
    if set(own) != set(params):
        raise ValueError(f"parameter names differ: {sorted(set(own) ^ set(params))}")
    for name, p in own.items():
        if tuple(p.shape) != params[name].shape:
            raise ValueError(f"{name}: torch shape {tuple(p.shape)} vs NumPy shape {params[name].shape}")
        *path, leaf = name.split(".")
        owner = module.get_submodule(".".join(path))
        owner.register_parameter(leaf, torch.nn.Parameter(torch.tensor(params[name], dtype=p.dtype, device=p.device)))
    return module


# -- Exercise 10.2 lr_at ---------------------------------------------------------------------------------------
@mistake("lr_at", "one_step_late",
         "the schedule is one step late: step 1 gets the rate of a step 0, which is 0, so the first "
         "update does nothing, and the peak comes one step after warmup_steps. Steps count from 1 here: "
         "the warm-up is peak_lr * step / warmup_steps, which reaches peak_lr exactly at step = warmup_steps.")
def lr_at(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):
    step = step - 1
    if step <= warmup_steps:
        return peak_lr * step / warmup_steps
    progress = min((step - warmup_steps) / (total_steps - warmup_steps), 1.0)
    return min_lr + 0.5 * (peak_lr - min_lr) * (1 + math.cos(math.pi * progress))


@mistake("lr_at", "one_step_early",
         "the warm-up is one step early, as if steps counted from 0: step 1 already gets 2 * peak_lr / "
         "warmup_steps, and the last warm-up step overshoots the peak. Steps count from 1 here: the "
         "warm-up is peak_lr * step / warmup_steps, which reaches peak_lr exactly at step = warmup_steps.")
def lr_at(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):  # noqa: F811
    if step <= warmup_steps:
        return peak_lr * (step + 1) / warmup_steps
    progress = min((step - warmup_steps) / (total_steps - warmup_steps), 1.0)
    return min_lr + 0.5 * (peak_lr - min_lr) * (1 + math.cos(math.pi * progress))


@mistake("lr_at", "cosine_without_half",
         "the decay uses cos(pi * progress) alone, which runs from 1 down to -1: half way through the "
         "decay the rate is already min_lr, and then it goes below it (negative rates make training "
         "climb the loss). The cosine schedule is min_lr + (peak_lr - min_lr) * (1 + cos(pi * progress)) / 2, "
         "which runs from peak_lr to min_lr.")
def lr_at(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):  # noqa: F811
    if step <= warmup_steps:
        return peak_lr * step / warmup_steps
    progress = min((step - warmup_steps) / (total_steps - warmup_steps), 1.0)
    return min_lr + (peak_lr - min_lr) * math.cos(math.pi * progress)


@mistake("lr_at", "decay_from_step_zero",
         "the cosine's progress is counted from step 0 (step / total_steps), not from the end of the "
         "warm-up, so the rate drops below peak_lr the moment the warm-up ends. Count the decay's "
         "progress from the end of the warm-up: (step - warmup_steps) / (total_steps - warmup_steps).")
def lr_at(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):  # noqa: F811
    if step <= warmup_steps:
        return peak_lr * step / warmup_steps
    progress = min(step / total_steps, 1.0)
    return min_lr + 0.5 * (peak_lr - min_lr) * (1 + math.cos(math.pi * progress))


@mistake("lr_at", "min_lr_ignored",
         "the decay ends at 0, not at min_lr: min_lr never enters the formula. Decay the distance "
         "between the peak and the floor, min_lr + (peak_lr - min_lr) * (1 + cos(pi * progress)) / 2.")
def lr_at(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):  # noqa: F811
    if step <= warmup_steps:
        return peak_lr * step / warmup_steps
    progress = min((step - warmup_steps) / (total_steps - warmup_steps), 1.0)
    return 0.5 * peak_lr * (1 + math.cos(math.pi * progress))


@mistake("lr_at", "no_clamp_after_the_end",
         "after total_steps the cosine keeps going and the rate climbs back up towards peak_lr. Clamp "
         "the progress at 1, so that every step after the end gets min_lr.")
def lr_at(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):  # noqa: F811
    if step <= warmup_steps:
        return peak_lr * step / warmup_steps
    progress = (step - warmup_steps) / (total_steps - warmup_steps)
    return min_lr + 0.5 * (peak_lr - min_lr) * (1 + math.cos(math.pi * progress))


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


# -- Exercise 10.4 torch_train_step ------------------------------------------------------------------------------
def _loss(logits, targets, pad_id):
    """Mean cross-entropy over the non-pad target positions (what F.cross_entropy(ignore_index=pad) gives)."""
    logp = logits.log_softmax(dim=-1).gather(-1, targets[..., None]).squeeze(-1)  # (B, m)
    keep = targets != pad_id
    return -(logp * keep).sum() / keep.sum()


def _shift_right(targets, bos_id):
    tgt_in = targets.roll(1, dims=-1)
    tgt_in[..., 0] = bos_id
    return tgt_in


def _set_lr(optimizer, lr):
    for group in optimizer.param_groups:
        group["lr"] = lr


@mistake("torch_train_step", "no_zero_grad",
         "the gradients are never zeroed: torch adds each backward pass's gradients to what .grad "
         "already holds, so the second step's gradient (and its norm) still contains the first one. "
         "Call optimizer.zero_grad() before loss.backward().")
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):
    import torch
    _set_lr(optimizer, lr)
    loss = _loss(model(src, _shift_right(tgt, bos_id)), tgt, model.config.pad_id)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return loss.item(), norm.item()


@mistake("torch_train_step", "zero_grad_after_backward",
         "optimizer.zero_grad() runs after loss.backward(), so it wipes the gradients this step has just "
         "computed: the clipping and the update then see zeros, and the weights do not move. zero_grad() clears "
         "what the previous step left: call it first, before the forward pass and loss.backward().")
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):  # noqa: F811
    import torch
    _set_lr(optimizer, lr)
    loss = _loss(model(src, _shift_right(tgt, bos_id)), tgt, model.config.pad_id)
    loss.backward()
    optimizer.zero_grad()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return loss.item(), norm.item()


@mistake("torch_train_step", "zero_grad_before_step",
         "optimizer.zero_grad() runs between the clipping and optimizer.step(), so the step sees gradients of "
         "zero and the weights do not move (the norm, taken before, still looks right). zero_grad() clears what "
         "the previous step left: call it first, before the forward pass and loss.backward().")
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):  # noqa: F811
    import torch
    _set_lr(optimizer, lr)
    loss = _loss(model(src, _shift_right(tgt, bos_id)), tgt, model.config.pad_id)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.zero_grad()
    optimizer.step()
    return loss.item(), norm.item()


@mistake("torch_train_step", "clip_after_step",
         "the clipping does not reach the update: clip_grad_norm_ runs either before loss.backward() (on "
         "gradients that are not this step's yet) or after optimizer.step() (when the update has already "
         "used them). Clip between loss.backward() and optimizer.step().")
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):  # noqa: F811
    import torch
    _set_lr(optimizer, lr)
    loss = _loss(model(src, _shift_right(tgt, bos_id)), tgt, model.config.pad_id)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    return loss.item(), norm.item()


@mistake("torch_train_step", "clip_before_backward",
         "the clipping does not reach the update: clip_grad_norm_ runs before loss.backward(), on gradients "
         "that are not this step's yet (zero after zero_grad(), so the norm it returns is 0), and the update "
         "then uses the unclipped ones. Clip between loss.backward() and optimizer.step().")
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):  # noqa: F811
    import torch
    _set_lr(optimizer, lr)
    loss = _loss(model(src, _shift_right(tgt, bos_id)), tgt, model.config.pad_id)
    optimizer.zero_grad()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    loss.backward()
    optimizer.step()
    return loss.item(), norm.item()


@mistake("torch_train_step", "norm_after_clipping",
         "the gradient norm is measured after clipping, so it never exceeds max_norm and cannot show a "
         "gradient spike. Return the norm before clipping: torch.nn.utils.clip_grad_norm_ returns "
         "exactly that.")
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):  # noqa: F811
    import torch
    _set_lr(optimizer, lr)
    loss = _loss(model(src, _shift_right(tgt, bos_id)), tgt, model.config.pad_id)
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    norm = torch.sqrt(sum((p.grad ** 2).sum() for p in model.parameters()))
    optimizer.step()
    return loss.item(), norm.item()


@mistake("torch_train_step", "no_shift",
         "the decoder reads the targets themselves, so position t sees the very token it must "
         "predict and learns to copy it. Teacher forcing feeds the targets shifted right: <bos> "
         "first, the last token dropped.")
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):  # noqa: F811
    import torch
    _set_lr(optimizer, lr)
    loss = _loss(model(src, tgt), tgt, model.config.pad_id)
    optimizer.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return loss.item(), norm.item()


@mistake("torch_train_step", "rolled_without_bos",
         "the decoder's input is the targets rolled right by one with nothing put in front: position 0 holds the "
         "last target (an <eos> or a pad) where <bos> belongs. Shifting right is a roll and <bos> written into "
         "position 0: tgt_in[:, 0] = bos_id (or torch.cat of a <bos> column and tgt[:, :-1]).")
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):  # noqa: F811
    import torch
    _set_lr(optimizer, lr)
    loss = _loss(model(src, tgt.roll(1, dims=-1)), tgt, model.config.pad_id)
    optimizer.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return loss.item(), norm.item()


@mistake("torch_train_step", "pads_counted",
         "the loss is averaged over the pad positions too, as if they were tokens to predict. Average "
         "over the real target tokens only: F.cross_entropy(..., ignore_index=pad_id), or mask the pads "
         "out and divide by their number.")
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):  # noqa: F811
    import torch
    _set_lr(optimizer, lr)
    logits = model(src, _shift_right(tgt, bos_id))
    loss = -logits.log_softmax(dim=-1).gather(-1, tgt[..., None]).mean()
    optimizer.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return loss.item(), norm.item()


@mistake("torch_train_step", "lr_in_first_group_only",
         "the learning rate is set in optimizer.param_groups[0] only: the other group (the gains and "
         "biases, without weight decay) keeps the rate it was made with. Set group['lr'] = lr in every "
         "group of optimizer.param_groups.")
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):  # noqa: F811
    import torch
    optimizer.param_groups[0]["lr"] = lr
    loss = _loss(model(src, _shift_right(tgt, bos_id)), tgt, model.config.pad_id)
    optimizer.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return loss.item(), norm.item()


@mistake("torch_train_step", "lr_not_set",
         "the learning rate of this step is never given to the optimizer, so every step uses the rate "
         "it was made with and the schedule does nothing. Before optimizer.step(), set group['lr'] = lr "
         "in every group of optimizer.param_groups.")
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):  # noqa: F811
    import torch
    loss = _loss(model(src, _shift_right(tgt, bos_id)), tgt, model.config.pad_id)
    optimizer.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return loss.item(), norm.item()


# -- Exercise 10.5 exact_match -------------------------------------------------------------------------------------
def _padded(tokens, width, pad):
    """(B, L) -> (B, width): cut, or padded on the right with pad."""
    import torch
    if tokens.shape[1] >= width:
        return tokens[:, :width]
    return torch.cat([tokens, tokens.new_full((tokens.shape[0], width - tokens.shape[1]), pad)], dim=1)


def _decoded(model, src, bos_id, eos_id, max_len):
    import torch
    with torch.no_grad():
        return model.greedy_decode(src, bos_id, eos_id, max_len)


@mistake("exact_match", "token_accuracy",
         "this is token accuracy, the fraction of target tokens predicted right, not exact match. A "
         "sequence is one answer: it counts 1 only when every one of its tokens, up to and including "
         "<eos>, is right, and 0 otherwise; exact match is the fraction of such sequences.")
def exact_match(model, src, tgt, bos_id, eos_id, max_len):
    was_training = model.training
    model.eval()
    pred = _decoded(model, src, bos_id, eos_id, max_len)
    model.train(was_training)
    pad = model.config.pad_id
    pred = _padded(pred, tgt.shape[1], pad)
    real = tgt != pad
    return ((pred == tgt) & real).sum().item() / real.sum().item()


@mistake("exact_match", "eos_not_compared",
         "only the tokens before the target's <eos> are compared, so a prediction that goes on past "
         "the end (an extra token, or no <eos> at all) still counts. <eos> is part of the answer: "
         "compare every position up to and including the target's <eos>.")
def exact_match(model, src, tgt, bos_id, eos_id, max_len):  # noqa: F811
    was_training = model.training
    model.eval()
    pred = _decoded(model, src, bos_id, eos_id, max_len)
    model.train(was_training)
    pad = model.config.pad_id
    pred = _padded(pred, tgt.shape[1], pad)
    compared = (tgt != pad) & (tgt != eos_id)
    return ((pred == tgt) | ~compared).all(dim=1).float().mean().item()


@mistake("exact_match", "prefix_counts",
         "a prediction cut short (a prefix of the target, stopped by max_len before its <eos>) counts as a "
         "match: the comparison stops where the prediction ends (zip stops at the shorter row, or the "
         "prediction's pads are skipped). Compare against the whole target: every target token up to and "
         "including <eos> must be matched, so pad the prediction to the target's width first.")
def exact_match(model, src, tgt, bos_id, eos_id, max_len):  # noqa: F811
    was_training = model.training
    model.eval()
    pred = _decoded(model, src, bos_id, eos_id, max_len)
    model.train(was_training)
    pad = model.config.pad_id
    width = max(pred.shape[1], tgt.shape[1])
    pred, target = _padded(pred, width, pad), _padded(tgt, width, pad)
    return ((pred == target) | (pred == pad)).all(dim=1).float().mean().item()


@mistake("exact_match", "pads_with_zero",
         "the shorter rows are padded with 0 where the model's pad id belongs (model.config.pad_id): with "
         "another pad id, a right prediction padded with 0 differs from its target's pads, and does not count. "
         "Pad with model.config.pad_id, or compare only the positions up to and including the target's <eos>.")
def exact_match(model, src, tgt, bos_id, eos_id, max_len):  # noqa: F811
    was_training = model.training
    model.eval()
    pred = _decoded(model, src, bos_id, eos_id, max_len)
    model.train(was_training)
    width = max(pred.shape[1], tgt.shape[1])
    pred, target = _padded(pred, width, 0), _padded(tgt, width, 0)
    return (pred == target).all(dim=1).float().mean().item()


@mistake("exact_match", "mode_not_restored",
         "the model is left in eval mode after evaluating. Evaluation runs in the middle of training, "
         "and the training steps after it would then run without dropout. Remember model.training "
         "before model.eval(), and put it back at the end: model.train(was_training).")
def exact_match(model, src, tgt, bos_id, eos_id, max_len):  # noqa: F811
    import torch
    pad = model.config.pad_id
    model.eval()
    with torch.no_grad():
        pred = model.greedy_decode(src, bos_id, eos_id, max_len)
    width = max(pred.shape[1], tgt.shape[1])
    return (_padded(pred, width, pad) == _padded(tgt, width, pad)).all(dim=1).float().mean().item()


@mistake("exact_match", "train_after",
         "the model is put in training mode at the end, whatever mode it was in: evaluating a model "
         "that was in eval mode switches it to training mode. Restore the mode it had: "
         "was_training = model.training before model.eval(), model.train(was_training) at the end.")
def exact_match(model, src, tgt, bos_id, eos_id, max_len):  # noqa: F811
    import torch
    pad = model.config.pad_id
    model.eval()
    with torch.no_grad():
        pred = model.greedy_decode(src, bos_id, eos_id, max_len)
    model.train()
    width = max(pred.shape[1], tgt.shape[1])
    return (_padded(pred, width, pad) == _padded(tgt, width, pad)).all(dim=1).float().mean().item()


# -- Exercise 10.6 greedy_decode_cached ----------------------------------------------------------------------------
def _cross_kv(model, H_enc, normed=False):
    """Every decoder block's cross-attention keys and values, (B, h, n, d_k) each (`normed`: made, wrongly, from
    rms_norm(H_enc, norm2_gamma))."""
    h, eps = model.config.n_heads, model.config.eps
    source = [rms_norm_(H_enc, b.norm2_gamma, eps) if normed else H_enc for b in model.decoder]
    return [(split_heads_(s @ b.cross_attn.W_k, h), split_heads_(s @ b.cross_attn.W_v, h))
            for s, b in zip(source, model.decoder)]


def _blocks(model, x, cache, cross, src_mask, keep_past=True):
    """Every decoder block on the newest position x (B, 1, d_model); cache[i] holds block i's self-attention
    [K, V] (B, h, t, d_k). Returns the logits of the new position, (B, V)."""
    import torch
    h, eps = model.config.n_heads, model.config.eps
    for i, b in enumerate(model.decoder):
        a = rms_norm_(x, b.norm1_gamma, eps)
        K, V = split_heads_(a @ b.self_attn.W_k, h), split_heads_(a @ b.self_attn.W_v, h)
        if keep_past and cache[i] is not None:
            K, V = torch.cat([cache[i][0], K], dim=-2), torch.cat([cache[i][1], V], dim=-2)
        cache[i] = (K, V)
        x = x + merge_heads_(attend_(split_heads_(a @ b.self_attn.W_q, h), K, V)) @ b.self_attn.W_o
        a = rms_norm_(x, b.norm2_gamma, eps)
        x = x + merge_heads_(attend_(split_heads_(a @ b.cross_attn.W_q, h), *cross[i], src_mask)) @ b.cross_attn.W_o
        x = x + b.ffn(rms_norm_(x, b.norm3_gamma, eps))
    return (rms_norm_(x, model.decoder_norm_gamma, eps) @ model.embedding.T)[:, 0]


def _banned_argmax(logits, ids):
    logits = logits.clone()
    logits[:, ids] = float("-inf")
    return logits.argmax(dim=-1)


@mistake("greedy_decode_cached", "recompute_prefix",
         "the decoder runs over the whole prefix at every step (model.decode on <bos> y1 ... y_t), so "
         "nothing is cached: step t pushes t positions through every block, about L^2/2 in all. Feed "
         "only the newest token, at its position, and keep each block's self-attention K and V in a "
         "cache that grows by one row per step.")
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):
    import torch
    pad, B = model.config.pad_id, src.shape[0]
    with torch.no_grad():
        H_enc, src_mask = model.encode(src)
        tgt_in = torch.full((B, 1), bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(B, dtype=torch.bool, device=src.device)
        out = []
        for _ in range(max_len):
            token = _banned_argmax(model.decode(tgt_in, H_enc, src_mask)[:, -1], [pad, bos_id])
            token = torch.where(done, pad, token)
            out.append(token)
            done = done | (token == eos_id)
            if bool(done.all()):
                break
            tgt_in = torch.cat([tgt_in, token[:, None]], dim=1)
        return torch.stack(out, dim=1)


@mistake("greedy_decode_cached", "cross_kv_every_step",
         "cross-attention's keys and values are computed again at every step, from an encoder output "
         "that never changes while decoding. Compute H_enc @ W_k and H_enc @ W_v of every decoder "
         "block once, before the loop, and reuse them at every step.")
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):  # noqa: F811
    import torch
    pad, B = model.config.pad_id, src.shape[0]
    with torch.no_grad():
        H_enc, src_mask = model.encode(src)
        cache = [None] * len(model.decoder)
        token = torch.full((B,), bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(B, dtype=torch.bool, device=src.device)
        out = []
        for t in range(max_len):
            logits = _blocks(model, embed_at_(model, token, t), cache, _cross_kv(model, H_enc), src_mask)
            token = torch.where(done, pad, _banned_argmax(logits, [pad, bos_id]))
            out.append(token)
            done = done | (token == eos_id)
            if bool(done.all()):
                break
        return torch.stack(out, dim=1)


@mistake("greedy_decode_cached", "positions_not_offset",
         "every new token is embedded at position 0 (model.embed(token[:, None]) puts a sequence of "
         "one token at position 0), so the decoder cannot tell the steps apart. The newest token sits "
         "at position t, the number of tokens fed before it: embed_at(model, token, t).")
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):  # noqa: F811
    import torch
    pad, B = model.config.pad_id, src.shape[0]
    with torch.no_grad():
        H_enc, src_mask = model.encode(src)
        cross, cache = _cross_kv(model, H_enc), [None] * len(model.decoder)
        token = torch.full((B,), bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(B, dtype=torch.bool, device=src.device)
        out = []
        for _ in range(max_len):
            logits = _blocks(model, model.embed(token[:, None]), cache, cross, src_mask)
            token = torch.where(done, pad, _banned_argmax(logits, [pad, bos_id]))
            out.append(token)
            done = done | (token == eos_id)
            if bool(done.all()):
                break
        return torch.stack(out, dim=1)


@mistake("greedy_decode_cached", "cache_not_extended",
         "the self-attention cache is overwritten with the newest token's K and V instead of growing, "
         "so the new token attends to itself alone and forgets everything generated before. Append "
         "the new row: K = torch.cat([K_cache, K_new], dim=-2), and the same for V.")
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):  # noqa: F811
    import torch
    pad, B = model.config.pad_id, src.shape[0]
    with torch.no_grad():
        H_enc, src_mask = model.encode(src)
        cross, cache = _cross_kv(model, H_enc), [None] * len(model.decoder)
        token = torch.full((B,), bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(B, dtype=torch.bool, device=src.device)
        out = []
        for t in range(max_len):
            logits = _blocks(model, embed_at_(model, token, t), cache, cross, src_mask, keep_past=False)
            token = torch.where(done, pad, _banned_argmax(logits, [pad, bos_id]))
            out.append(token)
            done = done | (token == eos_id)
            if bool(done.all()):
                break
        return torch.stack(out, dim=1)


@mistake("greedy_decode_cached", "stops_at_first_eos",
         "the whole batch stops as soon as one sequence says <eos>, cutting the others short. A "
         "finished row only gets pads from then on; stop the loop when every row has finished "
         "(every row has said <eos>), or after max_len steps.")
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):  # noqa: F811
    import torch
    pad, B = model.config.pad_id, src.shape[0]
    with torch.no_grad():
        H_enc, src_mask = model.encode(src)
        cross, cache = _cross_kv(model, H_enc), [None] * len(model.decoder)
        token = torch.full((B,), bos_id, dtype=torch.long, device=src.device)
        out = []
        for t in range(max_len):
            token = _banned_argmax(_blocks(model, embed_at_(model, token, t), cache, cross, src_mask), [pad, bos_id])
            out.append(token)
            if bool((token == eos_id).any()):
                break
        return torch.stack(out, dim=1)


@mistake("greedy_decode_cached", "finished_not_padded",
         "a row that has said <eos> keeps generating: the tokens after its <eos> are whatever the model "
         "says next, not pads. Remember per row whether it has finished (a boolean tensor of shape (B,)) "
         "and write the pad id for finished rows: torch.where(finished, pad_id, token).")
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):  # noqa: F811
    import torch
    pad, B = model.config.pad_id, src.shape[0]
    with torch.no_grad():
        H_enc, src_mask = model.encode(src)
        cross, cache = _cross_kv(model, H_enc), [None] * len(model.decoder)
        token = torch.full((B,), bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(B, dtype=torch.bool, device=src.device)
        out = []
        for t in range(max_len):
            token = _banned_argmax(_blocks(model, embed_at_(model, token, t), cache, cross, src_mask), [pad, bos_id])
            out.append(token)
            done = done | (token == eos_id)
            if bool(done.all()):
                break
        return torch.stack(out, dim=1)


@mistake("greedy_decode_cached", "specials_not_banned",
         "<bos> and <pad> are not banned, so the decoder may choose them as the next token. Neither "
         "is ever a real output: set their logits to -inf before the argmax, as greedy decoding does.")
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):  # noqa: F811
    import torch
    pad, B = model.config.pad_id, src.shape[0]
    with torch.no_grad():
        H_enc, src_mask = model.encode(src)
        cross, cache = _cross_kv(model, H_enc), [None] * len(model.decoder)
        token = torch.full((B,), bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(B, dtype=torch.bool, device=src.device)
        out = []
        for t in range(max_len):
            token = torch.where(done, pad, _blocks(model, embed_at_(model, token, t), cache, cross, src_mask).argmax(-1))
            out.append(token)
            done = done | (token == eos_id)
            if bool(done.all()):
                break
        return torch.stack(out, dim=1)


@mistake("greedy_decode_cached", "float64_positions",
         "a tensor made in float64 (here the positions: torch.from_numpy or torch.tensor of a NumPy array "
         "is float64) meets the weights of a float32 model, and torch refuses to mix the two in a matrix "
         "product. Make new tensors in the model's own dtype and device: .to(model.embedding.dtype), or "
         "use the given embed_at.")
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):  # noqa: F811
    import torch
    from encdec.layers import sinusoidal_positions
    pad, B = model.config.pad_id, src.shape[0]
    pe = torch.from_numpy(sinusoidal_positions(max_len, model.config.d_model))  # float64, whatever the model
    with torch.no_grad():
        H_enc, src_mask = model.encode(src)
        cross, cache = _cross_kv(model, H_enc), [None] * len(model.decoder)
        token = torch.full((B,), bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(B, dtype=torch.bool, device=src.device)
        out = []
        for t in range(max_len):
            x = (model.embedding[token] * math.sqrt(model.config.d_model) + pe[t])[:, None]
            token = torch.where(done, pad, _banned_argmax(_blocks(model, x, cache, cross, src_mask), [pad, bos_id]))
            out.append(token)
            done = done | (token == eos_id)
            if bool(done.all()):
                break
        return torch.stack(out, dim=1)


# -- more shape-preserving slips (every shape still fits; only the values show them) -----------------------
@mistake("load_numpy_parameters", "matrices_only",
         "only the matrices are copied (parameters with p.ndim >= 2): the RMSNorm gains and the FFN biases "
         "keep their initial values. Copy every parameter, whatever its number of dimensions.")
def load_numpy_parameters(module, params):  # noqa: F811
    import torch
    own = dict(module.named_parameters())
    if set(own) != set(params):
        raise ValueError(f"parameter names differ: {sorted(set(own) ^ set(params))}")
    with torch.no_grad():
        for name, p in own.items():
            if tuple(p.shape) != params[name].shape:
                raise ValueError(f"{name}: torch shape {tuple(p.shape)} vs NumPy shape {params[name].shape}")
            if p.ndim >= 2:
                p.copy_(torch.from_numpy(params[name]))
    return module


@mistake("load_numpy_parameters", "embedding_not_copied",
         "the embedding is not copied (only the blocks' parameters and the final norms are): E keeps its "
         "random initial values, and with it the tied output head. Copy every parameter the dict names, "
         "`embedding` included.")
def load_numpy_parameters(module, params):  # noqa: F811
    import torch
    own = dict(module.named_parameters())
    if set(own) != set(params):
        raise ValueError(f"parameter names differ: {sorted(set(own) ^ set(params))}")
    with torch.no_grad():
        for name, p in own.items():
            if tuple(p.shape) != params[name].shape:
                raise ValueError(f"{name}: torch shape {tuple(p.shape)} vs NumPy shape {params[name].shape}")
            if name != "embedding":
                p.copy_(torch.from_numpy(params[name]))
    return module


@mistake("lr_at", "progress_over_total",
         "the decay's progress is divided by total_steps, not by the length of the decay, total_steps - "
         "warmup_steps: the rate never reaches min_lr by the last step. p = (step - warmup_steps) / "
         "(total_steps - warmup_steps), at most 1.")
def lr_at(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):  # noqa: F811
    if step <= warmup_steps:
        return peak_lr * step / warmup_steps
    progress = min((step - warmup_steps) / total_steps, 1.0)
    return min_lr + 0.5 * (peak_lr - min_lr) * (1 + math.cos(math.pi * progress))


@mistake("lr_at", "warmup_from_min_lr",
         "the warm-up rises from min_lr instead of from 0: min_lr + (peak_lr - min_lr) * step / warmup_steps. "
         "min_lr is where the decay ends; the warm-up is peak_lr * step / warmup_steps.")
def lr_at(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):  # noqa: F811
    if step <= warmup_steps:
        return min_lr + (peak_lr - min_lr) * step / warmup_steps
    progress = min((step - warmup_steps) / (total_steps - warmup_steps), 1.0)
    return min_lr + 0.5 * (peak_lr - min_lr) * (1 + math.cos(math.pi * progress))


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


@mistake("torch_train_step", "lr_set_after_step",
         "the learning rate is set after optimizer.step(), so each step moves with the previous step's rate. "
         "Set group[\"lr\"] = lr for every parameter group first.")
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):  # noqa: F811
    import torch
    loss = _loss(model(src, _shift_right(tgt, bos_id)), tgt, model.config.pad_id)
    optimizer.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    _set_lr(optimizer, lr)
    return loss.item(), norm.item()


@mistake("torch_train_step", "loss_per_sequence",
         "the loss is summed over the tokens and divided by the number of sequences, not by the number of "
         "real target tokens: F.cross_entropy(..., ignore_index=pad_id) averages over the real tokens.")
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):  # noqa: F811
    import torch
    _set_lr(optimizer, lr)
    logits = model(src, _shift_right(tgt, bos_id))
    logp = logits.log_softmax(dim=-1).gather(-1, tgt[..., None]).squeeze(-1)
    loss = -(logp * (tgt != model.config.pad_id)).sum() / tgt.shape[0]
    optimizer.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return loss.item(), norm.item()


@mistake("exact_match", "count_not_fraction",
         "this is the number of sequences that match, not the fraction: divide by the number of sequences "
         "(a score between 0 and 1).")
def exact_match(model, src, tgt, bos_id, eos_id, max_len):  # noqa: F811
    was_training = model.training
    model.eval()
    pred = _decoded(model, src, bos_id, eos_id, max_len)
    model.train(was_training)
    pad = model.config.pad_id
    pred = _padded(pred, tgt.shape[1], pad)
    real = tgt != pad
    return float(((pred == tgt) | ~real).all(dim=1).sum().item())


@mistake("exact_match", "any_token_counts",
         "a sequence counts as a match when any one of its tokens is right: exact match needs every target "
         "token, up to and including <eos>, to be right (.all over the positions, not .any).")
def exact_match(model, src, tgt, bos_id, eos_id, max_len):  # noqa: F811
    was_training = model.training
    model.eval()
    pred = _decoded(model, src, bos_id, eos_id, max_len)
    model.train(was_training)
    pad = model.config.pad_id
    pred = _padded(pred, tgt.shape[1], pad)
    real = tgt != pad
    return ((pred == tgt) & real).any(dim=1).float().mean().item()


def _cached_greedy_(model, src, bos_id, eos_id, steps, plain_mask=False, first_position=0, cross_normed=False):
    import torch
    pad, B = model.config.pad_id, src.shape[0]
    with torch.no_grad():
        H_enc, src_mask = model.encode(src)
        if plain_mask:
            src_mask = torch.zeros_like(src_mask)
        cross, cache = _cross_kv(model, H_enc, cross_normed), [None] * len(model.decoder)
        token = torch.full((B,), bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(B, dtype=torch.bool, device=src.device)
        out = []
        for t in range(steps):
            x = embed_at_(model, token, t + first_position)
            token = _banned_argmax(_blocks(model, x, cache, cross, src_mask), [pad, bos_id])
            token = torch.where(done, pad, token)
            out.append(token)
            done = done | (token == eos_id)
            if bool(done.all()):
                break
        return torch.stack(out, dim=1) if out else torch.zeros((B, 0), dtype=torch.long)


@mistake("greedy_decode_cached", "one_step_short",
         "the loop runs max_len - 1 times, so a row that needs all max_len tokens is cut one short. Generate "
         "up to max_len tokens: for t in range(max_len).")
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):  # noqa: F811
    return _cached_greedy_(model, src, bos_id, eos_id, max_len - 1)


@mistake("greedy_decode_cached", "source_mask_ignored",
         "cross-attention gets a mask of zeros, so the decoder reads the source pads: use the src_mask that "
         "model.encode returns (-inf at the source pads) in every decoder block.")
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):  # noqa: F811
    return _cached_greedy_(model, src, bos_id, eos_id, max_len, plain_mask=True)


@mistake("greedy_decode_cached", "positions_from_one",
         "the positions are counted from 1: <bos> is embedded at position 1 and the token fed at step t at t + 1, "
         "where the model was trained with <bos> at position 0 (model.embed puts the first token of a sequence at "
         "0). The newest token sits at position t, the number of tokens fed before it: embed_at(model, token, t), "
         "with t from 0.")
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):  # noqa: F811
    return _cached_greedy_(model, src, bos_id, eos_id, max_len, first_position=1)


@mistake("greedy_decode_cached", "cross_kv_from_normed_encoder_output",
         "cross-attention's keys and values are made from rms_norm(H_enc, norm2_gamma). That norm belongs to the "
         "decoder's side only: it normalises the queries' input, x. The encoder output H_enc has had its own final "
         "norm already and is projected as it is: K = H_enc @ W_k, V = H_enc @ W_v in every decoder block.")
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):  # noqa: F811
    return _cached_greedy_(model, src, bos_id, eos_id, max_len, cross_normed=True)
