"""What Exercise 9.2's check says of draws that do not fit: the catalog mistake that draws like the
answer (_sampling_diagnosis), else the kind of slip whose distribution the draws fit (_sampling_probe,
from the knob model _distribution and the unrenormalised cumulative sums)."""

import numpy as np

from ... import decoding
from ..fixtures import generator
from ..probes import Finding, combos
from .sampling_draws import N_DRAWS, _as_ids, _close, _close_two, _frequencies, _one_token


def _greedy_whatever_the_cut(m, tiled, case, V):
    """A catalog mistake that draws one token every time even with top_k and top_p left out (argmax
    decoding): under a cut its draws are also those of a cut too tight, so it must not name them."""
    plain = {k: v for k, v in case.kwargs.items() if k not in ("top_k", "top_p")}
    value, merr = m.run((tiled,), dict(plain, rng=generator(case.seed)))
    if merr is not None:
        return False
    ids, problem = _as_ids(value, V, (N_DRAWS,))
    return problem is None and _one_token(ids, V)


def _draws_alike(m, case, freqs):
    """True when the catalog mistake `m` draws like the answer (its frequencies `freqs`) on `case`."""
    V = len(case.logits)
    tiled = np.repeat(case.logits[None, :], N_DRAWS, axis=0)
    value, merr = m.run((tiled,), dict(case.kwargs, rng=generator(case.seed)))
    if merr is not None:
        return False
    ids, problem = _as_ids(value, V, (N_DRAWS,))
    return problem is None and _close_two(freqs, _frequencies(ids, V), N_DRAWS)


def _sampling_diagnosis(c, freqs, error, case, catalog, others=()):
    """The diagnosis of the first catalog mistake that draws like the student (or fails alike), and like the
    student on the other cases where the student's draws do not fit (`others`: (case, frequencies)): a
    mistake that matches one case by coincidence of its numbers (the temperature multiplied, where the
    answer applies it after the cut) is not named."""
    V = len(case.logits)
    tiled = np.repeat(case.logits[None, :], N_DRAWS, axis=0)
    if error is not None:  # only a mistake failing with the very same message
        for m in catalog:
            _, merr = m.run((tiled,), dict(case.kwargs, rng=generator(case.seed)))
            if merr is not None and type(merr) is type(error) and str(merr) == str(error):
                return c.likely_cause(m)
        return ""
    cut = case.kwargs.get("top_k") is not None or case.kwargs.get("top_p") is not None
    for m in catalog:
        value, merr = m.run((tiled,), dict(case.kwargs, rng=generator(case.seed)))
        if merr is not None:
            continue
        ids, problem = _as_ids(value, V, (N_DRAWS,))
        if problem is None and cut and _one_token(ids, V) and _greedy_whatever_the_cut(m, tiled, case, V):
            continue  # greedy draws under a cut: a cut too tight draws that way too, so they say nothing
        if problem is None and _close_two(freqs, _frequencies(ids, V), N_DRAWS) \
                and all(_draws_alike(m, other, f) for other, f in others if other is not case):
            return c.likely_cause(m)
    return ""


def _distribution(logits, temperature=1.0, top_k=None, top_p=None, *, temp="divide", k_shift=0, k_from="largest",
                  nucleus="before", order="k_then_p", ties="kept"):
    """next_token_distribution with knobs: temp ("divide"; "multiply": logits * T; "none": T ignored;
    "after": the top-k/top-p sets chosen at temperature 1), k_shift (top_k + shift kept), k_from ("largest";
    "smallest": the threshold is the k-th smallest, so V - k + 1 tokens are kept), nucleus
    ("before": a token is kept while the mass before it is < top_p; "inclusive": while the mass up to it
    is < top_p, so the crossing token is dropped; "le": mass before it <= top_p, one token more on a tie;
    "none": top_p ignored), order ("k_then_p"; "p_then_k"), ties ("kept": every token tied with the k-th largest
    stays; "last": exactly k positions, an ascending argsort's last k, so a tie keeps the later ids; "first": a
    descending argsort's first k, the earlier ids)."""
    logits = np.asarray(logits, dtype=np.float64)
    V = logits.shape[-1]
    if temperature == 0:
        return np.eye(V)[np.argmax(logits, axis=-1)]
    z = {"divide": logits / temperature, "multiply": logits * temperature, "none": logits,
         "after": logits}[temp]
    chooser = logits if temp == "after" else z

    def top_k_set(allowed):
        if top_k is None:
            return allowed
        kk = min(max(top_k + k_shift, 1), V)
        kk = kk if k_from == "largest" else V - kk + 1
        masked = np.where(allowed, chooser, -np.inf)
        if ties != "kept":
            ranked = np.argsort(masked, axis=-1, kind="stable")[..., V - kk:] if ties == "last" else \
                np.argsort(-masked, axis=-1, kind="stable")[..., :kk]
            chosen = np.zeros(masked.shape, dtype=bool)
            np.put_along_axis(chosen, ranked, True, axis=-1)
            return allowed & chosen
        kth = np.sort(masked, axis=-1)[..., V - kk][..., None]
        return allowed & (masked >= kth)

    def top_p_set(allowed):
        if top_p is None or nucleus == "none":
            return allowed
        probs = decoding.softmax(np.where(allowed, chooser, -np.inf), axis=-1)
        order_ = np.argsort(-probs, axis=-1, kind="stable")
        sp = np.take_along_axis(probs, order_, axis=-1)
        cum = np.cumsum(sp, axis=-1)
        before = cum - sp
        keep_sorted = {"before": before < top_p, "inclusive": cum < top_p, "le": before <= top_p}[nucleus]
        keep_sorted[..., 0] = True
        keep = np.zeros_like(keep_sorted)
        np.put_along_axis(keep, order_, keep_sorted, axis=-1)
        return allowed & keep

    allowed = np.ones(logits.shape, dtype=bool)
    allowed = top_p_set(top_k_set(allowed)) if order == "k_then_p" else top_k_set(top_p_set(allowed))
    return decoding.softmax(np.where(allowed, z, -np.inf), axis=-1)


