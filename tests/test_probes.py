"""The probes (encdec.checks.probes), proven: they never misfire on a correct answer, each kind names
the slip it was built for (also when no catalog entry lists it), the slips issue 16 names get messages
that name them, a finding is recorded like a catalog misconception, once, without costing or giving
points, and a probe never raises, never prints, and keeps a check fast."""

import contextlib
import io

import numpy as np
import pytest

from encdec.attention import cross_attention, merge_heads, softmax, split_heads
from encdec.checks import lesson01, lesson02, lesson03, lesson04, lesson05, probes
from encdec.checks.core import Attempt, Case
from encdec.checks.record import collected
from encdec.layers import gelu, rms_norm
from encdec.mistakes import CATALOG
from test_checkers import EXERCISES, variants

LESSONS_1_TO_5 = [p for p in EXERCISES if p.values[0].__name__.rsplit(".", 1)[1] <= "lesson05"]
CORRECT = [pytest.param(p.values[0], p.values[1], alt, marks=p.marks, id=f"{p.values[1].number}-{i}")
           for p in LESSONS_1_TO_5 for i, alt in enumerate(variants(p.values[0]).get(p.values[1].name, []))]


def check(checker, answer, hidden=False, **kwargs):
    """(score, printed text, misconception keys) of one check."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), collected() as records:
        score = checker(answer, hidden=hidden, **kwargs)
    keys = [m["key"] for r in records for m in r["misconceptions"]]
    return float(score), out.getvalue(), keys


@pytest.fixture
def no_catalog(monkeypatch):
    """The catalogs of the given exercises emptied: only the probes can name a slip."""
    def empty(*names):
        for name in names:
            monkeypatch.setitem(CATALOG.entries, name, [])
    return empty


# -- never a misfire ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
@pytest.mark.parametrize("module,exercise,alt", CORRECT)
def test_no_probe_fires_on_a_correct_variant_or_the_reference(module, exercise, alt, hidden):
    """Inside probes.audit() every checker runs its probes on every case it passes, on the answer's
    output and on the reference's, and checks that each declared model with no knobs is the reference."""
    answer = exercise.answer_from(alt)
    if exercise.method is None:
        alt.__globals__.update({e.name: e.reference for e in (p.values[1] for p in EXERCISES)
                                if e.name != exercise.name and e.method is None})
    with probes.audit() as found:
        score, text, keys = check(exercise.checker, answer, hidden=hidden, points=exercise.points)
    assert score == exercise.points, text
    assert found == [], found
    assert keys == []


def test_the_audit_sees_a_probe_that_would_misfire(monkeypatch):
    """The audit is not empty by construction: a property that fires on everything is reported."""
    class Always(probes.Property):
        kind = "always"

        def inspect(self, attempt, declared):
            return self.finding(attempt, "", "always")

    monkeypatch.setattr(lesson01, "SOFTMAX_PROBES", probes.Probes(lesson01.softmax_model, Always()))
    with probes.audit() as found:
        check(lesson01.check_softmax, variants(lesson01)["softmax"][0])
    assert found and all(f[3].key == "probe:always" for f in found)


def test_the_audit_sees_a_model_that_is_not_the_reference(monkeypatch):
    wrong = probes.Probes(lambda k, x, axis=-1: softmax(x, axis=axis) * 1.01)
    monkeypatch.setattr(lesson01, "SOFTMAX_PROBES", wrong)
    with probes.audit() as found:
        check(lesson01.check_softmax, variants(lesson01)["softmax"][0])
    assert found and found[0][2] == "model"


# -- the three slips issue 16 names ---------------------------------------------------------------------------
class CrossAttentionSplitByReshape:
    def __init__(self, d_model, n_heads):
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads

    def attend(self, query_input, K, V, mask=None):
        Q = query_input @ self.W_q
        *lead, m, d = Q.shape
        Q = Q.reshape(*lead, self.n_heads, m, self.d_k)  # no axis swap
        heads, weights = cross_attention(Q, K, V, mask)
        return merge_heads(heads) @ self.W_o, weights


