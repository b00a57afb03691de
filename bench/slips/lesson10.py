"""Slips in Lesson 10 (PyTorch): loading NumPy weights, the cosine schedule, AdamW's groups, the training step,
exact match, cached greedy decoding.

torch is imported inside each slip, as in a notebook cell that imports what it uses; the helpers of
Exercise 10.6 are those the lesson gives (rms_norm, attend, embed_at, split_heads, merge_heads)."""

import math

import numpy as np

from . import slip


def _torch():
    import torch
    import torch.nn.functional as F
    return torch, F


# -- 10.1 load_numpy_parameters --------------------------------------------------------------------------------
def _checked(module, params):
    own = dict(module.named_parameters())
    missing, extra = sorted(set(own) - set(params)), sorted(set(params) - set(own))
    if missing or extra:
        raise ValueError(f"parameter names differ: missing {missing}, unexpected {extra}")
    for name, p in own.items():
        if tuple(p.shape) != np.shape(params[name]):
            raise ValueError(f"{name}: torch shape {tuple(p.shape)} vs NumPy shape {np.shape(params[name])}")
    return own


@slip("load_numpy_parameters", "data_replaced", "sets p.data = torch.from_numpy(value): the float32 model turns "
      "float64 and shares memory with the arrays", expect=("in place", "copy_", "dtype", "share", "memory"))
def load_numpy_parameters(module, params):
    torch, _ = _torch()
    for name, p in _checked(module, params).items():
        p.data = torch.from_numpy(params[name])
    return module


@slip("load_numpy_parameters", "no_checks", "copies the arrays whose names it finds, and never checks names or shapes",
      expect=("ValueError", "refuse", "check", "names", "mismatch"))
def load_numpy_parameters(module, params):  # noqa: F811
    torch, _ = _torch()
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name in params:
                p.copy_(torch.from_numpy(np.asarray(params[name])))
    return module


@slip("load_numpy_parameters", "through_float32", "converts every array to float32 first, so a float64 model "
      "gets rounded values", expect=("float32", "dtype", "round"))
def load_numpy_parameters(module, params):  # noqa: F811
    torch, _ = _torch()
    with torch.no_grad():
        for name, p in _checked(module, params).items():
            p.copy_(torch.tensor(params[name], dtype=torch.float32))
    return module


@slip("load_numpy_parameters", "without_no_grad", "copies in place without torch.no_grad(): torch refuses it",
      expect=("no_grad",), preserves_shape=False)
def load_numpy_parameters(module, params):  # noqa: F811
    torch, _ = _torch()
    for name, p in _checked(module, params).items():
        p.copy_(torch.from_numpy(params[name]))
    return module


# -- 10.2 lr_at ---------------------------------------------------------------------------------------------------
@slip("lr_at", "warmup_from_0", "warms up with (step - 1) / warmup_steps, so step 1 has rate 0",
      expect=("warm-up", "warmup", "step 1", "off by one"))
def lr_at(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):
    if step <= warmup_steps:
        return peak_lr * (step - 1) / warmup_steps
    progress = min((step - warmup_steps) / (total_steps - warmup_steps), 1.0)
    return min_lr + (peak_lr - min_lr) * (1.0 + math.cos(math.pi * progress)) / 2


@slip("lr_at", "progress_not_clamped", "does not clamp the progress at 1: after total_steps the rate rises again",
      expect=("total_steps", "clamp", "after", "min_lr"))
def lr_at(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):  # noqa: F811
    if step <= warmup_steps:
        return peak_lr * step / warmup_steps
    progress = (step - warmup_steps) / (total_steps - warmup_steps)
    return min_lr + (peak_lr - min_lr) * (1.0 + math.cos(math.pi * progress)) / 2


@slip("lr_at", "min_lr_ignored", "decays to 0: peak_lr * (1 + cos(pi p)) / 2, min_lr unused",
      expect=("min_lr",))
def lr_at(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):  # noqa: F811
    if step <= warmup_steps:
        return peak_lr * step / warmup_steps
    progress = min((step - warmup_steps) / (total_steps - warmup_steps), 1.0)
    return peak_lr * (1.0 + math.cos(math.pi * progress)) / 2


@slip("lr_at", "cos_without_half", "writes min_lr + (peak_lr - min_lr) * cos(pi p), without (1 + cos) / 2",
      expect=("1 + cos", "half", "/ 2", "negative"))
def lr_at(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):  # noqa: F811
    if step <= warmup_steps:
        return peak_lr * step / warmup_steps
    progress = min((step - warmup_steps) / (total_steps - warmup_steps), 1.0)
    return min_lr + (peak_lr - min_lr) * math.cos(math.pi * progress)


