"""Probes of Lessons 6-10 (encdec.checks.probes, declared in encdec.checks.lesson06 .. lesson10), proven:

- every correct variant (tests/variants) and every reference gives no probe finding on any case it
  passes (probes.audit(): the probes run on every passing case, on the answer's output and on the
  reference's) and keeps full marks;
- each probe names the slip it is for, on a wrong answer that no catalog entry lists (so the probe,
  not the catalog, must find it), with its key recorded and its words printed;
- the knob models compute the reference when no knob is set, on every case of their check.
"""

import contextlib
import importlib
import io

import numpy as np
import pytest

from encdec.attention import create_causal_mask, padding_mask
from encdec.checks import probes as P
from encdec.checks.probes import Knobs
from encdec.layers import rms_norm, sinusoidal_positions
from encdec.loss import log_softmax
from encdec.model import Seq2Seq
from test_repair import time_enough  # noqa: F401 (a fixture: the repair's budget, generous under load)

backward = importlib.import_module("encdec.backward")  # the module (the package exports another `backward`)

LESSONS = ["lesson06", "lesson07", "lesson08", "lesson09", "lesson10"]


def module(lesson):
    return importlib.import_module(f"encdec.checks.{lesson}")


def exercise(name):
    for lesson in LESSONS:
        for ex in module(lesson).EXERCISES:
            if ex.name == name:
                return ex
    raise KeyError(name)


def run(checker, *args, **kwargs):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        score = checker(*args, **kwargs)
    return score, out.getvalue()


def graded(name, impl, hidden=True):
    """(score, printed text, the misconception keys its record holds) of `impl` as the answer to `name`."""
    from encdec.checks import core
    ex = exercise(name)
    records = []
    real = core.publish

    def keep(record, summary):
        records.append(record)
        return real(record, summary)

    core.publish = keep
    try:
        score, text = run(ex.checker, ex.answer_from(impl), points=ex.points, hidden=hidden)
    finally:
        core.publish = real
    return score, text, [m["key"] for r in records for m in r.get("misconceptions", [])]


def answers():
    params = []
    for lesson in LESSONS:
        try:
            alts = importlib.import_module(f"variants.{lesson}").ALTERNATIVES
        except ModuleNotFoundError:
            alts = {}
        for ex in module(lesson).EXERCISES:
            for i, alt in enumerate(alts.get(ex.name, [])):
                params.append(pytest.param(lesson, ex.name, alt, marks=getattr(pytest.mark, lesson),
                                           id=f"{ex.number}-{i}"))
    return params


@pytest.mark.parametrize("lesson,name,alt", answers())
def test_no_probe_misfires_on_a_correct_variant_or_the_reference(lesson, name, alt, capsys):
    ex = exercise(name)
    if ex.method is None:  # an alternative may call other exercises by their notebook names
        alt.__globals__.update({e.name: e.reference for m in LESSONS for e in module(m).EXERCISES
                                if e.name != name and e.method is None})
    with P.audit() as found:
        score, text = run(ex.checker, ex.answer_from(alt), points=ex.points, hidden=True)
    assert score == ex.points, text
    assert found == [], f"probes misfired on a correct answer: {found}"
    assert capsys.readouterr().err == ""


def test_the_audit_can_fail():
    """The audit collects a probe's finding on a passing case (a probe that always fires)."""
    class Always(P.Property):
        kind = "always"

        def inspect(self, attempt, probes):
            return self.finding(attempt, "", "always")

    lesson06 = module("lesson06")
    saved = lesson06.EMBED_PROBES.probes
    lesson06.EMBED_PROBES.probes = [Always()]
    try:
        with P.audit() as found:
            run(exercise("embed").checker, exercise("embed").answer_from(_embed_ok), points=2)
    finally:
        lesson06.EMBED_PROBES.probes = saved
    assert found and found[0][3].key == "probe:always"


def _embed_ok(model, tokens):
    from encdec.layers import sinusoidal_positions
    d = model.embedding.shape[1]
    return model.embedding[tokens] * np.sqrt(d) + sinusoidal_positions(tokens.shape[-1], d)


def test_sampling_probe_names_the_distribution_the_draws_fit_and_never_the_right_one():
    """Sampling is checked by frequencies, outside check_cases: its probe (lesson09._sampling_probe) is
    tried on exact frequencies. Each kind of slip, alone or two together, is named on a case where it
    changes the distribution; the right distribution is never named."""
    from encdec import decoding
    from encdec.checks.core import Checker
    L9 = module("lesson09")
    named = set()
    for case in sum(L9.sampling_cases().values(), []):
        c = Checker(L9.SAMPLE_NEXT_TOKEN)
        assert L9._sampling_probe(c, decoding.next_token_distribution(case.logits, **case.kwargs), case) == ""
        for key, knobs, diagnosis in P.combos(L9.SAMPLING_CHOICES, L9.SAMPLING_RIGHT):
            if key.count("+") > 1:
                continue
            q = L9._distribution(case.logits, **case.kwargs, **knobs)
            if np.allclose(q, decoding.next_token_distribution(case.logits, **case.kwargs), atol=1e-3):
                continue
            c = Checker(L9.SAMPLE_NEXT_TOKEN)
            text = L9._sampling_probe(c, q, case)
            assert text, (case.label, case.kwargs, key)
            named.add(c.misconceptions[0].key)
    for key in ("temperature_multiplies", "top_k_one_more", "nucleus_ignored", "top_p_before_top_k",
                "temperature_multiplies+top_k_one_more"):
        assert f"probe:sampling:{key}" in named, sorted(named)


def test_an_untransposed_product_is_named_by_its_operands():
    """weights @ dout (dV) and dscores @ Q (dK) fail on m != n with one message: the catalog's
    dV_not_transposed names the first by its operands and never the second (see the dK slip below)."""
    def attention_backward(dout, Q, K, V, weights):
        ds = backward.softmax_backward(dout @ np.swapaxes(V, -1, -2), weights) / np.sqrt(Q.shape[-1])
        return ds @ K, np.swapaxes(ds, -1, -2) @ Q, weights @ dout

    score, text, recorded = graded("attention_backward", attention_backward)
    assert score == 0 and recorded == ["dV_not_transposed"], (recorded, text)
    assert "`weights @ dout` fails" in text, text