class CrossAttentionWqTransposed(CrossAttentionSplitByReshape):
    def attend(self, query_input, K, V, mask=None):
        Q = split_heads(query_input @ self.W_q.T, self.n_heads)
        heads, weights = cross_attention(Q, K, V, mask)
        return merge_heads(heads) @ self.W_o, weights


class DecoderBlockCausalMaskToCross:
    def __init__(self, d_model, n_heads, d_ff):
        self.d_model = d_model

    def __call__(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):
        out, _ = self.self_attn(rms_norm(x, self.norm1_gamma), mask=self_attn_mask)
        x = x + out
        out, weights = self.cross_attn(rms_norm(x, self.norm2_gamma), encoder_output, mask=self_attn_mask)
        x = x + out
        return x + self.ffn(rms_norm(x, self.norm3_gamma)), weights


@pytest.mark.parametrize("catalog", [True, False], ids=["with the catalog", "probes alone"])
def test_heads_split_by_a_bare_reshape_in_cross_attention_is_named(catalog, no_catalog):
    if not catalog:
        no_catalog("CrossAttention")
    score, text, keys = check(lesson04.check_attend, CrossAttentionSplitByReshape)
    assert score < 3
    assert "the heads are split with a reshape alone" in text and "without the axis swap" in text, text
    if not catalog:
        assert keys == ["probe:heads:split_bare"]