@slip("lr_at", "progress_from_step_0", "measures the decay's progress as step / total_steps, ignoring the warm-up",
      expect=("warmup_steps", "warm-up", "progress", "decay start"))
def lr_at(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):  # noqa: F811
    if step <= warmup_steps:
        return peak_lr * step / warmup_steps
    progress = min(step / total_steps, 1.0)
    return min_lr + (peak_lr - min_lr) * (1.0 + math.cos(math.pi * progress)) / 2


# -- 10.3 make_optimizer -------------------------------------------------------------------------------------------
@slip("make_optimizer", "decay_everything", "one group: weight decay on every parameter, gains and biases included",
      expect=("gain", "bias", "ndim", "every parameter", "1-d"))
def make_optimizer(model, lr, weight_decay, betas):
    torch, _ = _torch()
    return torch.optim.AdamW(model.parameters(), lr=lr, betas=betas, weight_decay=weight_decay)


@slip("make_optimizer", "groups_swapped", "decays the gains and biases (ndim < 2) and not the matrices",
      expect=("ndim", "gain", "bias", "matri", "swap"))
def make_optimizer(model, lr, weight_decay, betas):  # noqa: F811
    torch, _ = _torch()
    params = list(model.parameters())
    return torch.optim.AdamW([{"params": [p for p in params if p.ndim < 2], "weight_decay": weight_decay},
                              {"params": [p for p in params if p.ndim >= 2], "weight_decay": 0.0}], lr=lr, betas=betas)


@slip("make_optimizer", "adam_with_l2", "uses torch.optim.Adam with weight_decay (an L2 term in the gradient), "
      "not AdamW", expect=("adamw", "decoupled", "l2"))
def make_optimizer(model, lr, weight_decay, betas):  # noqa: F811
    torch, _ = _torch()
    params = list(model.parameters())
    return torch.optim.Adam([{"params": [p for p in params if p.ndim >= 2], "weight_decay": weight_decay},
                             {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}], lr=lr, betas=betas)


@slip("make_optimizer", "betas_dropped", "does not pass betas on, so AdamW uses its defaults",
      expect=("betas",))
def make_optimizer(model, lr, weight_decay, betas):  # noqa: F811
    torch, _ = _torch()
    params = list(model.parameters())
    return torch.optim.AdamW([{"params": [p for p in params if p.ndim >= 2], "weight_decay": weight_decay},
                              {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}], lr=lr)


@slip("make_optimizer", "embedding_not_decayed", "leaves the embedding out of the decayed group (decays only the "
      "block matrices)", expect=("embedding",))
def make_optimizer(model, lr, weight_decay, betas):  # noqa: F811
    torch, _ = _torch()
    named = list(model.named_parameters())
    decayed = [p for n, p in named if p.ndim >= 2 and "embedding" not in n]
    other = [p for n, p in named if not (p.ndim >= 2 and "embedding" not in n)]
    return torch.optim.AdamW([{"params": decayed, "weight_decay": weight_decay},
                              {"params": other, "weight_decay": 0.0}], lr=lr, betas=betas)


# -- 10.4 torch_train_step --------------------------------------------------------------------------------------------
def _train(model, optimizer, src, tgt, bos_id, lr, max_norm, *, zero=True, clip_first=True, ignore_pad=True,
           every_group=True, norm_after=False, shift=True):
    torch, F = _torch()
    for group in (optimizer.param_groups if every_group else optimizer.param_groups[:1]):
        group["lr"] = lr
    tgt_in = torch.cat([torch.full_like(tgt[:, :1], bos_id), tgt[:, :-1]], dim=1) if shift else tgt
    logits = model(src, tgt_in)
    if ignore_pad:
        loss = F.cross_entropy(logits.flatten(0, 1), tgt.flatten(), ignore_index=model.config.pad_id)
    else:
        loss = F.cross_entropy(logits.flatten(0, 1), tgt.flatten())
    if zero:
        optimizer.zero_grad()
    loss.backward()
    if clip_first:
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        optimizer.step()
    else:
        optimizer.step()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    if norm_after:
        norm = torch.sqrt(sum((p.grad.detach() ** 2).sum() for p in model.parameters() if p.grad is not None))
    return loss.item(), norm.item()


@slip("torch_train_step", "no_zero_grad", "never calls optimizer.zero_grad(): the second step adds to the first "
      "step's gradients", expect=("zero_grad", "accumulat", "adds"))
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):
    return _train(model, optimizer, src, tgt, bos_id, lr, max_norm, zero=False)


