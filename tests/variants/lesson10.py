"""Correct implementations of lesson 10's exercises that differ from the reference: every checker
must give them full marks.

Each one imports what it needs inside its body and defines its helpers there: the mutation proof
pastes a variant into a real notebook, where only its own source travels."""

ALTERNATIVES = {}


def alternative(exercise):
    def register(fn):
        ALTERNATIVES.setdefault(exercise, []).append(fn)
        return fn
    return register


# -- 10.1 load_numpy_parameters ------------------------------------------------------------------------
@alternative("load_numpy_parameters")
def load_numpy_parameters(module, params):
    """state_dict() tensors share storage with the parameters: copy into them."""
    import torch
    state = module.state_dict()
    names = {n for n, _ in module.named_parameters()}
    if names != set(params):
        raise ValueError(f"missing {sorted(names - set(params))}, unexpected {sorted(set(params) - names)}")
    for name, value in params.items():
        if tuple(state[name].shape) != value.shape:
            raise ValueError(f"{name}: the model has {tuple(state[name].shape)}, the array {value.shape}")
        state[name].copy_(torch.as_tensor(value))
    return module


@alternative("load_numpy_parameters")
def load_numpy_parameters(module, params):  # noqa: F811
    """Each array converted to its parameter's own dtype first (float32 for a float32 model, float64 for a
    float64 one, never through a fixed precision), then copied under no_grad."""
    import torch
    own = dict(module.named_parameters())
    if own.keys() != params.keys():
        raise ValueError(f"the names differ: {sorted(set(own) ^ set(params))}")
    bad = [n for n in own if tuple(own[n].shape) != tuple(params[n].shape)]
    if bad:
        raise ValueError(f"shapes differ for {bad}")
    with torch.no_grad():
        for name, p in own.items():
            p.copy_(torch.tensor(params[name], dtype=p.dtype, device=p.device))
    return module


@alternative("load_numpy_parameters")
def load_numpy_parameters(module, params):  # noqa: F811
    """load_state_dict does the copying; its errors become ValueErrors."""
    import torch
    try:
        module.load_state_dict({k: torch.from_numpy(v) for k, v in params.items()}, strict=True)
    except RuntimeError as exc:
        raise ValueError(str(exc)) from None
    return module


# -- 10.2 lr_at ------------------------------------------------------------------------------------------
@alternative("lr_at")
def lr_at(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):
    """cos^2(x / 2) = (1 + cos x) / 2; the steps after the end clamped first."""
    import math
    if step < warmup_steps:
        return peak_lr * step / warmup_steps
    into_decay = min(step, total_steps) - warmup_steps
    half_angle = math.pi / 2 * into_decay / (total_steps - warmup_steps)
    return min_lr + (peak_lr - min_lr) * math.cos(half_angle) ** 2


@alternative("lr_at")
def lr_at(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):  # noqa: F811
    """NumPy, one expression per phase, np.clip for the progress."""
    import numpy as np
    warm = peak_lr * step / warmup_steps
    progress = np.clip((step - warmup_steps) / (total_steps - warmup_steps), 0.0, 1.0)
    cosine = min_lr + (peak_lr - min_lr) * 0.5 * (1.0 + np.cos(np.pi * progress))
    return float(warm if step <= warmup_steps else cosine)


@alternative("lr_at")
def lr_at(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):  # noqa: F811
    """torch: the rate as a tensor expression, torch.where between the phases, returned as a float."""
    import math
    import torch
    s = torch.tensor(float(step), dtype=torch.float64)
    progress = torch.clamp((s - warmup_steps) / (total_steps - warmup_steps), 0.0, 1.0)
    decay = min_lr + (peak_lr - min_lr) * 0.5 * (1.0 + torch.cos(math.pi * progress))
    return float(torch.where(s <= warmup_steps, peak_lr * s / warmup_steps, decay))


# -- 10.3 make_optimizer ---------------------------------------------------------------------------------
@alternative("make_optimizer")
def make_optimizer(model, lr, weight_decay, betas):
    """Adam with decoupled weight decay is AdamW; groups built by name."""
    import torch
    named = dict(model.named_parameters())
    matrices = [n for n, p in named.items() if p.dim() > 1]
    vectors = [n for n in named if n not in matrices]
    return torch.optim.Adam([{"params": [named[n] for n in matrices], "weight_decay": weight_decay},
                             {"params": [named[n] for n in vectors], "weight_decay": 0.0}],
                            lr=lr, betas=betas, eps=1e-8, decoupled_weight_decay=True)


@alternative("make_optimizer")
def make_optimizer(model, lr, weight_decay, betas):  # noqa: F811
    """AdamW; the undecayed group first, and the decay given per group only."""
    import torch
    gains_and_biases, matrices = [], []
    for p in model.parameters():
        (matrices if len(p.shape) >= 2 else gains_and_biases).append(p)
    return torch.optim.AdamW([dict(params=gains_and_biases, weight_decay=0.0),
                              dict(params=matrices, weight_decay=weight_decay)], lr=lr, betas=tuple(betas))


