"""Lesson 10: the model in PyTorch. Multi-head attention and the decoder block (torch methods),
the weight transfer from NumPy, one torch training step.

Written with tensor methods only (x.softmax, x.transpose, ...), and `import torch` inside the few
functions that need the module itself: every grading kernel imports all the catalogs at start-up,
and only this lesson should pay for importing torch. Helpers that stand in for given code carry a
trailing underscore (`rms_norm_`), so that pasting a mistake into a notebook never replaces the
student's own function of the plain name.
"""

import math

from . import mistake


def rms_norm_(x, gamma, eps=1e-6):
    """The lesson's given RMSNorm, for tensors: x / sqrt(mean(x^2) + eps) * gamma."""
    return x * (x.pow(2).mean(dim=-1, keepdim=True) + eps).rsqrt() * gamma


def _split(x, n_heads):
    """(..., T, d_model) -> (..., h, T, d_k)."""
    *lead, T, d = x.shape
    return x.reshape(*lead, T, n_heads, d // n_heads).transpose(-2, -3)


def _merge(x):
    """(..., h, T, d_k) -> (..., T, h * d_k)."""
    x = x.transpose(-2, -3)
    return x.reshape(*x.shape[:-2], x.shape[-2] * x.shape[-1])


# -- Exercise 10.1 TorchMultiHeadAttention.forward ------------------------------------------------------------
@mistake("TorchMultiHeadAttention", "reshape_without_transpose",
         "the heads are split with a reshape alone, x.reshape(..., h, T, d_k), which cuts the flat "
         "(T * d_model) numbers of each sequence into h blocks: a head then holds slices of several "
         "positions. Reshape to (..., T, h, d_k) first, then swap the two middle axes with "
         ".transpose(-2, -3) to get (..., h, T, d_k).")
def forward(self, query_input, key_value_input=None, mask=None):
    kv = query_input if key_value_input is None else key_value_input
    h, d_k = self.n_heads, self.d_k

    def split(x):
        *lead, T, _ = x.shape
        return x.reshape(*lead, h, T, d_k)

    Q, K, V = split(query_input @ self.W_q), split(kv @ self.W_k), split(kv @ self.W_v)
    scores = Q @ K.transpose(-1, -2) / math.sqrt(d_k)
    if mask is not None:
        scores = scores + mask
    weights = scores.softmax(dim=-1)
    return _merge(weights @ V) @ self.W_o, weights


@mistake("TorchMultiHeadAttention", "no_scaling",
         "the scores are not divided by sqrt(d_k). Q K^T grows with the head width d_k, and unscaled "
         "scores push the softmax towards one-hot weights: scores = Q @ K.transpose(-1, -2) / math.sqrt(d_k).")
def forward(self, query_input, key_value_input=None, mask=None):  # noqa: F811
    kv = query_input if key_value_input is None else key_value_input
    Q, K, V = (_split(t, self.n_heads) for t in (query_input @ self.W_q, kv @ self.W_k, kv @ self.W_v))
    scores = Q @ K.transpose(-1, -2)
    if mask is not None:
        scores = scores + mask
    weights = scores.softmax(dim=-1)
    return _merge(weights @ V) @ self.W_o, weights


@mistake("TorchMultiHeadAttention", "softmax_over_queries",
         "the softmax runs over dim=-2, the queries. Each query's weights over the keys must sum to 1: "
         "softmax over the last dimension, scores.softmax(dim=-1).")
def forward(self, query_input, key_value_input=None, mask=None):  # noqa: F811
    kv = query_input if key_value_input is None else key_value_input
    Q, K, V = (_split(t, self.n_heads) for t in (query_input @ self.W_q, kv @ self.W_k, kv @ self.W_v))
    scores = Q @ K.transpose(-1, -2) / math.sqrt(self.d_k)
    if mask is not None:
        scores = scores + mask
    weights = scores.softmax(dim=-2)
    return _merge(weights @ V) @ self.W_o, weights


@mistake("TorchMultiHeadAttention", "transpose_last_two_of_everything",
         "K.T on a tensor of more than two dimensions reverses all its axes (and is deprecated for "
         "that reason), so batched keys come out in the wrong order. Swap only the last two: "
         "K.transpose(-1, -2), or K.mT.")
def forward(self, query_input, key_value_input=None, mask=None):  # noqa: F811
    kv = query_input if key_value_input is None else key_value_input
    Q, K, V = (_split(t, self.n_heads) for t in (query_input @ self.W_q, kv @ self.W_k, kv @ self.W_v))
    K_t = K.permute(*reversed(range(K.dim())))
    scores = Q @ K_t / math.sqrt(self.d_k)
    if mask is not None:
        scores = scores + mask
    weights = scores.softmax(dim=-1)
    return _merge(weights @ V) @ self.W_o, weights


@mistake("TorchMultiHeadAttention", "mask_ignored",
         "the mask is never applied, so queries see future or padded keys. Add it to the scores "
         "before the softmax: scores = scores + mask (it holds 0 where visible and -inf where hidden).")
def forward(self, query_input, key_value_input=None, mask=None):  # noqa: F811
    kv = query_input if key_value_input is None else key_value_input
    Q, K, V = (_split(t, self.n_heads) for t in (query_input @ self.W_q, kv @ self.W_k, kv @ self.W_v))
    weights = (Q @ K.transpose(-1, -2) / math.sqrt(self.d_k)).softmax(dim=-1)
    return _merge(weights @ V) @ self.W_o, weights


@mistake("TorchMultiHeadAttention", "key_value_input_ignored",
         "keys and values are always computed from query_input, so cross-attention attends over the "
         "decoder's own positions instead of the encoder output. Use key_value_input for K and V when "
         "it is given (self-attention is the case key_value_input is None).")
def forward(self, query_input, key_value_input=None, mask=None):  # noqa: F811
    x = query_input
    Q, K, V = (_split(t, self.n_heads) for t in (x @ self.W_q, x @ self.W_k, x @ self.W_v))
    scores = Q @ K.transpose(-1, -2) / math.sqrt(self.d_k)
    if mask is not None:
        scores = scores + mask
    weights = scores.softmax(dim=-1)
    return _merge(weights @ V) @ self.W_o, weights


@mistake("TorchMultiHeadAttention", "no_output_projection",
         "the merged heads are returned without the output projection. Multi-head attention ends "
         "with W_o: return merge_heads(weights @ V) @ self.W_o.")
def forward(self, query_input, key_value_input=None, mask=None):  # noqa: F811
    kv = query_input if key_value_input is None else key_value_input
    Q, K, V = (_split(t, self.n_heads) for t in (query_input @ self.W_q, kv @ self.W_k, kv @ self.W_v))
    scores = Q @ K.transpose(-1, -2) / math.sqrt(self.d_k)
    if mask is not None:
        scores = scores + mask
    weights = scores.softmax(dim=-1)
    return _merge(weights @ V), weights


# -- Exercise 10.2 TorchDecoderBlock.forward ----------------------------------------------------------------
@mistake("TorchDecoderBlock", "post_norm",
         "this is the post-norm block of 2017: x = rms_norm(x + sublayer(x)). The course's block is "
         "pre-norm: each sublayer reads a normalised copy, x = x + sublayer(rms_norm(x, gamma)), and x "
         "itself is never normalised inside the block.")
def forward(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):
    x = rms_norm_(x + self.self_attn(x, mask=self_attn_mask)[0], self.norm1_gamma)
    out, weights = self.cross_attn(x, encoder_output, mask=cross_attn_mask)
    x = rms_norm_(x + out, self.norm2_gamma)
    return rms_norm_(x + self.ffn(x), self.norm3_gamma), weights


@mistake("TorchDecoderBlock", "cross_before_self",
         "cross-attention runs before self-attention. A decoder position first gathers what the "
         "target so far says (causal self-attention), then looks up the source with that query "
         "(cross-attention), then the feed-forward network: self -> cross -> FFN.")
def forward(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    out, weights = self.cross_attn(rms_norm_(x, self.norm2_gamma), encoder_output, mask=cross_attn_mask)
    x = x + out
    x = x + self.self_attn(rms_norm_(x, self.norm1_gamma), mask=self_attn_mask)[0]
    return x + self.ffn(rms_norm_(x, self.norm3_gamma)), weights


@mistake("TorchDecoderBlock", "keys_from_decoder",
         "cross-attention reads its keys and values from the decoder states. They come from the "
         "encoder output: self.cross_attn(rms_norm(x, self.norm2_gamma), encoder_output, mask=cross_attn_mask).")
def forward(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    x = x + self.self_attn(rms_norm_(x, self.norm1_gamma), mask=self_attn_mask)[0]
    h = rms_norm_(x, self.norm2_gamma)
    out, weights = self.cross_attn(h, h)
    x = x + out
    return x + self.ffn(rms_norm_(x, self.norm3_gamma)), weights


@mistake("TorchDecoderBlock", "masks_swapped",
         "the two masks are swapped: self-attention got the source padding mask (so every position "
         "sees the future) and cross-attention the causal mask. self_attn_mask goes to self-attention, "
         "cross_attn_mask to cross-attention.")
def forward(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    x = x + self.self_attn(rms_norm_(x, self.norm1_gamma), mask=cross_attn_mask)[0]
    out, weights = self.cross_attn(rms_norm_(x, self.norm2_gamma), encoder_output, mask=self_attn_mask)
    x = x + out
    return x + self.ffn(rms_norm_(x, self.norm3_gamma)), weights


@mistake("TorchDecoderBlock", "one_norm_for_all",
         "every sublayer is normalised with norm1_gamma. Each sublayer has its own [LEARNED] gain: "
         "norm1_gamma before self-attention, norm2_gamma before cross-attention, norm3_gamma before the FFN.")
def forward(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    x = x + self.self_attn(rms_norm_(x, self.norm1_gamma), mask=self_attn_mask)[0]
    out, weights = self.cross_attn(rms_norm_(x, self.norm1_gamma), encoder_output, mask=cross_attn_mask)
    x = x + out
    return x + self.ffn(rms_norm_(x, self.norm1_gamma)), weights


@mistake("TorchDecoderBlock", "self_attention_weights_returned",
         "the block returns the self-attention weights (m x m). It must return the cross-attention "
         "weights (..., h, m, n), the alignment between target and source positions.")
def forward(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    out, weights = self.self_attn(rms_norm_(x, self.norm1_gamma), mask=self_attn_mask)
    x = x + out
    x = x + self.cross_attn(rms_norm_(x, self.norm2_gamma), encoder_output, mask=cross_attn_mask)[0]
    return x + self.ffn(rms_norm_(x, self.norm3_gamma)), weights


# -- Exercise 10.3 load_numpy_parameters -------------------------------------------------------------------
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


# -- Exercise 10.4 torch_train_step -------------------------------------------------------------------------------
def _loss(logits, targets, pad_id):
    """Mean cross-entropy over the non-pad target positions (what F.cross_entropy(ignore_index=pad) gives)."""
    logp = logits.log_softmax(dim=-1).gather(-1, targets[..., None]).squeeze(-1)  # (B, m)
    keep = targets != pad_id
    return -(logp * keep).sum() / keep.sum()


def _shift_right(targets, bos_id):
    tgt_in = targets.roll(1, dims=-1)
    tgt_in[..., 0] = bos_id
    return tgt_in


@mistake("torch_train_step", "no_shift",
         "the decoder reads the targets themselves, so position t sees the very token it must "
         "predict and learns to copy it. Teacher forcing feeds the targets shifted right: <bos> "
         "first, the last token dropped (tgt_in = shift_right(tgt)).")
def torch_train_step(model, optimizer, src, tgt, bos_id):
    loss = _loss(model(src, tgt), tgt, model.config.pad_id)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


@mistake("torch_train_step", "pads_counted",
         "the loss counts the pad positions as if they were tokens to predict. Average over the real "
         "target tokens only: F.cross_entropy(..., ignore_index=pad_id), or mask the pads out and "
         "divide by their number.")
def torch_train_step(model, optimizer, src, tgt, bos_id):  # noqa: F811
    logits = model(src, _shift_right(tgt, bos_id))
    loss = -logits.log_softmax(dim=-1).gather(-1, tgt[..., None]).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


@mistake("torch_train_step", "no_zero_grad",
         "the gradients are never zeroed: torch adds each backward pass's gradients to what .grad "
         "already holds, so the second step also applies the first step's gradient. Call "
         "optimizer.zero_grad() before loss.backward().")
def torch_train_step(model, optimizer, src, tgt, bos_id):  # noqa: F811
    loss = _loss(model(src, _shift_right(tgt, bos_id)), tgt, model.config.pad_id)
    loss.backward()
    optimizer.step()
    return loss.item()


@mistake("torch_train_step", "zero_grad_after_backward",
         "optimizer.zero_grad() runs between loss.backward() and optimizer.step(), so it wipes the "
         "gradients just computed and the step changes nothing. The order is zero_grad, backward, step.")
def torch_train_step(model, optimizer, src, tgt, bos_id):  # noqa: F811
    loss = _loss(model(src, _shift_right(tgt, bos_id)), tgt, model.config.pad_id)
    loss.backward()
    optimizer.zero_grad()
    optimizer.step()
    return loss.item()


@mistake("torch_train_step", "summed_loss",
         "the loss is the sum over the target tokens, not their mean, so the gradient (and the size "
         "of every step) grows with the batch. Divide by the number of non-pad target tokens "
         "(F.cross_entropy's default reduction='mean' with ignore_index does it).")
def torch_train_step(model, optimizer, src, tgt, bos_id):  # noqa: F811
    logits = model(src, _shift_right(tgt, bos_id))
    keep = tgt != model.config.pad_id
    loss = -(logits.log_softmax(dim=-1).gather(-1, tgt[..., None]).squeeze(-1) * keep).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()
