"""Property probes on behaviour: what a sublayer received (Calls), what an edit must leave unchanged
(Invariant), the rules decoded rows keep (DecodedRows), an output proportional to the right one."""

import copy

import numpy as np

from .base import Property, _arrays, _tol, argument, replaced


class _Recorder:
    """Stands in for a sublayer: records each call's arguments, then lets the sublayer do its work."""

    def __init__(self, inner):
        self._inner, self.calls = inner, []

    def __call__(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        return self._inner(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._inner, name)


class Calls(Property):
    """Runs the student's code again with sublayers replaced by recorders, and lets `judge` read what
    each received: judge({attr: [(args, kwargs), ...]}, args, kwargs) -> (detail key, diagnosis) or
    (detail key, diagnosis, detail) or None. `kind` names the key's kind (default "calls").

    holder: "self" when the sublayers belong to the answer's object (a method exercise), or the index
    of the case argument that holds them (e.g. the block passed to a function). Also runs when the
    student's code raised: what reached a sublayer before it failed often says why."""

    kind = "calls"
    exact = True

    def __init__(self, attrs, judge, holder="self", kind=None):
        self.attrs, self.judge, self.holder = list(attrs), judge, holder
        if kind is not None:
            self.kind = kind

    def find(self, attempt, probes):
        args, kwargs = attempt.args(), attempt.kwargs()
        owner = attempt.student if self.holder == "self" else args[self.holder]
        twin = copy.copy(owner)
        recorders = {}
        for attr in self.attrs:
            recorders[attr] = _Recorder(getattr(owner, attr))
            setattr(twin, attr, recorders[attr])
        if self.holder == "self":
            attempt.rerun(args, kwargs, student=twin)
        else:
            args = list(args)
            args[self.holder] = twin
            attempt.rerun(tuple(args), kwargs)
        verdict = self.judge({a: r.calls for a, r in recorders.items()}, args, kwargs)
        if verdict is None:
            return None
        return self.finding(attempt, *verdict)  # (key, diagnosis) or (key, diagnosis, detail)


class Invariant(Property):
    """The student's code run again on an edited input: what `keep` picks of the output must not
    change (change=False: e.g. a pad appended to the source leaves every real position as it was;
    the last target token changed leaves every earlier position's logits as they were), or must change
    (change=True: e.g. an encoder position must see the positions after it).

    edit(args, kwargs) -> (args, kwargs), or None where the edit does not apply to this case;
    keep(value, args, kwargs) -> the arrays compared (value after the check's postprocess), for the
    original inputs and for the edited ones; name: the detail key; diagnosis: what a failure means."""

    kind = "invariant"

    def __init__(self, name, edit, keep, diagnosis, change=False, kind=None):
        self.name, self.edit, self.keep, self.diagnosis, self.change = name, edit, keep, diagnosis, change
        if kind:
            self.kind = kind

    def inspect(self, attempt, probes):
        args, kwargs = attempt.args(), attempt.kwargs()
        edited = self.edit(args, kwargs)
        if edited is None:
            return None
        new_args, new_kwargs = edited
        outcome = attempt.rerun(tuple(new_args), dict(new_kwargs))
        if outcome.error is not None:
            return None
        before = _arrays(self.keep(attempt.got, attempt.args(), attempt.kwargs()))
        after = _arrays(self.keep(attempt.output(outcome.value), new_args, new_kwargs))
        if not before or len(before) != len(after) or any(a.shape != b.shape for a, b in zip(before, after)):
            return None
        rtol, atol = (1e-4, 1e-6) if attempt.float32 else (1e-7, 1e-9)
        moved = 0.0
        for a, b in zip(before, after):
            with np.errstate(all="ignore"):
                same = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
                diff = np.where(same, 0.0, np.abs(a - b))
            diff = np.where(np.isnan(diff), np.inf, diff)
            moved = max(moved, float(np.max(diff)) if diff.size else 0.0)
        if self.change and moved == 0.0:
            return self.finding(attempt, self.name, self.diagnosis)
        if not self.change and moved > 0.0:
            return self.finding(attempt, self.name, self.diagnosis, f"outputs that must not change moved by up to {moved:.3g}.")
        return None


class DecodedRows(Property):
    """Decoded token ids (..., L) read row by row against what decoding must give, whatever the model
    said: no BOS or pad chosen before the row's EOS; after the first EOS only pads; no column after
    the last row ended (and none past max_len); BOS not written as the first token.

    ids(attempt) -> the (B, L) ids (2-D) or None; special(attempt) -> dict(bos=, eos=, pad=, max_len=)."""

    kind = "decoded"

    def __init__(self, ids, special):
        self.ids, self.special = ids, special

    def inspect(self, attempt, probes):
        mine, right = self.ids(attempt, attempt.got), self.ids(attempt, attempt.expected)
        s = self.special(attempt)
        if mine is None or right is None:
            return None
        mine = np.atleast_2d(np.asarray(mine))
        if mine.dtype.kind not in "iu" and not (mine.dtype.kind == "f" and np.all(mine == np.round(mine))):
            return None
        mine = mine.astype(np.int64)
        right = np.atleast_2d(np.asarray(right)).astype(np.int64)
        bos, eos, pad, max_len = s["bos"], s["eos"], s["pad"], s.get("max_len")
        if mine.shape[-1] and np.all(mine[:, 0] == bos) and not np.all(right[:, 0] == bos):
            return self.finding(attempt, "bos_first", (
                "every row of your output starts with BOS. BOS is the decoder's first input, not a generated "
                "token: return only the tokens the model chose, from the first step on."))
        ended = np.cumsum(mine == eos, axis=-1) - (mine == eos) > 0  # strictly after the first EOS
        if np.any(ended & (mine != pad)):
            row = int(np.argwhere(ended & (mine != pad))[0][0])
            return self.finding(attempt, "written_after_eos", (
                "a row goes on with real tokens after its EOS. A row is finished at its first EOS: every "
                "position after it holds the pad id, while the other rows go on."),
                f"row {row}: {mine[row].tolist()}.", weak=True)  # what is off, not where: the repair's line first
        before_end = ~ended & (mine != eos)
        if mine.shape == right.shape:
            overwritten = (right == eos) & (mine == pad) & ~np.any(mine == eos, axis=-1, keepdims=True)
            rest = np.where(np.cumsum(right == eos, axis=-1) - (right == eos) > 0, pad, right)  # right, up to EOS
            if np.any(overwritten) and np.array_equal(np.where(overwritten, eos, mine), rest):
                row = int(np.argwhere(overwritten)[0][0])
                return self.finding(attempt, "eos_overwritten", (
                    "each row's EOS is itself replaced by the pad id: the row is marked finished before its "
                    "token is written, so the step that produced EOS already writes the pad. Write the chosen "
                    "token (pad only for rows finished at an earlier step), then mark the rows that chose EOS."),
                    f"row {row}: {mine[row].tolist()}.")
        for token, name in ((bos, "BOS"), (pad, "the pad token")):
            if np.any(before_end & (mine == token)):
                row = int(np.argwhere(before_end & (mine == token))[0][0])
                return self.finding(attempt, "special_chosen", (
                    f"{name} is chosen as a generated token. BOS and the pad token are never generated: set "
                    "their logits to -inf before the argmax (or the log-softmax), at every step."),
                    f"row {row}: {mine[row].tolist()}.")
        if max_len is not None and mine.shape[-1] > max_len:
            return self.finding(attempt, "past_max_len", (
                f"your output has {mine.shape[-1]} columns, more than max_len = {max_len}: generate at most "
                "max_len tokens (the loop runs max_len times at most)."))
        if mine.shape[-1] > 0 and np.all(np.any(mine[:, :-1] == eos, axis=-1)) and np.all(mine[:, -1] == pad):
            return self.finding(attempt, "runs_after_all_ended", (
                "every row had ended (EOS) before your last column, which is all padding: stop the loop as "
                "soon as every row has produced its EOS, rather than running on to max_len."))
        if mine.shape[-1] == right.shape[-1] - 1 and max_len is not None and right.shape[-1] < max_len \
                and np.array_equal(mine, right[:, :-1]) and np.any(right[:, -1] == eos):
            row = int(np.argwhere(right[:, -1] == eos)[0][0])
            return self.finding(attempt, "last_step_dropped", (
                "your output is the right one without its last column, the step on which the last row produced "
                "its EOS: the loop stops when every row has ended before that step's tokens are kept. Keep the "
                "step's tokens first (append the column), then stop if every row has ended."),
                f"row {row} ends without its EOS: {mine[row].tolist()}.")
        if mine.shape[-1] < right.shape[-1] and np.any(~np.any(mine == eos, axis=-1)):
            return self.finding(attempt, "stopped_too_early", (
                "your output stops while a row has not yet produced EOS (and max_len is not reached): stop "
                "only when every row has ended, or after max_len tokens."))
        return None  # no rule is broken: the tokens themselves differ


class Proportional(Property):
    """The student's output is the right one times a constant c (every array of it, the same c): a
    factor wrong. Named when c is one of candidates(args, kwargs) -> [(label, factor, diagnosis)],
    else reported with its value. No model is run (c is fitted in closed form), so it is cheap where
    the model is not. Key: probe:scale:<label> or probe:scale:other."""

    kind = "scale"

    def __init__(self, what, candidates=None, right="1"):
        self.what, self.candidates, self.right = what, candidates, right

    def inspect(self, attempt, probes):
        mine, ref = _arrays(attempt.got), _arrays(attempt.expected)
        if not mine or len(mine) != len(ref) or any(a.shape != b.shape for a, b in zip(mine, ref)):
            return None
        s = np.concatenate([a.ravel() for a in mine])
        r = np.concatenate([b.ravel() for b in ref])
        if not (np.all(np.isfinite(s)) and np.all(np.isfinite(r))):
            return None
        rr = float(r @ r)
        if rr == 0.0:
            return None
        c = float(s @ r) / rr
        rtol, atol = _tol(attempt)
        if abs(c) < 1e-12 or np.allclose(c, 1.0, rtol=1e-9, atol=0) or not np.allclose(s, c * r, rtol=rtol, atol=atol):
            return None
        if c < 0 and np.isclose(c, -1.0, rtol=1e-6):
            return self.finding(attempt, "sign", f"your output ({self.what}) has the wrong sign: it is exactly the "
                                                 "right result times -1.")
        for label, factor, why in (self.candidates(*attempt.case.args, **attempt.case.kwargs) if self.candidates else []):
            if why and np.isclose(c, factor, rtol=1e-6):
                return self.finding(attempt, label, why)
        return self.finding(attempt, "other", (
            f"your output ({self.what}) is exactly the right result times {c:.4g}: a factor is wrong (or applied twice, or "
            f"missing). Check every constant that multiplies it."))