@slip("torch_train_step", "clip_after_step", "clips the gradients after optimizer.step(), so the step is not clipped",
      expect=("clip",))
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):  # noqa: F811
    return _train(model, optimizer, src, tgt, bos_id, lr, max_norm, clip_first=False)


@slip("torch_train_step", "pads_in_loss", "leaves out ignore_index: the pads count in the loss",
      expect=("pad", "ignore_index"))
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):  # noqa: F811
    return _train(model, optimizer, src, tgt, bos_id, lr, max_norm, ignore_pad=False)


@slip("torch_train_step", "lr_first_group_only", "sets this step's lr in the first parameter group only",
      expect=("group",))
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):  # noqa: F811
    return _train(model, optimizer, src, tgt, bos_id, lr, max_norm, every_group=False)


@slip("torch_train_step", "norm_after_clipping", "returns the gradient norm measured again after clipping",
      expect=("before clipping", "clip"))
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):  # noqa: F811
    return _train(model, optimizer, src, tgt, bos_id, lr, max_norm, norm_after=True)


@slip("torch_train_step", "no_shift", "feeds the targets themselves to the decoder, not shifted right behind <bos>",
      expect=("shift",))
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):  # noqa: F811
    return _train(model, optimizer, src, tgt, bos_id, lr, max_norm, shift=False)


# -- 10.5 exact_match ------------------------------------------------------------------------------------------------
def _match(model, src, tgt, bos_id, eos_id, max_len, *, to_eval=True, restore=True, no_grad=True, compare="exact",
           always_train=False):
    torch, F = _torch()
    was_training = model.training
    if to_eval:
        model.eval()
    with (torch.no_grad() if no_grad else torch.enable_grad()):
        pred = model.greedy_decode(src, bos_id, eos_id, max_len)
    if always_train:
        model.train()
    elif restore:
        model.train(was_training)
    pad = model.config.pad_id
    if compare == "overlap":
        L = min(pred.shape[1], tgt.shape[1])
        return (pred[:, :L] == tgt[:, :L]).all(dim=1).double().mean().item()
    width = max(pred.shape[1], tgt.shape[1])
    pred = F.pad(pred, (0, width - pred.shape[1]), value=pad)
    tgt = F.pad(tgt, (0, width - tgt.shape[1]), value=pad)
    if compare == "tokens":
        return (pred == tgt).double().mean().item()
    return (pred == tgt).all(dim=1).double().mean().item()


@slip("exact_match", "compares_the_overlap", "compares only the first min(L, m) columns, so a prediction cut short "
      "by max_len counts as a match", expect=("prefix", "cut", "max_len", "every token", "width", "shorter"))
def exact_match(model, src, tgt, bos_id, eos_id, max_len):
    return _match(model, src, tgt, bos_id, eos_id, max_len, compare="overlap")


@slip("exact_match", "mode_not_restored", "switches to eval mode and leaves the model there",
      expect=("restore", "mode", "afterwards", "training mode"))
def exact_match(model, src, tgt, bos_id, eos_id, max_len):  # noqa: F811
    return _match(model, src, tgt, bos_id, eos_id, max_len, restore=False)


@slip("exact_match", "token_accuracy", "returns the fraction of matching tokens, not of matching sequences",
      expect=("exact", "every token", "whole", "token accuracy", "sequence"))
def exact_match(model, src, tgt, bos_id, eos_id, max_len):  # noqa: F811
    return _match(model, src, tgt, bos_id, eos_id, max_len, compare="tokens")


@slip("exact_match", "always_back_to_train", "calls model.train() at the end, whatever mode the model was in",
      expect=("restore", "mode", "was_training", "eval mode"))
def exact_match(model, src, tgt, bos_id, eos_id, max_len):  # noqa: F811
    return _match(model, src, tgt, bos_id, eos_id, max_len, always_train=True)


# -- 10.6 greedy_decode_cached ----------------------------------------------------------------------------------------
def rms_norm(x, gamma, eps=1e-6):
    """RMSNorm over the last axis, for tensors (the lesson's helper)."""
    torch, _ = _torch()
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * gamma


def attend(Q, K, V, mask=None):
    """softmax(Q K^T / sqrt(d_k) + mask) V for every head (the lesson's helper)."""
    scores = Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores + mask
    return scores.softmax(dim=-1) @ V


def embed_at(model, tokens, position):
    """One token per sequence embedded at one position (the lesson's helper)."""
    torch, F = _torch()
    from encdec import sinusoidal_positions
    d = model.config.d_model
    x = F.embedding(tokens[:, None], model.embedding) * math.sqrt(d)
    pe = torch.from_numpy(sinusoidal_positions(position + 1, d)[position])
    return x + pe.to(device=x.device, dtype=x.dtype)