@pytest.mark.parametrize("catalog", [True, False], ids=["with the catalog", "probes alone"])
def test_query_input_at_W_q_transposed_is_named(catalog, no_catalog):
    if not catalog:
        no_catalog("CrossAttention", "MultiHeadAttention")
    score, text, keys = check(lesson04.check_attend, CrossAttentionWqTransposed)
    assert score == 0
    assert "W_q.T" in text and "W_q is square" in text, text
    if not catalog:
        assert keys == ["probe:transposed:W_q"]
        assert "`W_q` (it makes the queries) is used transposed" in text

    class MHA(lesson02.attention.MultiHeadAttention):
        def __call__(self, query_input, key_value_input=None, mask=None):
            kv = query_input if key_value_input is None else key_value_input
            def split(x):
                *lead, T, d = x.shape
                return np.swapaxes(x.reshape(*lead, T, self.n_heads, d // self.n_heads), -2, -3)

            Q, K, V = split(query_input @ self.W_q.T), split(kv @ self.W_k), split(kv @ self.W_v)
            heads, weights = _sdpa()(Q, K, V, mask)
            heads = np.swapaxes(heads, -2, -3)
            return heads.reshape(*heads.shape[:-2], -1) @ self.W_o, weights

    score, text, keys = check(lesson02.check_multi_head_attention, MHA)
    assert score == 0 and "W_q.T" in text and "W_q is square" in text, text


@pytest.mark.parametrize("catalog", [True, False], ids=["with the catalog", "probes alone"])
def test_causal_mask_sent_to_cross_attention_in_the_decoder_block_is_named(catalog, no_catalog):
    if not catalog:
        no_catalog("DecoderBlock")
    score, text, keys = check(lesson05.check_decoder_block, DecoderBlockCausalMaskToCross, hidden=True)
    assert score == 0
    assert "the causal mask sent to the wrong sublayer" in text, text
    assert "raised ValueError" in text  # the error is still shown, with its diagnosis under it
    assert text.count("the causal mask sent to the wrong sublayer") == 1  # then "the same as above"
    assert text.lower().count("the same as above.") >= 2
    if catalog:
        assert keys == ["causal_mask_to_cross"]
    else:
        assert keys == ["probe:masks:causal_to_cross"]
        assert "cross_attn received a mask of shape (5, 5), self_attn_mask itself" in text


def test_causal_mask_sent_to_cross_attention_is_named_when_the_shapes_happen_to_fit(no_catalog):
    """m == n: no error, only values; what cross_attn received still names it."""
    no_catalog("DecoderBlock")
    block = lesson05.random_block(8, 2, 16, 7)
    r = np.random.default_rng(0)
    x, H_enc = r.normal(size=(4, 8)), r.normal(size=(4, 8))
    causal = lesson05.create_causal_mask(4)
    student = lesson05._student_block(DecoderBlockCausalMaskToCross, block)
    case = Case("m = n = 4", (x, H_enc, causal))
    got = student(*case.args)
    expected = lesson05.layers.DecoderBlock.__call__(block, *case.args)
    attempt = Attempt("DecoderBlock", case, got=got, expected=expected, student=student)
    finding = probes.find_slip(lesson05.decoder_block_probes(block), attempt)
    assert finding.key == "probe:masks:causal_to_cross"


def test_the_same_slip_in_the_post_norm_block_is_named(no_catalog):
    no_catalog("decoder_block_post_norm")

    def decoder_block_post_norm(block, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):
        out, _ = block.self_attn(x, mask=self_attn_mask)
        x = rms_norm(x + out, block.norm1_gamma)
        out, weights = block.cross_attn(x, encoder_output, self_attn_mask)
        x = rms_norm(x + out, block.norm2_gamma)
        return rms_norm(x + block.ffn(x), block.norm3_gamma), weights

    score, text, keys = check(lesson05.check_decoder_block_post_norm, decoder_block_post_norm)
    assert score == 0 and "the causal mask sent to the wrong sublayer" in text, text


# -- each kind of probe, on slips no catalog lists -----------------------------------------------------------
def _sdpa(scale_of=lambda Q, K: 1 / np.sqrt(Q.shape[-1]), post=None, axis=-1, use_mask=True, kv_swapped=False,
          mask_of=lambda mask: mask):
    def scaled_dot_product_attention(Q, K, V, mask=None):
        if kv_swapped:
            K, V = V, K
        scores = Q @ np.swapaxes(K, -1, -2) * scale_of(Q, K)
        if mask is not None and use_mask:
            scores = scores + mask_of(mask)
        weights = softmax(scores, axis=axis)
        if post is not None:
            weights = post(weights)
        return weights @ V, weights
    return scaled_dot_product_attention


@pytest.mark.parametrize("answer,key,words", [
    (_sdpa(lambda Q, K: 1 / np.sqrt(K.shape[-2])), "probe:scale:1/sqrt(n)", "divided by sqrt(n), the number of keys"),
    (_sdpa(lambda Q, K: 1 / np.sqrt(Q.shape[-2])), "probe:scale:1/sqrt(m)", "sqrt(m), the number of queries"),
    (_sdpa(lambda Q, K: 0.25 / np.sqrt(Q.shape[-1])), "probe:scale:other", "where 1/sqrt(d_k)"),
    (_sdpa(axis=-2), "probe:axis:-2", "the softmax runs over the queries (axis=-2) instead of the keys"),
    (_sdpa(use_mask=False), "probe:missing:mask", "the mask is missing"),
    (_sdpa(post=lambda w: w * np.linspace(0.5, 1.0, w.shape[-1])), "probe:weights:rows_do_not_sum_to_one",
     "do not sum to 1"),
    (_sdpa(post=lambda w: w * 0.9), "probe:weights:rows_scaled", "sums to 0.9, not 1: a factor is applied"),
    (_sdpa(post=lambda w: w / w.sum(axis=-2, keepdims=True)), "probe:weights:wrong_axis", "each column"),
    (_sdpa(mask_of=lambda mask: np.maximum(mask, -5.0)), "probe:weights:masked_key_gets_weight",
     "keys that the mask hides get weight"),
], ids=["scale-n", "scale-m", "scale-fitted", "axis", "missing-mask", "rows", "rows-scaled", "columns",
        "masked-keys"])
def test_attention_slips_are_named_by_their_kind(answer, key, words, no_catalog):
    no_catalog("scaled_dot_product_attention")
    score, text, keys = check(lesson01.check_scaled_dot_product_attention, answer)
    assert score < 4
    assert key in keys and words.lower() in text.lower(), (keys, text)


def test_inputs_swapped_are_named(no_catalog):
    no_catalog("cross_attention")
    r = np.random.default_rng(1)
    Q, K, V = r.normal(size=(3, 4)), r.normal(size=(5, 4)), r.normal(size=(5, 4))
    case = Case("d_k = d_v", (Q, K, V))
    got = _sdpa(kv_swapped=True)(*case.args)
    attempt = Attempt("cross_attention", case, got=got, expected=cross_attention(Q, K, V))
    finding = probes.find_slip(lesson01.attention_probes(), attempt)
    assert finding.key == "probe:swapped:K:V" and "`K` and `V` are swapped" in finding.diagnosis


def test_softmax_over_the_wrong_axis_and_overflow(no_catalog):
    no_catalog("softmax")

    def softmax_first_axis(x, axis=-1):
        e = np.exp(x - np.max(x, axis=0, keepdims=True))
        return e / np.sum(e, axis=0, keepdims=True)

    def softmax_overflows(x, axis=-1):
        e = np.exp(x)
        return e / np.sum(e, axis=axis, keepdims=True)

    _, text, keys = check(lesson01.check_softmax, softmax_first_axis)
    assert "probe:axis:-2" in keys and "the softmax runs over axis -2 instead of axis -1" in text, text
    _, text, keys = check(lesson01.check_softmax, softmax_overflows)
    assert keys == ["probe:exp_overflow"] and "`np.exp(x)` overflows" in text, text


def test_an_activation_other_than_the_one_asked_for_is_named(no_catalog):
    no_catalog("gelu", "FeedForward")
    _, text, keys = check(lesson02.check_gelu, lambda x: x * (0.5 + 0.5 * np.tanh(0.5 * x)))
    assert keys == ["probe:activation:silu"] and "SiLU" in text, text

    class FeedForward:
        def __init__(self, d_model, d_ff):
            pass

        def __call__(self, x):
            return np.tanh(x @ self.W1 + self.b1) @ self.W2 + self.b2

    _, text, keys = check(lesson02.check_feed_forward, FeedForward)
    assert "probe:activation:tanh" in keys, text


def test_a_missing_bias_gain_or_residual_is_named(no_catalog):
    no_catalog("FeedForward", "rms_norm", "EncoderBlock")

    class FeedForward:
        def __init__(self, d_model, d_ff):
            pass

        def __call__(self, x):
            return gelu(x @ self.W1) @ self.W2 + self.b2

    _, text, keys = check(lesson02.check_feed_forward, FeedForward)
    assert "probe:missing:b1" in keys and "the first bias b1 is missing" in text, text
    _, text, keys = check(lesson02.check_rms_norm, lambda x, gamma, eps=1e-6: x / np.sqrt(np.mean(x * x, -1, keepdims=True) + eps))
    assert "probe:missing:gamma" in keys, text

    class EncoderBlock:
        def __init__(self, d_model, n_heads, d_ff):
            pass

        def __call__(self, x, mask=None):
            x = x + self.self_attn(rms_norm(x, self.norm1_gamma), mask=mask)[0]
            return self.ffn(rms_norm(x, self.norm2_gamma))

    _, text, keys = check(lesson02.check_encoder_block, EncoderBlock)
    assert "probe:missing:residual_ffn" in keys and "the residual around the feed-forward network is missing" in text


def test_norm_gains_swapped_are_named_by_both_names(no_catalog):
    no_catalog("EncoderBlock", "DecoderBlock")

    class EncoderBlock:
        def __init__(self, d_model, n_heads, d_ff):
            pass

        def __call__(self, x, mask=None):
            x = x + self.self_attn(rms_norm(x, self.norm2_gamma), mask=mask)[0]
            return x + self.ffn(rms_norm(x, self.norm1_gamma))

    _, text, keys = check(lesson02.check_encoder_block, EncoderBlock)
    assert keys == ["probe:swapped:norm1_gamma:norm2_gamma"], text
    assert "`norm1_gamma` and `norm2_gamma` are swapped" in text

    class DecoderBlock(DecoderBlockCausalMaskToCross):
        def __call__(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):
            x = x + self.self_attn(rms_norm(x, self.norm1_gamma), mask=self_attn_mask)[0]
            out, weights = self.cross_attn(rms_norm(x, self.norm3_gamma), encoder_output, cross_attn_mask)
            x = x + out
            return x + self.ffn(rms_norm(x, self.norm2_gamma)), weights

    _, text, keys = check(lesson05.check_decoder_block, DecoderBlock)
    assert "probe:swapped:norm2_gamma:norm3_gamma" in keys, text


def test_heads_in_the_wrong_order_are_named(no_catalog):
    no_catalog("CrossAttention")

    class CrossAttention(CrossAttentionSplitByReshape):
        def attend(self, query_input, K, V, mask=None):
            Q = split_heads(query_input @ self.W_q, self.n_heads)
            heads, weights = cross_attention(Q, K, V, mask)
            heads, weights = heads[..., ::-1, :, :], weights[..., ::-1, :, :]  # heads reversed
            return merge_heads(heads) @ self.W_o, weights

    _, text, keys = check(lesson04.check_attend, CrossAttention)
    assert "probe:heads:order" in keys and "the heads come out in the wrong order" in text, text


def test_a_causal_leak_and_a_causal_encoder_are_named(no_catalog):
    no_catalog("causal_self_attention", "EncoderBlock")

    def causal_self_attention(x, W_q, W_k, W_v):
        Q, K, V = x @ W_q, x @ W_k, x @ W_v
        m = x.shape[-2]
        mask = np.where(np.arange(m)[None, :] > np.arange(m)[:, None] + 1, -np.inf, 0.0)  # one step ahead
        return _sdpa()(Q, K, V, mask)

    _, text, keys = check(lesson03.check_causal_self_attention, causal_self_attention)
    assert "probe:causal:future_visible" in keys, text

    class EncoderBlock:
        def __init__(self, d_model, n_heads, d_ff):
            pass

        def __call__(self, x, mask=None):
            causal = lesson05.create_causal_mask(x.shape[-2])
            mask = causal if mask is None else mask + causal
            x = x + self.self_attn(rms_norm(x, self.norm1_gamma), mask=mask)[0]
            return x + self.ffn(rms_norm(x, self.norm2_gamma))

    _, text, keys = check(lesson02.check_encoder_block, EncoderBlock)
    assert "probe:causal:encoder_is_causal" in keys, text


def test_masks_are_read_entry_by_entry(no_catalog):
    no_catalog("create_causal_mask", "padding_mask")
    _, text, keys = check(lesson03.check_create_causal_mask,
                          lambda n: np.where(np.arange(n)[None, :] > np.arange(n)[:, None] + 1, -np.inf, 0.0))
    assert keys == ["probe:mask:shows_hidden"] and "query 0, key 1 is visible" in text, text
    _, text, keys = check(lesson02.check_padding_mask,
                          lambda tokens, pad_id: np.where(tokens == pad_id, np.inf, 0.0)[..., None, None, :])
    assert keys == ["probe:mask:plus_inf"], text


def test_a_weight_used_transposed_is_named_when_square_and_by_its_line_when_not(no_catalog):
    no_catalog("causal_self_attention")

    def causal_self_attention(x, W_q, W_k, W_v):
        Q, K, V = x @ W_q, x @ W_k.T, x @ W_v
        return _sdpa()(Q, K, V, lesson05.create_causal_mask(x.shape[-2]))

    _, text, keys = check(lesson03.check_causal_self_attention, causal_self_attention)
    assert "repair:untransposed" in keys, text
    assert "With `W_k` in place of `W_k.T` there" in text and "`W_k` is used as it is stored" in text, text
    r = np.random.default_rng(2)
    x, W = r.normal(size=(5, 6)), [r.normal(size=(6, 6)) for _ in range(3)]
    case = Case("square weights", (x, *W))
    attempt = Attempt("causal_self_attention", case, got=causal_self_attention(*case.args),
                      expected=lesson03.causal_self_attention(*case.args), student=causal_self_attention)
    finding = probes.find_slip(lesson03.CAUSAL_ATTENTION_PROBES, attempt)
    assert finding.key == "probe:transposed:W_k" and "`W_k` (it makes the keys) is used transposed" in finding.diagnosis


def _split(x, h):
    *lead, T, d = x.shape
    return np.swapaxes(x.reshape(*lead, T, h, d // h), -2, -3)


def _merge(x):
    x = np.swapaxes(x, -2, -3)
    return x.reshape(*x.shape[:-2], -1)


def _mha(after_softmax=lambda w: w, axis=-1, heads=lambda h: h):
    class MultiHeadAttention:
        def __init__(self, d_model, n_heads):
            pass

        def __call__(self, query_input, key_value_input=None, mask=None):
            kv = query_input if key_value_input is None else key_value_input
            Q, K, V = (_split(a @ W, self.n_heads) for a, W in ((query_input, self.W_q), (kv, self.W_k), (kv, self.W_v)))
            scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(self.d_k)
            if mask is not None:
                scores = scores + mask
            weights = after_softmax(softmax(scores, axis=axis))
            return _merge(heads(weights @ V)) @ self.W_o, weights
    return MultiHeadAttention


class _DecoderBlock(DecoderBlockCausalMaskToCross):
    gains = ("norm1_gamma", "norm2_gamma", "norm3_gamma")

    def __call__(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):
        g1, g2, g3 = (getattr(self, g) for g in self.gains)
        x = x + self.self_attn(rms_norm(x, g1), mask=self_attn_mask)[0]
        out, weights = self.cross_attn(rms_norm(x, g2), encoder_output, cross_attn_mask)
        x = x + out
        return x + self.ffn(rms_norm(x, g3) if g3 is not None else x), weights


class DecoderBlockNorm1ForCross(_DecoderBlock):
    gains = ("norm1_gamma", "norm1_gamma", "norm3_gamma")


class DecoderBlockNoNorm3(_DecoderBlock):
    gains = ("norm1_gamma", "norm2_gamma", "no_norm")
    no_norm = None


def _steps_on_the_last_axis(mha, H_enc, H_dec, mask=None):
    K, V = mha.project_kv(H_enc)
    steps = [mha.attend(H_dec[..., t:t + 1, :], K, V, mask) for t in range(H_dec.shape[-2])]
    return np.concatenate([o for o, _ in steps], axis=-2), np.concatenate([w for _, w in steps], axis=-1)


def _mask_multiplied(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores * (mask == 0)
    weights = softmax(scores)
    return weights @ V, weights


def _no_max_shift(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores + mask
    e = np.exp(scores)
    weights = e / e.sum(axis=-1, keepdims=True)
    return weights @ V, weights


@pytest.mark.parametrize("checker,answer,key", [
    (lesson02.check_multi_head_attention, _mha(after_softmax=lambda w: w / np.sqrt(w.shape[-1])),
     "probe:weights:rows_scaled"),
    (lesson02.check_multi_head_attention, _mha(axis=-3), "probe:axis:-3"),
    (lesson02.check_multi_head_attention, _mha(heads=lambda h: h[..., ::-1, :, :]), "probe:heads:merge_reversed"),
    (lesson05.check_decoder_block, DecoderBlockNorm1ForCross, "probe:instead:norm1_gamma:norm2_gamma"),
    (lesson05.check_decoder_block, DecoderBlockNoNorm3, "probe:missing:norm3"),
    (lesson04.check_cross_attention_step_by_step, _steps_on_the_last_axis, "repair:axis"),
    (lesson01.check_scaled_dot_product_attention, _mask_multiplied, "probe:weights:masked_key_gets_weight"),
    (lesson01.check_scaled_dot_product_attention, _no_max_shift, "probe:exp_overflow"),
], ids=["scale-after-softmax", "softmax-over-heads", "heads-reversed", "norm1-for-cross", "no-norm3",
        "steps-on-last-axis", "mask-multiplied", "overflow"])
def test_slips_written_apart_from_the_probes_are_named(checker, answer, key):
    """Slips written as a student would, no catalog entry for any: each gets a likely cause of its kind."""
    score, text, keys = check(checker, answer)
    assert key in keys, text
    assert "Likely cause" in text


# -- shape errors ---------------------------------------------------------------------------------------------
def test_a_shape_error_names_the_arrays_and_the_step(monkeypatch):
    """The shape probe on its own (the repair, which comes first, would name the variable: test_repair.py)."""
    from encdec.checks.probes import judging
    monkeypatch.setattr(judging, "REPAIR", _Silent())

    def scaled_dot_product_attention(Q, K, V, mask=None):
        scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
        if mask is not None:
            flat = mask.reshape(-1)  # the mask flattened
            scores = scores + flat
        weights = softmax(scores)
        return weights @ V, weights

    _, text, keys = check(lesson01.check_scaled_dot_product_attention, scaled_dot_product_attention)
    assert "probe:shape_error:broadcast" in keys, text
    assert "`scores + flat` fails: scores has shape (4, 4) and flat has shape (16,); they do not broadcast" in text


class _Silent(probes.Probe):
    def find(self, attempt, probes):
        return None


# -- integration: recorded once, no points of its own, never raises, fast -----------------------------------
def test_a_finding_is_recorded_once_and_changes_no_points(monkeypatch, no_catalog):
    no_catalog("CrossAttention")
    with_probes = check(lesson04.check_attend, CrossAttentionSplitByReshape, hidden=True)
    monkeypatch.setattr(lesson04, "mha_probes", lambda *a, **k: None)
    without = check(lesson04.check_attend, CrossAttentionSplitByReshape, hidden=True)
    assert with_probes[0] == without[0]
    located = [k for k in without[2] if k.startswith("trace:")]  # the tracer still finds the line without probes
    assert with_probes[2] == ["probe:heads:split_bare"] and without[2] == located
    assert with_probes[1].count("Likely cause: the heads are split") == 1


def test_a_probe_that_raises_or_prints_is_silent(capsys):
    class Broken(probes.Property):
        def inspect(self, attempt, declared):
            print("noise")
            raise RuntimeError("a bug in a probe")

    attempt = Attempt("softmax", Case("x", (np.zeros(3),)), got=np.zeros(3), expected=np.ones(3) / 3)
    assert probes.find_slip(probes.Probes(None, Broken()), attempt) is None
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_a_wrong_answer_no_probe_explains_is_checked_to_the_end():
    """The slowest kind of check: a wrong answer no probe explains, where every probe runs, the scale fit
    and the tracer included, on every part. It ends with a score and raises nothing; how long it takes
    is measured by `make bench BENCH=diagnosis` (goal: within 2 s), not asserted here."""
    averaged = lambda w: w.mean(axis=-2, keepdims=True) * np.ones_like(w)  # noqa: E731
    answers = [(lesson04.check_attend, CrossAttentionWqTransposed),
               (lesson05.check_decoder_block, DecoderBlockCausalMaskToCross),
               (lesson01.check_scaled_dot_product_attention, _sdpa(lambda Q, K: 0.3)),
               (lesson02.check_multi_head_attention, _mha(after_softmax=averaged))]
    for checker, answer in answers:
        score, text, _ = check(checker, answer, hidden=True)
        assert "✗" in text and "Traceback" not in text, (checker.__name__, text)


# -- kinds found by trying slips nobody designed the probes around -------------------------------------------
def _attend(body):
    """A CrossAttention whose attend is `body(self, query_input, K, V, mask)`."""
    class CrossAttention(lesson02.attention.MultiHeadAttention):
        def attend(self, query_input, K, V, mask=None):
            return body(self, query_input, K, V, mask)
    return CrossAttention


def _heads(self, query_input, K, V, mask):
    return cross_attention(split_heads(query_input @ self.W_q, self.n_heads), K, V, mask)


@pytest.mark.parametrize("body,key,words", [
    (lambda self, q, K, V, mask: (lambda h, w: (merge_heads(h) @ self.W_o, w))(
        *cross_attention(split_heads(q @ self.W_q, self.n_heads), V, K, mask)),
     "probe:extra:K_V_swapped", "the keys and the values are exchanged"),
    (lambda self, q, K, V, mask: (lambda h, w: (q + merge_heads(h) @ self.W_o, w))(*_heads(self, q, K, V, mask)),
     "probe:extra:residual", "the layer's input is added to its output"),
])
def test_keys_and_values_exchanged_or_a_residual_inside_attention_are_named(body, key, words, no_catalog):
    no_catalog("CrossAttention")
    score, text, keys = check(lesson04.check_attend, _attend(body))
    assert score == 0 and key in keys and words in text, text


def _block(call):
    class DecoderBlock:
        def __init__(self, d_model, n_heads, d_ff):
            pass
    DecoderBlock.__call__ = call
    return DecoderBlock


def _one_layer_for_both(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):
    x = x + self.cross_attn(rms_norm(x, self.norm1_gamma), mask=self_attn_mask)[0]
    out, weights = self.cross_attn(rms_norm(x, self.norm2_gamma), encoder_output, mask=cross_attn_mask)
    x = x + out
    return x + self.ffn(rms_norm(x, self.norm3_gamma)), weights


def _ffn_residual_from_the_norm(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):
    x = x + self.self_attn(rms_norm(x, self.norm1_gamma), mask=self_attn_mask)[0]
    out, weights = self.cross_attn(rms_norm(x, self.norm2_gamma), encoder_output, mask=cross_attn_mask)
    h = rms_norm(x + out, self.norm3_gamma)
    return h + self.ffn(h), weights


def _cross_residual_from_the_norm(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):
    x = x + self.self_attn(rms_norm(x, self.norm1_gamma), mask=self_attn_mask)[0]
    h = rms_norm(x, self.norm2_gamma)
    out, weights = self.cross_attn(h, encoder_output, mask=cross_attn_mask)
    x = h + out
    return x + self.ffn(rms_norm(x, self.norm3_gamma)), weights


def _output_normalised_again(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):
    x = x + self.self_attn(rms_norm(x, self.norm1_gamma), mask=self_attn_mask)[0]
    out, weights = self.cross_attn(rms_norm(x, self.norm2_gamma), encoder_output, mask=cross_attn_mask)
    x = x + out
    x = x + self.ffn(rms_norm(x, self.norm3_gamma))
    return rms_norm(x, np.ones(x.shape[-1])), weights


@pytest.mark.parametrize("call,key,words", [
    (_output_normalised_again, "probe:output_norm:none", "the block's output is normalised again"),
    (_one_layer_for_both, "probe:masks:one_layer_for_both", "cross_attn was called 2 times and self_attn never"),
    (_ffn_residual_from_the_norm, "probe:residual_from_norm:residual_ffn",
     "the residual around the feed-forward network adds the sublayer's output to its normalised input"),
    (_cross_residual_from_the_norm, "probe:residual_from_norm:residual_cross",
     "the residual around cross-attention adds the sublayer's output to its normalised input"),
])
def test_decoder_block_wiring_slips_are_named(call, key, words, no_catalog):
    no_catalog("DecoderBlock")
    score, text, keys = check(lesson05.check_decoder_block, _block(call))
    assert score < 4 and key in keys and words in text, text
    # one attention layer for both is not the causal mask sent to cross-attention, though cross_attn got it
    assert "probe:masks:causal_to_cross" not in keys
