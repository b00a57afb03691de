"""Exercise 9.2, sample_next_token: the checker, its shapes-and-seed part, and the parts that judge
many draws from one seeded generator by the allowed set and the frequencies."""

import numpy as np

from ... import decoding
from ...mistakes import CATALOG
from ..cases import Case
from ..causes import with_cause
from ..comparing import compare
from ..core import Checker
from ..exercises import Exercise
from ..fixtures import generator
from ..probes import Probes, Property
from ..running import run_student
from .sampling_draws import LOGITS, N_DRAWS, _as_ids, _close, _fmt_p, _frequencies, sampling_cases
from .sampling_slips import _sampling_diagnosis, _sampling_probe


class DividedByZero(Property):
    """Temperature 0 taken through the division: logits / 0 gives inf and nan, and the draw is garbage."""

    kind = "temperature"

    def inspect(self, attempt, probes):
        if attempt.case.kwargs.get("temperature") != 0:
            return None
        with np.errstate(divide="warn", invalid="warn"):  # the probes run with NumPy's warnings off
            outcome = attempt.rerun(attempt.args(), attempt.kwargs())
        if not any("divide" in w for w in outcome.warnings):
            return None
        return self.finding(attempt, "zero_divided", (
            "at temperature 0 your code divides the logits by 0 (NumPy warns: divide by zero), which gives inf and "
            "nan, so what it draws is not the argmax. Temperature 0 is the limit, not a division: handle it first, "
            "`if temperature == 0: return np.argmax(logits, axis=-1)`, then divide for T > 0."))


def _one_at_a_time(fn, case, forbidden):
    """N_DRAWS single draws from the (V,) row, for an answer that cannot do a batch of rows."""
    rng = generator(case.seed)

    def draws():
        return np.array([np.asarray(fn(case.logits, rng=rng, **case.kwargs)).item() for _ in range(N_DRAWS)])
    return run_student(draws, (), {}, forbidden)


def _check_sampling(c, label, fn, cases, catalog, forbidden):
    """One part: for each case, the draws stay in the allowed set and match its probabilities.

    The draws come from one call on N_DRAWS copies of the row; an answer that cannot take a batch
    (the shapes part already says so) is asked N_DRAWS times for one draw instead."""
    if c.stopped:
        return False
    cases = c.to_run(cases)
    for case in cases:
        V = len(case.logits)
        p = decoding.next_token_distribution(case.logits, **case.kwargs)
        tiled = np.repeat(case.logits[None, :], N_DRAWS, axis=0)
        outcome = run_student(fn, (tiled,), dict(case.kwargs, rng=generator(case.seed)), forbidden)
        if not outcome.delegated and (outcome.error is not None or _as_ids(outcome.value, V, (N_DRAWS,))[1]):
            single = _one_at_a_time(fn, case, forbidden)
            if single.error is None and not _as_ids(single.value, V, (N_DRAWS,))[1]:
                outcome = single
        c._absorb(outcome, case.label)
        where = f"[{case.label}: {case.describe()}, {N_DRAWS} draws]"
        if outcome.error is not None:
            msg = c._explain_error(outcome)
            if outcome.delegated or isinstance(outcome.error, NotImplementedError):
                return c.part(label, False, c.stopped, cases=cases, failed=case)
            diagnosis = _sampling_diagnosis(c, None, outcome.error, case, catalog)
            return c.part(label, False, with_cause(f"{where} {msg}", diagnosis), cases=cases, failed=case)
        ids, problem = _as_ids(outcome.value, V, (N_DRAWS,))
        if problem:
            return c.part(label, False, f"{where} {problem}", cases=cases, failed=case)
        freqs = _frequencies(ids, V)
        outside = np.flatnonzero((freqs > 0) & (p == 0))
        if outside.size:
            allowed = [int(i) for i in np.flatnonzero(p > 0)]
            problem = (f"token {int(outside[0])} was drawn {_fmt_p(freqs[outside[0]])} of the time, but only "
                       f"tokens {allowed} may be drawn here")
        elif not _close(freqs, p, N_DRAWS):
            worst = int(np.argmax(np.abs(freqs - p) / np.sqrt(p * (1 - p) / N_DRAWS + 1e-12)))
            problem = (f"token {worst} was drawn {_fmt_p(freqs[worst])} of the time; its probability is "
                       f"{_fmt_p(p[worst])} (expected frequencies {[_fmt_p(x) for x in p]})")
        if problem:
            diagnosis = (_sampling_diagnosis(c, freqs, None, case, catalog, _misfits(c, fn, forbidden))
                         or _sampling_probe(c, freqs, case))
            return c.part(label, False, with_cause(f"{where} {problem}", diagnosis), cases=cases, failed=case)
    return c.part(label, True, cases=cases)