def _cached(model, src, bos_id, eos_id, max_len, *, cross_once=True, extend=True, positions=True, src_mask_on=True,
            ban=True, whole_prefix=False):
    torch, _ = _torch()
    from encdec.torch_model import merge_heads, split_heads
    pad, h, eps, B = model.config.pad_id, model.config.n_heads, model.config.eps, src.shape[0]

    def cross_kv(H_enc):
        return [(split_heads(H_enc @ b.cross_attn.W_k, h), split_heads(H_enc @ b.cross_attn.W_v, h))
                for b in model.decoder]

    with torch.no_grad():
        H_enc, src_mask = model.encode(src)
        cross = cross_kv(H_enc) if cross_once else None
        cache = [None] * len(model.decoder)
        token = torch.full((B,), bos_id, dtype=torch.long, device=src.device)
        fed = [token]
        done = torch.zeros(B, dtype=torch.bool, device=src.device)
        out = []
        for t in range(max_len):
            step_cross = cross if cross_once else cross_kv(H_enc)
            if whole_prefix:  # every position again: no cache at all
                x = torch.cat([embed_at(model, tok, j) for j, tok in enumerate(fed)], dim=1)
            else:
                x = embed_at(model, token, t if positions else 0)
            for i, b in enumerate(model.decoder):
                a = rms_norm(x, b.norm1_gamma, eps)
                K, V = split_heads(a @ b.self_attn.W_k, h), split_heads(a @ b.self_attn.W_v, h)
                if extend and not whole_prefix and cache[i] is not None:
                    K, V = torch.cat([cache[i][0], K], dim=-2), torch.cat([cache[i][1], V], dim=-2)
                cache[i] = (K, V)
                causal = None
                if whole_prefix:
                    m = x.shape[1]
                    causal = torch.triu(torch.full((m, m), float("-inf"), dtype=x.dtype), diagonal=1)
                x = x + merge_heads(attend(split_heads(a @ b.self_attn.W_q, h), K, V, causal)) @ b.self_attn.W_o
                a = rms_norm(x, b.norm2_gamma, eps)
                x = x + merge_heads(attend(split_heads(a @ b.cross_attn.W_q, h), *step_cross[i],
                                           src_mask if src_mask_on else None)) @ b.cross_attn.W_o
                x = x + b.ffn(rms_norm(x, b.norm3_gamma, eps))
            logits = (rms_norm(x, model.decoder_norm_gamma, eps) @ model.embedding.T)[:, -1]
            if ban:
                logits[:, [pad, bos_id]] = float("-inf")
            token = torch.where(done, pad, logits.argmax(dim=-1))
            fed.append(token)
            out.append(token)
            done = done | (token == eos_id)
            if bool(done.all()):
                break
        return torch.stack(out, dim=1)


@slip("greedy_decode_cached", "cross_kv_every_step", "recomputes cross-attention's keys and values from H_enc at "
      "every step (right tokens, the work repeated)", expect=("once", "recomput", "every step"))
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):
    return _cached(model, src, bos_id, eos_id, max_len, cross_once=False)


@slip("greedy_decode_cached", "cache_not_extended", "keeps only the newest key and value row: the new token attends "
      "to itself alone", expect=("cache", "append", "extend", "past"), preserves_shape=False)
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):  # noqa: F811
    return _cached(model, src, bos_id, eos_id, max_len, extend=False)


@slip("greedy_decode_cached", "position_0", "embeds every new token at position 0",
      expect=("position",))
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):  # noqa: F811
    return _cached(model, src, bos_id, eos_id, max_len, positions=False)


@slip("greedy_decode_cached", "src_mask_dropped", "attends to the source without the source padding mask",
      expect=("mask", "pad"))
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):  # noqa: F811
    return _cached(model, src, bos_id, eos_id, max_len, src_mask_on=False)


@slip("greedy_decode_cached", "no_ban", "never bans <bos> and <pad>",
      expect=("ban", "bos and pad", "<bos> and <pad>", "special token"))
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):  # noqa: F811
    return _cached(model, src, bos_id, eos_id, max_len, ban=False)


@slip("greedy_decode_cached", "whole_prefix_every_step", "runs every generated position through the blocks again at "
      "each step (right tokens, no cache)", expect=("cache", "one new position", "prefix", "recomput"))
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):  # noqa: F811
    return _cached(model, src, bos_id, eos_id, max_len, whole_prefix=True)