SAMPLING_CHOICES = [
    ("temp", [("divide", "", ""),
              ("multiply", "temperature_multiplies", "the logits are multiplied by the temperature instead of divided "
                                                     "(softmax(logits / T): T < 1 sharpens, T > 1 flattens)"),
              ("none", "temperature_ignored", "the temperature has no effect"),
              ("after", "sets_at_temperature_one", "the top-k / top-p sets are chosen at temperature 1, before "
                                                   "dividing by T")]),
    ("k_shift", [(0, "", ""), (-1, "top_k_one_less", "one token fewer than top_k is kept"),
                 (1, "top_k_one_more", "one token more than top_k is kept")]),
    ("k_from", [("largest", "", ""),
                ("smallest", "top_k_threshold_from_smallest",
                 "the threshold is the k-th smallest logit, not the k-th largest, so V - k + 1 tokens are kept, not k "
                 "(an ascending np.sort read at index k - 1): read it at index -k")]),
    ("ties", [("kept", "", ""),
              ("last", "top_k_drops_a_tie", "exactly top_k positions are kept (an argsort's last k), so of the tokens "
                                            "tied with the k-th largest logit only some stay; every token whose logit "
                                            "is at least the k-th largest stays: compare with that value (z >= kth)"),
              ("first", "top_k_drops_a_tie", "exactly top_k positions are kept (an argsort's first k), so of the tokens "
                                             "tied with the k-th largest logit only some stay; every token whose logit "
                                             "is at least the k-th largest stays: compare with that value (z >= kth)")]),
    ("nucleus", [("before", "", ""),
                 ("inclusive", "nucleus_drops_crossing_token", "the nucleus stops before the token that takes the mass "
                                                               "to top_p (that token must stay)"),
                 ("le", "nucleus_one_more_on_a_tie", "the nucleus keeps a token whose mass before it equals top_p "
                                                     "(keep while the mass before is < top_p, strictly)"),
                 ("none", "nucleus_ignored", "top_p has no effect")]),
    ("order", [("k_then_p", "", ""), ("p_then_k", "top_p_before_top_k", "the nucleus is chosen before top-k")]),
]
SAMPLING_RIGHT = ("The distribution is softmax(logits / T), cut to the top_k most probable tokens, then to the smallest "
                  "set of most probable tokens whose mass reaches top_p, renormalised.")


def _unnormalised_cdf(logits, temperature=1.0, top_k=None, top_p=None, *, renormalised="none", leftover="last"):
    """The draw u = rng.random() looked up in the cumulative sum of probabilities that the cut did not
    renormalise: the kept probabilities are drawn as they are, and the mass left over (u beyond the last
    cumulative value) lands on the last token (an index clipped to V - 1, or the last entry of a
    searchsorted), or on token 0 (np.argmax(cdf > u) when no entry is above u). renormalised: "none" (the
    probabilities of the full softmax, cut), "top_k" (renormalised after top-k, the nucleus not)."""
    p = decoding.next_token_distribution(logits, temperature, top_k, top_p)
    kept = p > 0
    z = np.asarray(logits, dtype=np.float64) / temperature
    base = decoding.softmax(z, axis=-1)
    if renormalised == "top_k":
        if top_k is None or top_p is None:
            raise LookupError("nothing to renormalise between the cuts")
        base = decoding.next_token_distribution(logits, temperature, top_k, None)
    q = np.where(kept, base, 0.0)
    rest = 1.0 - q.sum(axis=-1)
    q[..., -1 if leftover == "last" else 0] += rest
    return q


UNNORMALISED_CDF = [
    (f"unnormalised_cdf:{renorm}:{where}", dict(renormalised=renorm, leftover=where),
     "the draw is read from the cumulative sum of the kept probabilities without renormalising them"
     + (" after top-p" if renorm == "top_k" else "") + ": that sum ends below 1, so whenever u = rng.random() is "
     "above it the draw falls past the kept tokens (here onto token " + ("V - 1" if where == "last" else "0")
     + "). Renormalise the kept probabilities (divide by their sum, or set the dropped logits to -inf and take the "
     "softmax again) before the cumulative sum.")
    for renorm in ("none", "top_k") for where in ("last", "first")]


def _sampling_probe(c, freqs, case):
    """A kind of slip whose distribution the draws fit (when no catalog entry does), as a likely cause."""
    p = decoding.next_token_distribution(case.logits, **case.kwargs)
    for key, knobs, diagnosis in [o for o in combos(SAMPLING_CHOICES, SAMPLING_RIGHT) if o[0].count("+") < 2] \
            + UNNORMALISED_CDF:
        try:
            if key.startswith("unnormalised_cdf"):
                q = _unnormalised_cdf(case.logits, **case.kwargs, **knobs)
            else:
                q = _distribution(case.logits, **case.kwargs, **knobs)
        except Exception:
            continue
        if np.allclose(q, p, atol=1e-3):
            continue  # not a slip on this case
        if np.all((freqs == 0) | (q > 0)) and _close(freqs, q, N_DRAWS):
            return c.likely_cause(Finding(c.name, f"probe:sampling:{key}", diagnosis))
    return ""