def test_sampling_probe_names_an_unnormalised_cdf_on_every_cut_case():
    """Draws read from the cumulative sum of kept, unrenormalised probabilities (the left-over mass on the
    last token or on token 0) are named so on every case with a cut, from exact frequencies."""
    from encdec import decoding
    from encdec.checks.core import Checker
    L9 = module("lesson09")
    tried = 0
    for case in sum(L9.sampling_cases().values(), []):
        if case.kwargs.get("top_k") is None and case.kwargs.get("top_p") is None:
            continue
        for key, knobs, _ in L9.UNNORMALISED_CDF:
            try:
                q = L9._unnormalised_cdf(case.logits, **case.kwargs, **knobs)
            except LookupError:
                continue
            if np.allclose(q, decoding.next_token_distribution(case.logits, **case.kwargs), atol=1e-3):
                continue
            if any(np.allclose(q, L9._distribution(case.logits, **case.kwargs, **other), atol=1e-3)
                   for _, other, _ in P.combos(L9.SAMPLING_CHOICES)):
                continue  # the left-over mass lands where another slip puts it: the draws cannot tell them apart
            c = Checker(L9.SAMPLE_NEXT_TOKEN)
            assert L9._sampling_probe(c, q, case), (case.label, case.kwargs, key)
            assert c.misconceptions[0].key.startswith("probe:sampling:unnormalised_cdf"), c.misconceptions[0].key
            tried += 1
    assert tried >= 10


def test_a_greedy_catalog_entry_names_argmax_draws_only_without_a_cut():
    """Every draw the argmax: without top-k/top-p that is greedy decoding (always_the_argmax); under a cut
    that leaves only the argmax too tight it is not, and always_the_argmax must not name it."""
    from encdec import decoding
    from encdec.checks.core import Checker
    from encdec.mistakes import CATALOG
    L9 = module("lesson09")
    cases = L9.sampling_cases()
    for case, named in ((cases["plain"][0], True), (cases["both"][0], False), (cases["top_p"][1], False)):
        argmax = np.eye(len(case.logits))[np.argmax(case.logits)]
        c = Checker(L9.SAMPLE_NEXT_TOKEN)
        L9._sampling_diagnosis(c, argmax, None, case, CATALOG["sample_next_token"])
        assert any(m.key == "always_the_argmax" for m in c.misconceptions) == named, (case.kwargs, c.misconceptions)
        assert not np.allclose(argmax, decoding.next_token_distribution(case.logits, **case.kwargs))


# -- the knob models: with no knob set, each computes the reference on every case of its check ---------------
def model_cases():
    from encdec import decoding, layers, optim, training
    from encdec.checks import core
    L6, L7, L8, L9 = (module(f"lesson0{i}") for i in (6, 7, 8, 9))
    rows = [
        ("shift_right", L6.SHIFT_PROBES, L6.shift_right_cases()["values"], exercise("shift_right").reference, None),
        ("embed", L6.EMBED_PROBES, L6.embed_cases()["values"], Seq2Seq.embed, None),
        ("encode", L6.ENCODE_PROBES, L6.encode_cases(), Seq2Seq.encode, None),
        ("decode", L6.DECODE_PROBES, L6.decode_cases(), Seq2Seq.decode, None),
        ("parameter_count", L6.COUNT_PROBES, L6.parameter_count_cases()["formula"], exercise("parameter_count").reference, None),
        ("softmax_cross_entropy", L7.XENT_PROBES, sum(L7.cross_entropy_cases().values(), []), L7._xent, None),
        ("numerical_gradient", L7.NUMERICAL_GRADIENT_PROBES, L7.numerical_gradient_cases(),
         L7._gradient_of(backward.numerical_gradient), None),
        ("softmax_backward", L7.SOFTMAX_BACKWARD_PROBES, sum(L7.softmax_backward_cases().values(), []),
         backward.softmax_backward, None),
        ("attention_backward", L7.ATTENTION_BACKWARD_PROBES, sum(L7.attention_backward_cases().values(), []),
         backward.attention_backward, None),
        ("rms_norm_backward", L7.RMS_NORM_BACKWARD_PROBES, sum(L7.rms_norm_backward_cases().values(), []),
         backward.rms_norm_backward, None),
        ("sequence_cross_entropy", L8.SEQUENCE_XENT_PROBES, sum(L8.loss_cases().values(), []),
         exercise("sequence_cross_entropy").reference, None),
        ("adam_update", L8.ADAM_PROBES, sum(L8.adam_cases().values(), []), optim.adam_update, None),
        ("warmup_schedule", L8.SCHEDULE_PROBES, sum(L8.schedule_cases().values(), []),
         L8._over_steps(optim.warmup_schedule), None),
        ("dropout", L8.dropout_probes(False), sum(L8.dropout_cases().values(), []), L8._seeded(layers.dropout), None),
        ("greedy_decode", L9.GREEDY_PROBES, sum(L9.greedy_cases().values(), []), L9._reference_greedy, None),
        ("beam_search", L9.BEAM_PROBES, sum(L9.beam_cases().values(), []), decoding.beam_search, L9._every),
        ("train_step", L8.TRAIN_STEP_PROBES, sum(L8.train_step_cases().values(), []),
         L8._one_step(training.train_step), None),
        ("decode_step", L9.DECODE_STEP_PROBES, sum(L9.decode_step_cases().values(), []),
         L9._steps(decoding.decode_step), None),
    ]
    return [pytest.param(probes, case, ref, post, id=f"{name}-{i}")
            for name, probes, cases, ref, post in rows for i, case in enumerate(cases)], core


def _model_params():
    params, _ = model_cases()
    return params


@pytest.mark.parametrize("probes,case,reference,post", _model_params())
def test_a_knob_model_without_knobs_is_the_reference(probes, case, reference, post):
    from encdec.checks import core
    from encdec.checks.core import Attempt
    attempt = Attempt("x", case)
    value, error = probes.run(attempt, Knobs())
    assert error is None, repr(error)
    expected = reference(*attempt.args(), **attempt.kwargs())
    if post is not None:
        value, expected = post(value), post(expected)
    assert core.compare(value, expected, case.float32) is None, core.compare(value, expected, case.float32)


def test_lesson10_knob_models_are_the_reference():
    from encdec.checks import core
    from encdec.checks.core import Attempt, Case
    L10 = module("lesson10")
    R = L10.references()
    for args in [(1, 1e-3, 10, 100, 1e-5), (10, 1e-3, 10, 100, 1e-5), (11, 1e-3, 10, 100, 1e-5),
                 (55, 1e-3, 10, 100, 1e-5), (130, 1e-3, 10, 100, 1e-5), (2, 0.5, 3, 20, 0.0)]:
        value, error = L10.LR_PROBES.run(Attempt("x", Case("", args)), Knobs())
        assert error is None and abs(value - R.lr_at(*args)) < 1e-15
    probes = L10._decode_cached_probes()
    for case in L10.decode_cases()["batch"]:
        value, error = probes.run(Attempt("x", case), Knobs())
        assert error is None and core.compare(value, L10._reference_decoded(*case.args)) is None


# -- the slips each probe names, one wrong answer each (none of them a catalog entry) -------------------------
SLIPS = {}


def slip(name, key, words, never=()):
    """Register a wrong answer to exercise `name` that the probes must name with `key` (a prefix of the
    recorded key) and whose printed text must hold `words`; no recorded key may start with one of `never`
    (a catalog entry or probe that does not describe this slip)."""
    def register(fn):
        SLIPS.setdefault(name, []).append((key, words, fn, tuple(never)))
        return fn
    return register