# -- 10.4 torch_train_step -------------------------------------------------------------------------------
@alternative("torch_train_step")
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):
    """Clipping written out (without torch's 1e-6 guard); the loss from log_softmax and a mask."""
    import torch
    for group in optimizer.param_groups:
        group.update(lr=lr)
    tgt_in = tgt.new_full(tgt.shape, bos_id)
    tgt_in[:, 1:] = tgt[:, :-1]
    logp = torch.log_softmax(model(src, tgt_in), dim=-1)
    real = (tgt != model.config.pad_id).to(logp.dtype)
    loss = -(logp.gather(-1, tgt.unsqueeze(-1)).squeeze(-1) * real).sum() / real.sum()
    model.zero_grad()
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    norm = torch.sqrt(sum((g * g).sum() for g in grads))
    if norm > max_norm:
        for g in grads:
            g.mul_(max_norm / norm)
    optimizer.step()
    return loss.detach(), norm


@alternative("torch_train_step")
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):  # noqa: F811
    """F.cross_entropy over (B, V, m), clip_grad_norm_ on the optimizer's own parameters."""
    import torch
    import torch.nn.functional as F
    tgt_in = torch.cat([torch.full_like(tgt[:, :1], bos_id), tgt[:, :-1]], dim=1)
    loss = F.cross_entropy(model(src, tgt_in).transpose(1, 2), tgt, ignore_index=model.config.pad_id)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    params = [p for group in optimizer.param_groups for p in group["params"]]
    norm = torch.nn.utils.clip_grad_norm_(params, max_norm=max_norm)
    for group in optimizer.param_groups:
        group["lr"] = lr
    optimizer.step()
    return loss.item(), norm.item()


# -- 10.5 exact_match ------------------------------------------------------------------------------------
@alternative("exact_match")
def exact_match(model, src, tgt, bos_id, eos_id, max_len):
    """Row by row in Python: the target up to its <eos>, against as many predicted tokens."""
    import torch
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            pred = model.greedy_decode(src, bos_id, eos_id, max_len).tolist()
    finally:
        model.train(was_training)
    hits = 0
    for p, t in zip(pred, tgt.tolist()):
        answer = t[: t.index(eos_id) + 1] if eos_id in t else [x for x in t if x != model.config.pad_id]
        hits += p[: len(answer)] == answer
    return hits / len(pred)


@alternative("exact_match")
def exact_match(model, src, tgt, bos_id, eos_id, max_len):  # noqa: F811
    """Both padded to one width with pads, whole rows compared (the prediction is padded after <eos>)."""
    import torch
    import torch.nn.functional as F
    mode = model.training
    model.train(False)
    with torch.no_grad():
        pred = model.greedy_decode(src, bos_id, eos_id, max_len)
    model.train(mode)
    pad, width = model.config.pad_id, max(pred.shape[1], tgt.shape[1])
    same = F.pad(pred, (0, width - pred.shape[1]), value=pad) == F.pad(tgt, (0, width - tgt.shape[1]), value=pad)
    return same.all(dim=1).float().mean().item()


@alternative("exact_match")
def exact_match(model, src, tgt, bos_id, eos_id, max_len):  # noqa: F811
    """Only model.greedy_decode, which runs in eval mode under no_grad and restores the mode itself."""
    import torch
    pred = model.greedy_decode(src, bos_id, eos_id, max_len)
    width = max(pred.shape[1], tgt.shape[1])
    pad = model.config.pad_id
    grow = lambda t: torch.cat([t, t.new_full((t.shape[0], width - t.shape[1]), pad)], dim=1)  # noqa: E731
    return (grow(pred) == grow(tgt)).all(dim=1).double().mean().item()


