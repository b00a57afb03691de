"""Exercise 10.5, exact_match: scenarios decoded by a scripted torch Seq2Seq, so every edge case of the
comparison is exercised on purpose; which rows count, and the model's mode left as it was."""

import numpy as np

from ...mistakes import CATALOG
from ..exercises import Exercise, Later
from ..fixtures import BOS, EOS, PAD
from ..probes import Finding
from ..running import run_student
from .torch_checker import TorchChecker, _check_parts, _one_thread, _plain
from .torch_references import references


def exact_match_scenarios(hidden=False):
    """(label, sources, targets, predictions, bos_id, eos_id, max_len, {row: what it shows}) per scenario.

    Predictions are what the scripted model says at each step; greedy decoding returns them up to and
    including <eos>, or cut after max_len tokens."""
    E = EOS
    first = ("six predictions against their targets (max_len 7)",
             [[3, 4, 5], [3, 5, 4], [4, 3, 5], [4, 5, 3], [5, 3, 4], [5, 4, 3]],
             [[3, 4, 5, E], [3, 4, 5, E], [3, 4, 5, E], [3, 4, 5, E], [6, 7, 8, 9, 10, E], [3, 4, E]],
             [[3, 4, 5, E], [3, 4, E], [3, 4, 5, 6, E], [3, 4, 5, 6, 6, 6, 6], [6, 7, 8, 9, 10, E], [4, 4, E]],
             BOS, EOS, 7,
             ["right", "stops one token early (a prefix of the target, then <eos>)",
              "one extra token before <eos>", "never says <eos> (its first tokens are right)",
              "right, a target that fills the padded width", "the first token is wrong"])
    cut = ("max_len 3 cuts predictions short",
           [[3, 3], [4, 4], [5, 5]],
           [[3, E], [3, 4, 5, 6, E], [5, 6, 7, E]],
           [[3, E], [3, 4, 5, 6, E], [5, 6, 8]],
           BOS, EOS, 3,
           ["right", "cut by max_len: its 3 tokens are the target's first 3 (a prefix)", "the third token is wrong"])
    other_ids = (f"other ids: <bos> 9, <eos> 10, <pad> {OTHER_PAD} (max_len 6, more than the targets' width)",
                 [[3, 4], [4, 3], [5, 6], [6, 5], [7, 8]],
                 [[3, 4, 10], [10], [5, 6, 7, 10], [3, 10], [7, 8, 10]],
                 [[3, 4, 10], [10], [5, 6, 7, 8, 10], [3, 4, 10], [7, 8, 7, 8, 7, 8, 7]],
                 9, 10, 6,
                 ["right", "right: an empty sequence, just <eos>", "one extra token before <eos>",
                  "one extra token before <eos>", "never says <eos>: 6 tokens, longer than the targets' width"])
    return [first, cut, other_ids]


OTHER_PAD = 11  # the pad id of the scenario with other ids: an answer that pads with 0 must not pass it


def _scenario_model(scenario):
    R = references()
    label, sources, targets, predictions, bos_id, eos_id, max_len, _ = scenario
    pad = PAD if bos_id == BOS else OTHER_PAD
    model = R.ScriptedSeq2Seq(sources, predictions, bos_id=bos_id, eos_id=eos_id, pad_id=pad)
    width = max(len(t) for t in targets) + 1  # one column of padding more than the longest target
    tgt = np.full((len(targets), width), pad, dtype=np.int64)
    for r, t in enumerate(targets):
        tgt[r, :len(t)] = t
    src = np.full((len(sources), max(len(s) for s in sources) + 1), pad, dtype=np.int64)
    for r, s in enumerate(sources):
        src[r, :len(s)] = s
    return model, R.torch.from_numpy(src), R.torch.from_numpy(tgt)


def _fraction(value):
    torch = references().torch
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return float(value)
    if isinstance(value, (int, float, np.number)):
        return float(value)
    return None


def _observe_rows(fn, index, hidden):
    """Parts 1 and 2: the whole batch, then every row alone. (summary, problem, outcome)."""
    R = references()
    scenario = exact_match_scenarios(hidden)[index]
    label, sources, targets, predictions, bos_id, eos_id, max_len, what = scenario
    forbidden = [R.exact_match, R.capstone.exact_match, _plain(R.capstone.predict)]
    model, src, tgt = _scenario_model(scenario)
    model.eval()
    right = R.exact_match(model, src, tgt, bos_id, eos_id, max_len)
    right_rows = [R.exact_match(model, src[r:r + 1], tgt[r:r + 1], bos_id, eos_id, max_len) for r in range(len(sources))]
    outcome = run_student(fn, (model, src.clone(), tgt.clone(), bos_id, eos_id, max_len), forbidden=forbidden)
    if outcome.error is not None:
        return ("error", type(outcome.error).__name__, str(outcome.error)), None, outcome
    whole = _fraction(outcome.value)
    if whole is not None and index == 0 and isinstance(outcome.value, R.torch.Tensor):  # said once, in part 1
        return ("returned", "Tensor"), (
            f"your function returns a torch tensor ({outcome.value!r}), not the float the docstring asks for: "
            "a tensor's mean stays a tensor. Return a Python number: `.item()` (or float(...)) of it."), outcome
    if whole is None:
        problem = (f"return the fraction of exact matches as a number, got {type(outcome.value).__name__}"
                   + (" (did you forget `return`?)" if outcome.value is None else ""))
        return ("returned", type(outcome.value).__name__), problem, outcome
    rows = []
    for r in range(len(sources)):
        one = run_student(fn, (model, src[r:r + 1].clone(), tgt[r:r + 1].clone(), bos_id, eos_id, max_len),
                          forbidden=forbidden)
        if one.error is not None:
            return ("error", type(one.error).__name__, str(one.error)), None, one
        rows.append(_fraction(one.value))
    summary = ("rows", np.array(whole), np.array([np.nan if x is None else x for x in rows]))
    wrong = [r for r in range(len(sources)) if rows[r] is None or abs(rows[r] - right_rows[r]) > 1e-6]
    if wrong:
        said = []
        for r in wrong[:3]:
            if rows[r] is not None and rows[r] == 1.0:
                said.append(f"row {r} ({what[r]}) counts as an exact match, but it is not")
            elif rows[r] is not None and rows[r] == 0.0:
                said.append(f"row {r} ({what[r]}) does not count, but it is an exact match")
            else:
                said.append(f"row {r} ({what[r]}) alone gives {rows[r]}, not {right_rows[r]:g}")
        return summary, "evaluated one row at a time: " + "; ".join(said), outcome
    if abs(whole - right) > 1e-6:  # a float32 mean is exact to about 1e-7
        return summary, (f"the whole batch gives {whole:.6g}, expected {right:.6g} (the fraction of rows that match)"
                         + _one_answer(whole, right_rows)), outcome
    return ("ok",), "", outcome