# Lesson 6 ---------------------------------------------------------------------------------------------------


@slip("shift_right", "probe:shift:left+pad_first", "move left")
def shift_left_pad(targets, bos_id):
    t = np.asarray(targets)
    out = np.zeros_like(t)
    out[..., :-1] = t[..., 1:]
    return out


@slip("shift_right", "probe:shift:by2+eos_first", "Two slips together")
def shift_two_eos(targets, bos_id):
    t = np.asarray(targets)
    out = np.full_like(t, 2)
    out[..., 2:] = t[..., :-2]
    return out


@slip("embed", "probe:embed:no_scale+positions_twice", "Two slips together")
def embed_two_slips(model, tokens):
    d = model.embedding.shape[1]
    return model.embedding[tokens] + 2 * sinusoidal_positions(tokens.shape[-1], d)


@slip("embed", "probe:embed:sin_cos_halves", "instead of alternating")
def embed_halves(model, tokens):
    d = model.embedding.shape[1]
    pos = np.arange(tokens.shape[-1])[:, None]
    ang = pos / 10000 ** (np.arange(0, d, 2) / d)
    pe = np.concatenate([np.sin(ang), np.cos(ang)], axis=-1)[:, :d]
    return model.embedding[tokens] * np.sqrt(d) + pe


@slip("embed", "probe:scale:other", "E's rows are multiplied by")
def embed_wrong_factor(model, tokens):
    d = model.embedding.shape[1]
    return model.embedding[tokens] * 1.7 + sinusoidal_positions(tokens.shape[-1], d)


def _enc(model, src, mask=True, norm="enc"):
    src = np.asarray(src)
    m = padding_mask(src, model.config.pad_id)
    x = model.embed(src)
    for block in model.encoder:
        x = block(x, mask=m if mask else None)
    gamma = model.encoder_norm_gamma if norm == "enc" else model.decoder_norm_gamma
    return (x if norm is None else rms_norm(x, gamma, model.config.eps)), m


@slip("encode", "probe:encode:no_padding_mask+decoder_gamma", "Two slips together")
def encode_two_slips(model, src):
    return _enc(model, src, mask=False, norm="dec")


@slip("encode", "repair:off_by_one", "0 in place of 1", never=("probe:encode:not_chained",))
def encode_skips_the_first_block(model, src):
    """On the two-block models every block reading the embedding gives the same output; the one-block and
    three-block cases tell them apart, so the loop's start is named."""
    from encdec.attention import padding_mask
    from encdec.layers import rms_norm
    mask = padding_mask(src, model.config.pad_id)
    x = model.embed(src)
    for i in range(1, len(model.encoder)):
        x = model.encoder[i](x, mask=mask)
    return rms_norm(x, model.encoder_norm_gamma, model.config.eps), mask


@slip("encode", "probe:padding:pad_changes_real_positions", "one more pad at the end of the source")
def encode_mask_as_zeros(model, src):
    src = np.asarray(src)
    H, m = _enc(model, src, mask=False)
    x = model.embed(src) * (src != model.config.pad_id)[..., None]  # pads zeroed, still attended to
    for block in model.encoder:
        x = block(x)
    return rms_norm(x, model.encoder_norm_gamma, model.config.eps), m


def _dec(model, tgt_in, H_enc, src_mask, causal=True, cross=True, scale=1.0):
    tgt_in = np.asarray(tgt_in)
    mask = padding_mask(tgt_in, model.config.pad_id) + (create_causal_mask(tgt_in.shape[-1]) if causal else 0.0)
    x = model.embed(tgt_in)
    for block in model.decoder:
        x, _ = block(x, H_enc, self_attn_mask=mask, cross_attn_mask=src_mask if cross else None)
    return scale * (rms_norm(x, model.decoder_norm_gamma, model.config.eps) @ model.embedding.T)


@slip("encode", "probe:causal:encoder_is_causal", "changing the last source token changed no earlier position")
def encode_causal_with_extra_residual(model, src):
    src = np.asarray(src)
    m = padding_mask(src, model.config.pad_id)
    x = model.embed(src)
    for block in model.encoder:
        x = x + block(x, mask=m + create_causal_mask(src.shape[-1]))
    return rms_norm(x, model.encoder_norm_gamma, model.config.eps), m


@slip("decode", "probe:decode:no_causal_mask+no_cross_mask", "Two slips together")
def decode_two_masks(model, tgt_in, H_enc, src_mask):
    return _dec(model, tgt_in, H_enc, src_mask, causal=False, cross=False)


@slip("decode", "probe:scale:other", "is exactly the right result times 0.5")
def decode_scaled(model, tgt_in, H_enc, src_mask):
    return _dec(model, tgt_in, H_enc, src_mask, scale=0.5)


@slip("decode", "probe:causal:future_visible", "changing only the last target input")
def decode_upper_mask(model, tgt_in, H_enc, src_mask):
    """The causal mask transposed: a position sees itself and the ones after it."""
    tgt_in = np.asarray(tgt_in)
    mask = padding_mask(tgt_in, model.config.pad_id) + create_causal_mask(tgt_in.shape[-1]).T
    x = model.embed(tgt_in)
    for block in model.decoder:
        x, _ = block(x, H_enc, self_attn_mask=mask, cross_attn_mask=src_mask)
    return rms_norm(x, model.decoder_norm_gamma, model.config.eps) @ model.embedding.T


@slip("parameter_count", "probe:count:no_ffn_biases+twice_final_norms", "Two slips together")
def count_two_slips(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):
    nd = n_encoder_layers if n_decoder_layers is None else n_decoder_layers
    d = d_model
    return (vocab_size * d + n_encoder_layers * (4 * d * d + 2 * d * d_ff + 2 * d)
            + nd * (8 * d * d + 2 * d * d_ff + 3 * d) + 4 * d)


# Lesson 7 ---------------------------------------------------------------------------------------------------



def _xent(logits, targets, pad_id=None, loss_sign=1, grad_at_pads=False, denom="tokens", grad=None):
    logits, targets = np.asarray(logits), np.asarray(targets)
    V = logits.shape[-1]
    keep = np.ones(targets.shape, bool) if pad_id is None else targets != pad_id
    n = int(keep.sum())
    if n == 0:
        return 0.0, np.zeros_like(logits)
    logp = log_softmax(logits)
    y = np.eye(V)[np.where(keep, targets, 0)]
    per = -np.sum(y * logp, axis=-1)
    loss = loss_sign * float(np.sum(per * keep) / (n if denom == "tokens" else targets.size))
    g = (np.exp(logp) - y) if grad is None else grad(np.exp(logp), y)
    return loss, g * (1 if grad_at_pads else keep[..., None]) / n


@slip("softmax_cross_entropy", "probe:xent:grad_at_pads+loss_sign", "Two slips together")
def xent_two_slips(logits, targets, pad_id=None):
    return _xent(logits, targets, pad_id, loss_sign=-1, grad_at_pads=True)


