"""Comparing the answer's values with the reference's.

`compare` says None when they match, else what differs: the type, the shape, or the first differing
index with the expected and the got value (float64 to rounding, float32 to float32 precision: the
tolerances below). The small value helpers the checker and the cases share sit here too: the shape
message's reason (`_with_shape_reason`), the tests of a result of the right numbers in another shape or of
another structure, `_safe` (a postprocess that cannot fail) and `_copy` (fresh copies of a case's inputs).
"""

import numpy as np

from . import probes as _probes

# Tolerances: float64 answers must agree to rounding; float32 answers to float32 precision.
RTOL, ATOL = 1e-6, 1e-9
RTOL32, ATOL32 = 2e-4, 1e-5


def _as_array(x):
    try:
        arr = np.asarray(x)
    except Exception:
        return None
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        return None
    return arr


def _fmt(v):
    return f"{v:.6g}" if isinstance(v, (float, np.floating)) else str(v)


def compare(got, expected, float32=False, names=None):
    """None when `got` matches `expected`, else a message: type, shape, or first differing index.

    Tuples are compared item by item (`names` labels the items, e.g. ("output", "weights")).
    """
    if isinstance(expected, tuple):
        if not isinstance(got, (tuple, list)):
            return (f"expected a tuple of {len(expected)} ({', '.join(names or ())}), "
                    f"got {type(got).__name__}" + (" (did you forget `return`?)" if got is None else ""))
        if len(got) != len(expected):
            return f"expected a tuple of {len(expected)} ({', '.join(names or ())}), got {len(got)} items"
        for i, (g, e) in enumerate(zip(got, expected)):
            msg = compare(g, e, float32)
            if msg:
                label = names[i] if names else f"item {i}"
                return f"{label}: {msg}"
        return None
    if got is None:
        return "your function returned None (did you forget `return`?)"
    arr = _as_array(got)
    if arr is None:
        return f"expected a NumPy array, got {type(got).__name__}"
    exp = np.asarray(expected)
    if arr.shape != exp.shape:
        return f"shape: expected {exp.shape}, got {arr.shape}"
    if np.issubdtype(exp.dtype, np.integer) or exp.dtype == bool:
        bad = arr != exp
    else:
        rtol, atol = (RTOL32, ATOL32) if float32 else (RTOL, ATOL)
        with np.errstate(all="ignore"):
            bad = ~np.isclose(arr.astype(np.float64), exp.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)
    if not np.any(bad):
        return None
    idx = tuple(int(i) for i in np.argwhere(bad)[0])
    where = f" at index {idx}" if idx else ""
    shown_exp, shown_got = _fmt(exp[idx]), _fmt(arr[idx])
    if shown_exp == shown_got:  # they agree to 6 digits: show all of them
        shown_exp, shown_got = repr(float(exp[idx])), repr(float(arr[idx]))
    return (f"values differ{where}: expected {shown_exp}, got {shown_got} "
            f"({int(np.sum(bad))} of {bad.size} entries differ)")


def same(a, b, float32=False):
    return compare(a, b, float32) is None


def _with_shape_reason(problem, got, expected, names, sizes):
    """The shape message, followed by which axis is missing, extra or misplaced and its usual cause."""
    pairs = list(zip(got, expected)) if isinstance(expected, tuple) and isinstance(got, (tuple, list)) else [(got, expected)]
    for g, e in pairs:
        g_arr, e_arr = _as_array(g), np.asarray(e) if not isinstance(e, tuple) else None
        if g_arr is not None and e_arr is not None and g_arr.shape != e_arr.shape:
            reason = _probes.explain_shape(g_arr.shape, e_arr.shape, sizes, tokens=_discrete(g_arr))
            return f"{problem}: {reason}" if reason else problem
    return problem


def _discrete(value):
    """Token ids (an integer array or tensor, alone or in a tuple): outputs that another computation matches
    on one case by coincidence far more often than an array of floats."""
    if isinstance(value, (tuple, list)):
        return bool(value) and all(_discrete(v) for v in value)
    dtype = getattr(value, "dtype", None)
    return dtype is not None and not getattr(dtype, "is_floating_point", False) and (
        str(dtype).startswith(("int", "uint", "torch.int", "torch.long")))


def _same_numbers(got, expected):
    """True when the answer's array holds the right numbers with an axis of size 1 more or fewer (a batch axis
    kept for one source): the shape's message says it all, and no line's values are wrong."""
    try:
        g, e = np.asarray(got), np.asarray(expected)
        return g.shape != e.shape and g.size == e.size and g.dtype != object and np.array_equal(
            g.reshape(-1), e.reshape(-1)) and np.squeeze(g).shape == np.squeeze(e).shape
    except Exception:
        return False


def _other_structure(got, expected):
    """True when the answer returns another kind of result than a tuple the reference returns (one array
    for (output, weights)): the probes, which read the parts of the result, have nothing to read."""
    return isinstance(expected, tuple) and not (isinstance(got, (tuple, list)) and len(got) == len(expected))


def _safe(fn, value):
    try:
        return fn(value)
    except Exception:
        return value


def _copy(obj):
    if isinstance(obj, np.ndarray):
        return obj.copy()
    if isinstance(obj, tuple):
        return tuple(_copy(o) for o in obj)
    if isinstance(obj, list):
        return [_copy(o) for o in obj]
    if isinstance(obj, dict):
        return {k: _copy(v) for k, v in obj.items()}
    return obj