def _misfits(c, fn, forbidden):
    """(case, the answer's frequencies) for every sampling case the check runs where the answer's draws do not
    fit the case's probabilities: what a catalog mistake named on one case must draw like too. Kept on the
    checker, computed once."""
    if getattr(c, "_misfits", None) is None:
        c._misfits = []
        for case in c.to_run([case for group in sampling_cases().values() for case in group]):
            V = len(case.logits)
            tiled = np.repeat(case.logits[None, :], N_DRAWS, axis=0)
            outcome = run_student(fn, (tiled,), dict(case.kwargs, rng=generator(case.seed)), forbidden)
            ids, problem = (None, True) if outcome.error is not None else _as_ids(outcome.value, V, (N_DRAWS,))
            if problem:
                continue
            freqs = _frequencies(ids, V)
            p = decoding.next_token_distribution(case.logits, **case.kwargs)
            if not _close(freqs, p, N_DRAWS):
                c._misfits.append((case, freqs))
    return c._misfits


SAMPLE_NEXT_TOKEN = Exercise("9.2", "sample_next_token", points=3, reference=decoding.sample_next_token,
                             reads=("temperature", "top_k", "top_p"))


@SAMPLE_NEXT_TOKEN.checked_by
def check_sample_next_token(sample_next_token=None, *, points=None, hidden=False):
    """One draw per row from softmax(logits / T), restricted by top-k and top-p."""
    c = Checker(SAMPLE_NEXT_TOKEN, points, hidden)
    fn = c.find(sample_next_token, "sample_next_token")
    catalog = CATALOG["sample_next_token"]
    forbidden = [decoding.sample_next_token, decoding.next_token_distribution]
    if not c.stopped:
        _check_shapes_and_seed(c, fn, catalog, forbidden)
    cases = sampling_cases()
    _check_sampling(c, "plain sampling (temperature 1)", fn, cases["plain"], catalog, forbidden)
    _check_sampling(c, "temperature", fn, cases["temperature"], catalog, forbidden)
    _check_sampling(c, "top-k", fn, cases["top_k"], catalog, forbidden)
    _check_sampling(c, "top-p (the nucleus)", fn, cases["top_p"], catalog, forbidden)
    _check_sampling(c, "top-k and top-p together", fn, cases["both"], catalog, forbidden)
    return c.result()


def _check_shapes_and_seed(c, fn, catalog, forbidden):
    """Shapes (..., V) -> (...), temperature 0 is the argmax, and the rng decides the draws."""
    r = generator(91)
    V = len(LOGITS)
    problems = []
    for shape in [(), (5,), (2, 3)]:
        logits = r.normal(size=shape + (V,))
        out = run_student(fn, (logits,), {"rng": generator(1)}, forbidden)
        c._absorb(out, f"logits of shape {logits.shape}")
        if out.error is not None:
            if out.delegated or isinstance(out.error, NotImplementedError):
                c._explain_error(out)
                return c.part("one id per row of logits", False, c.stopped)
            problems.append(f"[logits of shape {logits.shape}] {c._explain_error(out)}")
        else:
            _, problem = _as_ids(out.value, V, shape)
            if problem:
                problems.append(f"[logits of shape {logits.shape}] {problem}")
        if problems:
            if shape:
                problems[0] += ("\n      A batch of rows needs one draw per row: rng.choice takes one 1-D distribution "
                                "at a time, so loop over the rows, or draw every row at once with the inverse CDF "
                                "(section 9.3).")
            break
    c.part("one id per row of logits: (V,) gives one id, (B, V) gives (B,), (2, 3, V) gives (2, 3)",
           not problems, problems[0] if problems else "")
    cases = [Case("temperature=0 on 7 logits", (r.normal(size=7) * 3,), {"temperature": 0.0, "rng": generator(2)}),
             Case("temperature=0 on large logits (about 1000)", (r.normal(size=9) * 1e3,),
                  {"temperature": 0.0, "rng": generator(4)}),
             Case("temperature=0 on a batch of logits (2, 3, 7): one id per row", (r.normal(size=(2, 3, 7)) * 3,),
                  {"temperature": 0.0, "rng": generator(5)}, hidden=True)]
    c.check_cases("temperature=0 picks the most probable token (no randomness)", fn,
                  lambda x, temperature, rng: np.argmax(x, axis=-1), cases, catalog=catalog, forbidden=forbidden,
                  probes=Probes(None, DividedByZero()))
    first = run_student(fn, (np.repeat(LOGITS[None], 50, axis=0),), {"rng": generator(3)}, forbidden)
    again = run_student(fn, (np.repeat(LOGITS[None], 50, axis=0),), {"rng": generator(3)}, forbidden)
    if first.error is None and again.error is None:
        same = compare(again.value, first.value) is None
        c.part("the rng argument decides the draws (the same seed gives the same tokens)", same,
               "" if same else "two calls with generators of the same seed drew different tokens: draw your "
               "random numbers from `rng` (rng.random(...) or rng.choice(...)), not from np.random.")