@slip("softmax_cross_entropy", "probe:scale:other", "the entries of dlogits are multiplied by")
def xent_half_gradient(logits, targets, pad_id=None):
    loss, g = _xent(logits, targets, pad_id)
    return loss, 0.5 * g


@slip("softmax_cross_entropy", "probe:xent:loss:loss_over_positions", "in `loss`")
def xent_loss_over_positions_and_odd_gradient(logits, targets, pad_id=None):
    return _xent(logits, targets, pad_id, denom="positions", grad=lambda p, y: p - 0.5 * y)


@slip("softmax_cross_entropy", "probe:xent:pads_in_loss_sum", "leave the pads' terms out of the sum")
def xent_pads_in_the_sum(logits, targets, pad_id=None):
    """The mask on the gradient only: the loss's sum runs over the pads too, and is divided by N."""
    logits, targets = np.asarray(logits), np.asarray(targets)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    y = np.eye(logits.shape[-1])[targets]
    keep = np.ones(targets.shape, bool) if pad_id is None else targets != pad_id
    n = keep.sum()
    if n == 0:
        return 0.0, np.zeros_like(logits)
    return float(-(y * logp).sum() / n), (np.exp(logp) - y) * keep[..., None] / n


@slip("softmax_cross_entropy", "probe:xent:mean_of_sequence_means", "mean of each sequence's own mean")
def xent_mean_of_sequence_means(logits, targets, pad_id=None):
    """Each row's mean over its real tokens, then the mean of the rows; the gradient is right."""
    logits, targets = np.asarray(logits), np.asarray(targets)
    z = logits - logits.max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    keep = np.ones(targets.shape, bool) if pad_id is None else targets != pad_id
    n = keep.sum()
    if n == 0:
        return 0.0, np.zeros_like(logits)
    nll = -np.take_along_axis(logp, targets[..., None], axis=-1)[..., 0] * keep
    flat, counts = nll.reshape(-1, targets.shape[-1]), keep.reshape(-1, targets.shape[-1]).sum(-1)
    loss = float(np.mean(flat.sum(-1)[counts > 0] / counts[counts > 0]))
    return loss, (np.exp(logp) - np.eye(logits.shape[-1])[targets]) * keep[..., None] / n


@slip("numerical_gradient", "probe:scale:1/2", "half the gradient")
def numerical_gradient_4h(f, x, h=1e-5):
    g = np.zeros_like(x)
    flat, gf = x.reshape(-1), g.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + h
        a = float(f())
        flat[i] = old - h
        b = float(f())
        flat[i] = old
        gf[i] = (a - b) / (4 * h)
    return g


@slip("softmax_backward", "probe:softmax_backward:no_leading_p+sign", "Two slips together")
def softmax_backward_two_slips(dout, probs, axis=-1):
    return np.sum(dout * probs, axis=axis, keepdims=True) - dout


@slip("softmax_backward", "probe:axis:all", "the whole array")
def softmax_backward_whole_sum(dout, probs, axis=-1):
    return probs * (dout - np.sum(dout * probs))


def _attn_bw(dout, Q, K, V, weights, scale=None, dK_sign=1):
    scale = 1 / np.sqrt(Q.shape[-1]) if scale is None else scale
    dV = np.swapaxes(weights, -1, -2) @ dout
    ds = backward.softmax_backward(dout @ np.swapaxes(V, -1, -2), weights) * scale
    dQ, dK = ds @ K, dK_sign * (np.swapaxes(ds, -1, -2) @ Q)
    return tuple(backward._sum_to(g, a.shape) for g, a in ((dQ, Q), (dK, K), (dV, V)))


@slip("attention_backward", "probe:scale:other", "dscores are multiplied by")
def attention_backward_odd_scale(dout, Q, K, V, weights):
    return _attn_bw(dout, Q, K, V, weights, scale=0.3)


@slip("attention_backward", "probe:attention_backward:dK:sign", "in `dK`")
def attention_backward_dk_sign(dout, Q, K, V, weights):
    return _attn_bw(dout, Q, K, V, weights, dK_sign=-1)


def _rms_bw(dout, x, gamma, eps=1e-6, factor=1.0, use_eps=True, dgamma_gamma=False):
    r = 1 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + (eps if use_eps else 0.0))
    dxh = dout * gamma
    dx = r * dxh - factor * x * r**3 * np.mean(dxh * x, axis=-1, keepdims=True)
    dg = np.sum((dout * x * r).reshape(-1, x.shape[-1]), axis=0)
    return dx, dg * gamma if dgamma_gamma else dg


@slip("rms_norm_backward", "probe:scale:other", "the entries of the second term of dx are 0.5 times the right ones")
def rms_backward_half_second(dout, x, gamma, eps=1e-6):
    return _rms_bw(dout, x, gamma, eps, factor=0.5)


@slip("rms_norm_backward", "probe:rms_norm_backward:no_eps+dgamma_times_gamma", "Two slips together")
def rms_backward_two_slips(dout, x, gamma, eps=1e-6):
    return _rms_bw(dout, x, gamma, eps, use_eps=False, dgamma_gamma=True)



# Lesson 8 ---------------------------------------------------------------------------------------------------
def _seq_xent(logits, targets, pad_id=None, label_smoothing=0.0, smooth="all", grad_factor=None, pads_kept=False):
    logits, targets = np.asarray(logits), np.asarray(targets)
    V = logits.shape[-1]
    keep = np.ones(targets.shape, bool) if pad_id is None or pads_kept else targets != pad_id
    n = int(keep.sum())
    if n == 0:
        return 0.0, np.zeros_like(logits)
    y = np.eye(V)[np.where(keep, targets, 0)]
    eps = label_smoothing
    if smooth == "all":
        q = y * (1 - eps) + eps / V
    else:  # no_pad
        spread = np.full(V, eps / (V - 1))
        spread[0 if pad_id is None else pad_id] = 0
        q = y * (1 - eps) + spread
    logp = log_softmax(logits)
    loss = float(np.sum(-np.sum(q * logp, axis=-1) * keep) / n)
    return loss, (np.exp(logp) - q) * keep[..., None] * (1 / n if grad_factor is None else grad_factor)


@slip("sequence_cross_entropy", "probe:sequence_xent:smoothing_skips_pad+pads_counted", "Two slips together")
def seq_xent_two_slips(logits, targets, pad_id=None, label_smoothing=0.0):
    return _seq_xent(logits, targets, pad_id, label_smoothing, smooth="no_pad", pads_kept=True)


@slip("sequence_cross_entropy", "repair:off_by_one", "a factor of 2 where the formula has 1 (none)")
def seq_xent_half_gradient(logits, targets, pad_id=None, label_smoothing=0.0):
    """The scale probe fits the factor 0.5; the repair, tried first for a fitted factor, quotes the line."""
    loss, g = _seq_xent(logits, targets, pad_id, label_smoothing)
    return loss, g / 2