def _one_answer(whole, right_rows):
    """Why the batch gives 0 or 1 where each row alone is right: one test over the whole batch."""
    every, some = float(all(r == 1.0 for r in right_rows)), float(any(r == 1.0 for r in right_rows))
    if whole == every != some:
        return (": each row alone is counted right, and the batch as a whole counts as one answer, 1 only when "
                "every row matches. A test of every token of the batch at once (.all() with no dim) does that; "
                "test each row's tokens (.all(dim=1)), then take the mean over the rows")
    if whole == some != every:
        return (": each row alone is counted right, and the batch gives 1 when any row matches (.any() over the "
                "batch); test each row's tokens (.all(dim=1)), then take the mean over the rows")
    return ""


def _observe_modes(fn, hidden, what="after"):
    """Part 3: the mode the answer leaves a model in (one in training mode, then one in eval mode)."""
    R = references()
    scenario = exact_match_scenarios(hidden)[0]
    _, _, _, _, bos_id, eos_id, max_len, _ = scenario
    forbidden = [R.exact_match, R.capstone.exact_match, _plain(R.capstone.predict)]
    results = []
    for mode in (True, False):
        model, src, tgt = _scenario_model(scenario)
        model.train(mode)
        outcome = run_student(fn, (model, src, tgt, bos_id, eos_id, max_len), forbidden=forbidden)
        if outcome.error is not None:
            return ("error", type(outcome.error).__name__, str(outcome.error)), None, outcome
        after = {m.training for m in model.modules()}
        results.append((model.seen, after))
    (seen, after_train), (_, after_eval) = results
    summary = ("after", tuple(sorted(after_train)), tuple(sorted(after_eval)))
    if after_train != {True}:
        return summary, "a model that was in training mode is left in eval mode (model.training is False afterwards)", outcome
    if after_eval != {False}:
        return summary, "a model that was in eval mode is left in training mode (model.training is True afterwards)", outcome
    return ("ok",), "", outcome


def _per_token_probe(summary):
    """Parts 1 and 2's probe: one row alone scores a fraction strictly between 0 and 1. A sequence is one
    answer (1 or 0), so the score counts something smaller than a sequence: tokens."""
    if summary[0] != "rows":
        return None
    rows = np.asarray(summary[2], dtype=np.float64)
    partial = rows[np.isfinite(rows) & (rows > 1e-9) & (rows < 1 - 1e-9)]
    if partial.size == 0:
        return None
    return Finding("exact_match", "probe:score:per_token", (
        f"a single sequence scored alone gives {partial[0]:.4g}, a fraction: your score counts tokens (token accuracy, "
        "the share of positions predicted right), not sequences. Exact match scores each sequence 1 when every one "
        "of its tokens up to and including <eos> is right, else 0, and returns the fraction of sequences that score 1."))


EXACT_MATCH = Exercise("10.5", "exact_match", points=2, reference=Later(lambda: references().exact_match),
                       reads=("bos_id", "max_len"))  # eos_id only tells where a target ends, which its pads tell too


@EXACT_MATCH.checked_by
@_one_thread
def check_exact_match(exact_match=None, *, points=None, hidden=False):
    """Greedy-decode a batch (model.greedy_decode), count the rows whose every token up to and
    including <eos> is right; the model's mode the same after as before."""
    c = TorchChecker(EXACT_MATCH, points, hidden)
    fn = c.find(exact_match, "exact_match")
    scenarios = exact_match_scenarios(hidden)
    # model.greedy_decode runs in eval mode under no_grad and restores the mode itself: nothing is charged
    # for leaving model.eval() or torch.no_grad() out, only for changing the model's mode
    parts = [(f"which rows count: {scenarios[0][0]}; {scenarios[2][0]}", _observe_rows, [(0, hidden), (2, hidden)],
              _per_token_probe),
             (f"which rows count: {scenarios[1][0]}", _observe_rows, [(1, hidden)], _per_token_probe),
             ("the model's mode unchanged afterwards (a model in training mode, then one in eval mode)",
              _observe_modes, [(hidden, "after")])]
    if fn is not None:
        _check_parts(c, fn, parts, CATALOG["exact_match"])
    return c.result()