# -- 10.6 greedy_decode_cached ---------------------------------------------------------------------------
@alternative("greedy_decode_cached")
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):
    """Preallocated cache buffers filled in place; F.scaled_dot_product_attention; positions from the
    NumPy sinusoid table computed once; einsum projections."""
    import math

    import torch
    import torch.nn.functional as F
    from encdec import sinusoidal_positions

    def norm(x, gamma):
        return F.rms_norm(x, gamma.shape, gamma, cfg.eps)

    def heads(x):  # (B, T, d) -> (B, h, T, d_k)
        return x.unflatten(-1, (h, -1)).transpose(1, 2)

    cfg = model.config
    h, B, dtype = cfg.n_heads, src.shape[0], model.embedding.dtype
    pe = torch.from_numpy(sinusoidal_positions(max_len, cfg.d_model)).to(dtype)  # (max_len, d)
    with torch.no_grad():
        H_enc, src_mask = model.encode(src)
        cross = [(heads(torch.einsum("bnd,de->bne", H_enc, b.cross_attn.W_k)),
                  heads(torch.einsum("bnd,de->bne", H_enc, b.cross_attn.W_v))) for b in model.decoder]
        K = torch.zeros(len(model.decoder), B, h, max_len, cfg.d_model // h, dtype=dtype)
        V = torch.zeros_like(K)
        out = torch.full((B, max_len), cfg.pad_id, dtype=torch.long)
        token = torch.full((B,), bos_id, dtype=torch.long)
        done = torch.zeros(B, dtype=torch.bool)
        for t in range(max_len):
            x = (model.embedding[token] * math.sqrt(cfg.d_model) + pe[t])[:, None]  # (B, 1, d)
            for i, b in enumerate(model.decoder):
                a = norm(x, b.norm1_gamma)
                K[i, :, :, t:t + 1], V[i, :, :, t:t + 1] = heads(a @ b.self_attn.W_k), heads(a @ b.self_attn.W_v)
                att = F.scaled_dot_product_attention(heads(a @ b.self_attn.W_q), K[i, :, :, :t + 1], V[i, :, :, :t + 1])
                x = x + att.transpose(1, 2).flatten(-2) @ b.self_attn.W_o
                a = norm(x, b.norm2_gamma)
                att = F.scaled_dot_product_attention(heads(a @ b.cross_attn.W_q), *cross[i], attn_mask=src_mask)
                x = x + att.transpose(1, 2).flatten(-2) @ b.cross_attn.W_o
                x = x + b.ffn(norm(x, b.norm3_gamma))
            logits = norm(x[:, 0], model.decoder_norm_gamma) @ model.embedding.T
            logits[:, [cfg.pad_id, bos_id]] = -math.inf
            token = logits.argmax(-1).masked_fill(done, cfg.pad_id)
            out[:, t] = token
            done |= token == eos_id
            if done.all():
                return out[:, :t + 1]
        return out


@alternative("greedy_decode_cached")
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):  # noqa: F811
    """A small cache class per block; only the unfinished rows are fed at each step."""
    import math

    import torch
    from encdec import sinusoidal_positions

    class BlockCache:
        def __init__(self):
            self.K = self.V = None

        def extend(self, K, V):
            self.K = K if self.K is None else torch.cat([self.K, K], dim=-2)
            self.V = V if self.V is None else torch.cat([self.V, V], dim=-2)
            return self.K, self.V

    def rms(x, gamma):
        return x / torch.sqrt((x * x).mean(-1, keepdim=True) + cfg.eps) * gamma

    def split(x):
        return x.view(*x.shape[:-1], h, d_k).transpose(-2, -3)

    def attention(q, k, v, mask=None):
        s = q @ k.transpose(-1, -2) / math.sqrt(d_k) + (0 if mask is None else mask)
        return torch.softmax(s, -1) @ v

    cfg = model.config
    h, d_k, pad = cfg.n_heads, cfg.d_model // cfg.n_heads, cfg.pad_id
    with torch.no_grad():
        H_enc, src_mask = model.encode(src)
        cross = [(split(H_enc @ b.cross_attn.W_k), split(H_enc @ b.cross_attn.W_v)) for b in model.decoder]
        caches = [BlockCache() for _ in model.decoder]
        rows = torch.arange(src.shape[0])  # the rows still generating
        token = torch.full((src.shape[0],), bos_id, dtype=torch.long)
        steps = []
        for t in range(max_len):
            pos = torch.from_numpy(sinusoidal_positions(t + 1, cfg.d_model)[t]).to(H_enc.dtype)
            x = (model.embedding[token[rows]] * math.sqrt(cfg.d_model) + pos)[:, None]
            for i, b in enumerate(model.decoder):
                a = rms(x, b.norm1_gamma)
                K, V = caches[i].extend(split(a @ b.self_attn.W_k), split(a @ b.self_attn.W_v))
                o = attention(split(a @ b.self_attn.W_q), K, V)
                x = x + o.transpose(-2, -3).reshape(len(rows), 1, -1) @ b.self_attn.W_o
                a = rms(x, b.norm2_gamma)
                o = attention(split(a @ b.cross_attn.W_q), cross[i][0][rows], cross[i][1][rows], src_mask[rows])
                x = x + o.transpose(-2, -3).reshape(len(rows), 1, -1) @ b.cross_attn.W_o
                x = x + b.ffn(rms(x, b.norm3_gamma))
            logits = rms(x[:, 0], model.decoder_norm_gamma) @ model.embedding.T
            logits[:, pad] = logits[:, bos_id] = -math.inf
            step = torch.full((src.shape[0],), pad, dtype=torch.long)
            step[rows] = logits.argmax(-1)
            steps.append(step)
            token = step
            keep = step[rows] != eos_id
            rows = rows[keep]
            if len(rows) == 0:
                break
            for c in caches:
                c.K, c.V = c.K[keep], c.V[keep]
        return torch.stack(steps, dim=1)