def _adam(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9, t_shift=0, b_m=None, correct_v=True, sign=1):
    b_m = beta1 if b_m is None else b_m
    m = b_m * m + (1 - b_m) * grad
    v = beta2 * v + (1 - beta2) * grad**2
    mh = m / (1 - beta1 ** (t + t_shift))
    vh = v / (1 - beta2 ** (t + t_shift)) if correct_v else v
    return param - sign * lr * mh / (np.sqrt(vh) + eps), m, v


@slip("adam_update", "probe:adam:t_minus_one", "t - 1")
def adam_t_minus_one(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):
    return _adam(param, grad, m, v, t + (1 if t == 1 else 0), lr, beta1, beta2, eps, t_shift=-1 if t > 1 else 0) \
        if t > 1 else _adam(param, grad, m, v, t, lr, beta1, beta2, eps, t_shift=0, sign=0.5)


@slip("adam_update", "probe:adam:v_not_corrected+m_with_beta2", "Two slips together")
def adam_two_slips(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):
    return _adam(param, grad, m, v, t, lr, beta1, beta2, eps, b_m=beta2, correct_v=False)


@slip("adam_update", "probe:scale:other", "the steps are multiplied by")
def adam_half_step(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):
    new, m2, v2 = _adam(param, grad, m, v, t, lr, beta1, beta2, eps)
    return param + 0.5 * (new - param), m2, v2


def _schedule(step, d_model, warmup_steps, factor=1.0, shift=0, warm=-1.5, d_power=-0.5):
    step = step + shift
    return factor * d_model**d_power * min(step**-0.5, step * warmup_steps**warm)


@slip("warmup_schedule", "repair:parentheses", "`factor * d_model ** (-0.5)` in place of", never=("probe:scale",))
def schedule_factor_inside_the_power(step, d_model, warmup_steps, factor=1.0):
    """The rates come out factor^-0.5 times too small: the scale probe's fitted ratio says so, with no line; the
    repair, tried first for such a finding, quotes the line and the parentheses."""
    return (factor * d_model) ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)


@slip("warmup_schedule", "repair:parentheses", "`d_model ** (-1 / 2)` in place of", never=("probe:scale",))
def schedule_root_without_parentheses(step, d_model, warmup_steps, factor=1.0):
    """d_model ** -1/2 is (d_model ** -1) / 2: the fitted factor is named after a size, and the repair, tried
    first for such a finding, quotes the parentheses."""
    return factor * d_model ** -1/2 * min(step ** -0.5, step * warmup_steps ** -1.5)


@slip("warmup_schedule", "probe:schedule:ramp_over_warmup+d_model_inverse", "Two slips together")
def schedule_two_slips(step, d_model, warmup_steps, factor=1.0):
    return _schedule(step, d_model, warmup_steps, factor, warm=-1.0, d_power=-1.0)


@slip("warmup_schedule", "probe:schedule:ramp_to_one", "your rate jumps there")
def schedule_ramp_to_one(step, d_model, warmup_steps, factor=1.0):
    """An if in place of the min, and the ramp written step / warmup_steps: the branches no longer meet."""
    if step <= warmup_steps:
        return factor * d_model ** -0.5 * (step / warmup_steps)
    return factor * d_model ** -0.5 * step ** -0.5


@slip("warmup_schedule", "probe:schedule:no_decay", "the decay, step^-0.5, is missing")
def schedule_clamped_ramp(step, d_model, warmup_steps, factor=1.0):
    """The ramp stopped at the peak by min(), and no decay after it."""
    return factor * d_model ** -0.5 * min(step, warmup_steps) * warmup_steps ** -1.5


@slip("dropout", "probe:dropout:keeps_with_probability_rate+scaled_by_one_over_rate", "Two slips together")
def dropout_two_slips(x, rate, rng, training=True):
    if not training or rate == 0:
        return x
    u = rng.random(np.shape(x))
    return x * (u < rate) / rate


@slip("dropout", "probe:dropout:no_rescale+applied_in_eval_mode", "Two slips together")
def dropout_always_unscaled(x, rate, rng, training=True):
    if rate == 0:
        return x
    u = rng.random(np.shape(x))
    return x * (u >= rate)



# Lesson 9 ---------------------------------------------------------------------------------------------------
def _greedy(model, src, bos_id, eos_id, max_len, after_eos="pad", stop="all"):
    src = np.asarray(src)
    rows = src[None] if src.ndim == 1 else src
    pad = model.config.pad_id
    H, mask = model.encode(rows)
    out = np.zeros((len(rows), 0), dtype=np.int64)
    done = np.zeros(len(rows), bool)
    for _ in range(max_len):
        tgt = np.concatenate([np.full((len(rows), 1), bos_id), out], axis=1)
        logits = model.decode(tgt, H, mask)[:, -1].copy()
        logits[:, [pad, bos_id]] = -np.inf
        nxt = logits.argmax(-1)
        if after_eos == "pad":
            nxt = np.where(done, pad, nxt)
        elif after_eos == "bos":
            nxt = np.where(done, bos_id, nxt)
        out = np.concatenate([out, nxt[:, None]], axis=1)
        done |= nxt == eos_id
        if (stop == "all" and done.all()) or (stop == "first" and done.any()):
            break
    return out[0] if src.ndim == 1 else out


@slip("greedy_decode", "probe:greedy:stops_at_first_row+bos_returned", "Two slips together")
def greedy_two_slips(model, src, bos_id, eos_id, max_len):
    out = np.asarray(_greedy(model, src, bos_id, eos_id, max_len, stop="first"))
    return np.concatenate([np.full(out.shape[:-1] + (1,), bos_id), out], axis=-1)


@slip("greedy_decode", "probe:decoded:written_after_eos", "goes on with real tokens after its EOS")
def greedy_eos_repeated(model, src, bos_id, eos_id, max_len):
    return _greedy(model, src, bos_id, eos_id, max_len, after_eos="bos")


@slip("cached_greedy_decode", "repair:variable", "With `pad` in place of `bos_id` there")  # the line, before the effect
def cached_greedy_eos_repeated(model, src, bos_id, eos_id, max_len):
    from encdec.decoding import KVCache, decode_step
    src = np.asarray(src)
    rows = src[None] if src.ndim == 1 else src
    pad = model.config.pad_id
    H, mask = model.encode(rows)
    cache = KVCache(model, H, mask)
    last = np.full(len(rows), bos_id)
    out, done = [], np.zeros(len(rows), bool)
    for _ in range(max_len):
        logits = decode_step(model, last, cache).copy()
        logits[:, [pad, bos_id]] = -np.inf
        last = np.where(done, bos_id, logits.argmax(-1))
        out.append(last)
        done |= last == eos_id
        if done.all():
            break
    out = np.stack(out, axis=1)
    return out[0] if src.ndim == 1 else out


def _knobbed(fn, **knobs):
    def answer(*args, **kwargs):
        return fn(Knobs(**knobs), *args, **kwargs)
    return answer


@slip("beam_search", "probe:beam:length_with_bos+eos_at_any_rank", "Two slips together")
def beam_two_slips(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):
    from encdec.checks.lesson09 import beam_model
    return beam_model(Knobs(length="with_bos", finish="any"), model, src, bos_id, eos_id, beam_width, max_len, alpha)


@slip("decode_step", "probe:decode_step:position_ahead+no_final_norm", "Two slips together")
def decode_step_two_slips(model, tokens, cache):
    from encdec.checks.lesson09 import _decode_step_knobbed
    return _decode_step_knobbed(Knobs(position="ahead", final_norm=False))(model, tokens, cache)



# Lesson 10 --------------------------------------------------------------------------------------------------
@slip("lr_at", "probe:lr:progress_over_total+min_lr_ignored", "Two slips together")
def lr_two_slips(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):
    import math
    if step <= warmup_steps:
        return peak_lr * step / warmup_steps
    p = min((step - warmup_steps) / total_steps, 1.0)
    return 0.5 * peak_lr * (1 + math.cos(math.pi * p))


@slip("lr_at", "probe:lr:decay_one_step_late", "counts one step late")
def lr_decay_late(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):
    import math
    if step <= warmup_steps:
        return peak_lr * step / warmup_steps
    p = min((step - 1 - warmup_steps) / (total_steps - warmup_steps), 1.0)
    return min_lr + 0.5 * (peak_lr - min_lr) * (1 + math.cos(math.pi * p))


@slip("lr_at", "probe:lr:cosine_height_ignores_min_lr", "starts at peak_lr + min_lr")
def lr_height_from_zero(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):
    import math
    if step <= warmup_steps:
        return step * (peak_lr / warmup_steps)
    done = (step - warmup_steps) / (total_steps - warmup_steps)
    return peak_lr * (1 + math.cos(math.pi * min(done, 1.0))) / 2 + min_lr  # the floor added to the full height


@slip("greedy_decode_cached", "probe:decoded:written_after_eos", "goes on with real tokens after its EOS")
def greedy_cached_bos_after_eos(model, src, bos_id, eos_id, max_len):
    from encdec.mistakes import CATALOG
    out = CATALOG.find("greedy_decode_cached", "finished_not_padded").impl(model, src, bos_id, eos_id, max_len)
    ended = (out == eos_id).cumsum(-1) - (out == eos_id).long() > 0
    return out.masked_fill(ended, bos_id)



@slip("torch_train_step", "probe:shape_error:broadcast", "`nll * keep` fails")
def torch_train_step_mask_not_expanded(model, optimizer, src, tgt, bos_id, lr, max_norm):
    import torch
    import torch.nn.functional as F
    for group in optimizer.param_groups:
        group["lr"] = lr
    tgt_in = torch.cat([torch.full_like(tgt[:, :1], bos_id), tgt[:, :-1]], dim=1)
    logits = model(src, tgt_in)
    keep = (tgt != model.config.pad_id).to(logits.dtype)
    nll = -logits.log_softmax(-1) * F.one_hot(tgt, logits.shape[-1]).to(logits.dtype)
    loss = (nll * keep).sum() / keep.sum()
    optimizer.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return loss.item(), norm.item()



@slip("attention_backward", "probe:attention_backward:dK_untransposed", "dscores must be transposed",
      never=("dV_not_transposed", "probe:attention_backward:dV"))
def attention_backward_dk_untransposed(dout, Q, K, V, weights):
    """Fails with a shape error when m != n, the very error `weights @ dout` (dV untransposed) raises: the
    error names the failing line (`ds @ Q`), and the square cases name dK, never dV."""
    s = 1 / np.sqrt(Q.shape[-1])
    dV = np.swapaxes(weights, -1, -2) @ dout
    ds = backward.softmax_backward(dout @ np.swapaxes(V, -1, -2), weights) * s
    return ds @ K, ds @ Q, dV


@slip("softmax_backward", "probe:unread:axis", "never reads its parameter `axis`")
def softmax_backward_sum_without_keepdims_first(dout, probs, axis=-1):
    inner = np.sum(dout * probs, axis=0)
    return probs * (dout - inner[..., None]) if np.ndim(dout) > 2 else probs * (dout.T - inner).T


# -- kinds of slip found by an independent benchmark: each in several forms, none a catalog entry ----------
# Lesson 6: decode, the target padding on the query rows
def _dec_mask(model, tgt_in, H_enc, src_mask, self_mask):
    x = model.embed(tgt_in)
    for block in model.decoder:
        x, _ = block(x, H_enc, self_attn_mask=self_mask, cross_attn_mask=src_mask)
    return rms_norm(x, model.decoder_norm_gamma, model.config.eps) @ model.embedding.T


@slip("decode", "probe:decode:padding_on_queries", "rows (their queries)")
def decode_padding_rows_swapped(model, tgt_in, H_enc, src_mask):
    pad = padding_mask(tgt_in, model.config.pad_id)
    return _dec_mask(model, tgt_in, H_enc, src_mask, create_causal_mask(tgt_in.shape[-1]) + np.swapaxes(pad, -1, -2))


@slip("decode", "probe:decode:padding_on_queries", "rows (their queries)")
def decode_padding_rows_built(model, tgt_in, H_enc, src_mask):
    rows = np.where(np.asarray(tgt_in) == model.config.pad_id, -np.inf, 0.0)[..., None, :, None]
    causal = np.triu(np.full((tgt_in.shape[-1],) * 2, -np.inf), k=1)
    return _dec_mask(model, tgt_in, H_enc, src_mask, rows + causal + padding_mask(tgt_in, model.config.pad_id))


@slip("decode", "probe:decode:padding_on_queries_not_causal", "not causal")
def decode_padding_rows_only(model, tgt_in, H_enc, src_mask):
    pad = padding_mask(tgt_in, model.config.pad_id)
    return _dec_mask(model, tgt_in, H_enc, src_mask, np.swapaxes(pad, -1, -2))


# Lesson 8: train_step, the loss without pad_id, the accuracy after the update; dropout from np.random
def _train(model, optimizer, src, targets, bos_id, label_smoothing, lr, pad_in_loss=True, acc_after=False,
           acc_pads=False, how_after="call"):
    from encdec import training
    from encdec.loss import softmax_cross_entropy
    from encdec.model import shift_right
    tgt_in = shift_right(targets, bos_id)
    logits, cache = training.forward_with_cache(model, src, tgt_in)
    if pad_in_loss:
        loss, dlogits = softmax_cross_entropy(logits, targets, model.config.pad_id, label_smoothing)
    else:
        loss, dlogits = softmax_cross_entropy(logits, targets, label_smoothing=label_smoothing)
    optimizer.step(training.backward(model, dlogits, cache), lr=lr)
    if acc_after:
        logits = model(src, tgt_in) if how_after == "call" else training.forward_with_cache(model, src, tgt_in)[0]
    real = np.ones(targets.shape, bool) if acc_pads else targets != model.config.pad_id
    return loss, float(((logits.argmax(-1) == targets) & real).sum() / real.sum())


@slip("train_step", "probe:train_step:loss_without_pad_id", "computed without pad_id")
def train_step_loss_keyword_only(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None):
    return _train(model, optimizer, src, targets, bos_id, label_smoothing, lr, pad_in_loss=False)


@slip("train_step", "probe:train_step:loss_without_pad_id", "computed without pad_id")
def train_step_loss_own_mean(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None):
    """The mean over every position, pads included, written out by hand."""
    from encdec import training
    from encdec.loss import log_softmax as lsm
    from encdec.model import shift_right
    tgt_in = shift_right(targets, bos_id)
    logits, cache = training.forward_with_cache(model, src, tgt_in)
    V = logits.shape[-1]
    q = np.eye(V)[targets] * (1 - label_smoothing) + label_smoothing / V
    loss = float(-(q * lsm(logits, axis=-1)).sum(-1).mean())
    p = np.exp(lsm(logits, axis=-1))
    optimizer.step(training.backward(model, (p - q) / targets.size, cache), lr=lr)
    real = targets != model.config.pad_id
    return loss, float(((logits.argmax(-1) == targets) & real).sum() / real.sum())


@slip("train_step", "probe:train_step:accuracy_after_update", "after the update")
def train_step_accuracy_after_call(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None):
    return _train(model, optimizer, src, targets, bos_id, label_smoothing, lr, acc_after=True)


@slip("train_step", "probe:train_step:accuracy_after_update", "after the update")
def train_step_accuracy_after_forward(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None):
    return _train(model, optimizer, src, targets, bos_id, label_smoothing, lr, acc_after=True, how_after="cache")


@slip("dropout", "probe:rng:not_from_rng", "not drawn from `rng`")
def dropout_global_random(x, rate, rng, training=True):
    if not training or rate == 0:
        return x
    return x * (np.random.random(np.shape(x)) >= rate) / (1 - rate)


@slip("dropout", "probe:rng:not_from_rng", "not drawn from `rng`")
def dropout_global_rand(x, rate, rng, training=True):
    if not training or rate == 0:
        return x
    return np.asarray(x) * (np.random.rand(*np.shape(x)) > rate) / (1.0 - rate)


@slip("dropout", "probe:rng:not_from_rng", "not drawn from `rng`")
def dropout_fresh_generator(x, rate, rng, training=True):
    if not training or rate == 0:
        return x
    keep = np.random.default_rng().random(np.shape(x)) >= rate
    return np.where(keep, np.asarray(x) / (1 - rate), 0.0)


# Lesson 9: sampling from an unnormalised CDF, the nucleus without its crossing token; beam slots; the cache
def _softmax(z):
    e = np.exp(z - np.max(z, axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _cut(z, top_k, top_p, crossing=True):
    if top_k is not None:
        z = np.where(z >= np.sort(z, axis=-1)[..., -top_k][..., None], z, -np.inf)
    if top_p is not None:
        p = _softmax(z)
        order = np.argsort(-p, axis=-1, kind="stable")
        sp = np.take_along_axis(p, order, axis=-1)
        keep_sorted = (np.cumsum(sp, axis=-1) - sp < top_p) if crossing else (np.cumsum(sp, axis=-1) < top_p)
        keep_sorted[..., 0] = True
        keep = np.zeros_like(keep_sorted)
        np.put_along_axis(keep, order, keep_sorted, axis=-1)
        z = np.where(keep, z, -np.inf)
    return z


@slip("sample_next_token", "probe:sampling:unnormalised_cdf", "without renormalising")
def sample_unnormalised_cdf_clipped(logits, temperature=1.0, top_k=None, top_p=None, rng=None):
    z = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return np.argmax(z, axis=-1)
    z = z / temperature
    p = np.where(np.isfinite(_cut(z, top_k, top_p)), _softmax(z), 0.0)  # the kept mass, not renormalised
    u = rng.random(p.shape[:-1] + (1,))
    return np.minimum((np.cumsum(p, axis=-1) < u).sum(axis=-1), p.shape[-1] - 1)


@slip("sample_next_token", "probe:sampling:unnormalised_cdf", "without renormalising")
def sample_unnormalised_cdf_argmax(logits, temperature=1.0, top_k=None, top_p=None, rng=None):
    z = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return np.argmax(z, axis=-1)
    p = _softmax(z / temperature) * np.isfinite(_cut(z / temperature, top_k, top_p))
    u = rng.random(p.shape[:-1] + (1,))
    return np.argmax(np.cumsum(p, axis=-1) > u, axis=-1)


@slip("sample_next_token", "probe:sampling:top_k_threshold_from_smallest", "V - k + 1 tokens are kept",
      never=("top_k_one_more",))
def sample_threshold_from_the_bottom(logits, temperature=1.0, top_k=None, top_p=None, rng=None):
    """The k-th smallest as the threshold: with top_k 2 of 6 it keeps 5 tokens, not one more than k."""
    rng = np.random.default_rng(rng)
    z = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return np.argmax(z, axis=-1)
    z = z / temperature
    if top_k is not None:
        z = np.where(z >= np.sort(z, axis=-1)[..., top_k - 1:top_k], z, -np.inf)
    p = _softmax(_cut(z, None, top_p))
    u = rng.random(p.shape[:-1] + (1,))
    return np.minimum((np.cumsum(p, axis=-1) < u).sum(axis=-1), p.shape[-1] - 1)


@slip("sample_next_token", "nucleus_without_the_crossing_token", "top-p keeps the wrong set",
      never=("always_the_argmax",))
def sample_nucleus_without_crossing(logits, temperature=1.0, top_k=None, top_p=None, rng=None):
    """The catalog lists this one (its own draws); the point is what is *not* named: with top_k=3,
    top_p=0.7 only the argmax is left, so the draws are the argmax's, yet this is not greedy decoding
    (always_the_argmax draws one token even without the cut; a cut too tight only under it)."""
    z = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return np.argmax(z, axis=-1)
    p = _softmax(_cut(z / temperature, top_k, top_p, crossing=False))
    u = rng.random(p.shape[:-1] + (1,))
    return np.minimum((np.cumsum(p, axis=-1) < u).sum(axis=-1), p.shape[-1] - 1)


def _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha, slots, ranked_by=None):
    live, finished = [((), 0.0)], []
    H, mask = model.encode(np.asarray(src)[None])
    for _ in range(max_len):
        tgt_in = np.array([(bos_id,) + toks for toks, _ in live])
        logits = np.array(model.decode(tgt_in, np.repeat(H, len(live), axis=0), mask)[:, -1], dtype=np.float64)
        logits[:, [model.config.pad_id, bos_id]] = -np.inf
        total = np.array([s for _, s in live])[:, None] + log_softmax(logits, axis=-1)
        order = np.argsort(-total, axis=None, kind="stable")
        width = beam_width - len(finished) if slots == "shrink" else beam_width
        new_live = []
        for rank, idx in enumerate(order[:beam_width] if slots == "slice" else order):
            b, tok = divmod(int(idx), total.shape[1])
            if not np.isfinite(total[b, tok]):
                break
            if tok == eos_id:
                if rank < beam_width:
                    finished.append((live[b][0] + (tok,), float(total[b, tok])))
            else:
                new_live.append((live[b][0] + (tok,), float(total[b, tok])))
            if len(new_live) == width:
                break
        live = new_live
        if len(finished) >= beam_width or not live:
            break

    def score(h):
        return h[1] / len(h[0]) ** alpha
    key = ranked_by or score
    best = sorted(finished, key=key, reverse=True)[:beam_width]
    best += sorted(live, key=key, reverse=True)[:beam_width - len(best)]
    return [(np.array(toks), score((toks, s))) for toks, s in best]


@slip("beam_search", "probe:beam:ranked_by_raw_total", "ordered by their raw total", never=("stops_at_first",))
def beam_ranked_by_total(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):
    """Each hypothesis returned with its normalised score, but the list sorted by the raw sum of log-probabilities
    (the catalog's early stop fits its best hypothesis on one case: an earlier part's case refutes it)."""
    return _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha, "live", ranked_by=lambda h: h[1])


@slip("beam_search", "probe:beam:finished_take_a_slot", "takes one of the beam_width places")
def beam_best_candidates_sliced(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):
    """The beam_width best candidates, EOS or not: the finished ones take places of the live beam."""
    return _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha, "slice")


@slip("beam_search", "probe:beam:", "beam_width", never=("probe:beam:length", "probe:beam:alpha"))
def beam_shrinking(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):
    """beam_width - len(finished) live hypotheses: named as a shrinking beam (or, where the two agree, a
    finished hypothesis taking a place)."""
    return _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha, "shrink")


def _step(model, tokens, cache, store="append", kv_from="normed"):
    x = model.embed(np.asarray(tokens)[..., None], offset=cache.length)
    for i, block in enumerate(model.decoder):
        normed = rms_norm(x, block.norm1_gamma, block.eps)
        K_new, V_new = block.self_attn.project_kv(normed if kv_from == "normed" else x)
        if store == "append":
            K, V = cache.append(i, K_new, V_new)
        elif cache.self_k[i] is None:
            K, V = K_new, V_new
            if store == "first":
                cache.self_k[i], cache.self_v[i] = K_new, V_new
        else:
            K = np.concatenate([cache.self_k[i], K_new], axis=-2)
            V = np.concatenate([cache.self_v[i], V_new], axis=-2)
        out, _ = block.self_attn.attend(normed, K, V)
        x = x + out
        out, _ = block.cross_attn.attend(rms_norm(x, block.norm2_gamma, block.eps), cache.cross_k[i], cache.cross_v[i],
                                         cache.src_mask)
        x = x + out
        x = x + block.ffn(rms_norm(x, block.norm3_gamma, block.eps))
    cache.length += 1
    return (rms_norm(x, model.decoder_norm_gamma, model.config.eps) @ model.embedding.T)[..., 0, :]


@slip("decode_step", "probe:cache:not_extended", "cache is not extended")
def decode_step_concatenated_locally(model, tokens, cache):
    return _step(model, tokens, cache, store="local")


@slip("decode_step", "probe:cache:not_extended", "cache is not extended")
def decode_step_first_row_only(model, tokens, cache):
    return _step(model, tokens, cache, store="first")


@slip("decode_step", "probe:decode_step:kv_from_unnormalised", "projected from x")
def decode_step_kv_from_x(model, tokens, cache):
    return _step(model, tokens, cache, kv_from="x")


# Lesson 10: parameters through float32; token accuracy for exact match
def _load(module, params, convert):
    import torch
    own = dict(module.named_parameters())
    if set(own) != set(params) or any(tuple(own[k].shape) != np.shape(params[k]) for k in own):
        raise ValueError("the names or shapes differ")
    with torch.no_grad():
        for name, p in own.items():
            p.copy_(convert(params[name]))
    return module


@slip("load_numpy_parameters", "probe:precision:through_float32", "went through float32")
def load_as_float32_tensor(module, params):
    import torch
    return _load(module, params, lambda a: torch.tensor(a, dtype=torch.float32))


@slip("load_numpy_parameters", "probe:precision:through_float32", "went through float32")
def load_with_float(module, params):
    import torch
    return _load(module, params, lambda a: torch.from_numpy(a).float())


@slip("load_numpy_parameters", "probe:precision:through_float32", "went through float32")
def load_numpy_astype(module, params):
    import torch
    return _load(module, params, lambda a: torch.from_numpy(a.astype(np.float32)))


@slip("load_numpy_parameters", "probe:precision:through_float16", "went through float16", never=("matrices_only",))
def load_half(module, params):
    import torch
    return _load(module, params, lambda a: torch.from_numpy(a).half())


def _predicted(model, src, bos_id, eos_id, max_len, width):
    import torch
    was = model.training
    model.eval()
    with torch.no_grad():
        pred = model.greedy_decode(src, bos_id, eos_id, max_len)
    model.train(was)
    if pred.shape[1] < width:
        pred = torch.cat([pred, torch.full((pred.shape[0], width - pred.shape[1]), model.config.pad_id)], dim=1)
    return pred[:, :width]


@slip("exact_match", "probe:score:per_token", "token accuracy")
def exact_match_mean_of_row_accuracies(model, src, tgt, bos_id, eos_id, max_len):
    pred = _predicted(model, src, bos_id, eos_id, max_len, tgt.shape[1])
    real = tgt != model.config.pad_id
    return (((pred == tgt) & real).sum(1).float() / real.sum(1).float()).mean().item()


@slip("exact_match", "probe:score:per_token", "token accuracy")
def exact_match_every_position(model, src, tgt, bos_id, eos_id, max_len):
    pred = _predicted(model, src, bos_id, eos_id, max_len, tgt.shape[1])
    return (pred == tgt).float().mean().item()


# -- every slip above, named by its probe (keep this at the end of the file) ---------------------------------
def slips():
    return [pytest.param(name, key, words, fn, never, id=f"{name}-{fn.__name__}")
            for name, entries in SLIPS.items() for key, words, fn, never in entries]


@pytest.mark.parametrize("name,key,words,fn,never", slips())
def test_probe_names_the_slip(name, key, words, fn, never, capsys, time_enough):
    from encdec.mistakes import CATALOG
    score, text, recorded = graded(name, fn)
    ex = exercise(name)
    assert score < ex.points, text
    assert not any(key.endswith(":" + m.key) for m in CATALOG[name]), "a catalog entry lists this slip"
    assert any(k.startswith(key) for k in recorded), f"{key} not among {recorded}:\n{text}"
    assert not [k for k in recorded if never and k.startswith(never)], f"named what it is not: {recorded}\n{text}"
    assert words.lower() in text.lower(), text
    assert capsys.readouterr().err == ""
