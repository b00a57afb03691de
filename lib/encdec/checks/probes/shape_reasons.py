"""A wrong output shape explained: which axis is missing, extra, exchanged or too long compared with the
expected shape, and what usually causes it, in the case's own size names (n, m, d_model). The checker adds
it to the "shape: expected ..., got ..." line (core.check_cases); judging.py reads `joined` first.
"""

import numpy as np


def size_named(size, sizes):
    """'n = 5' when one size of the case is `size` (the exercise's sizes), else str(size)."""
    names = [name for name, value in (sizes or {}).items() if value == size and not name.startswith("B")]
    return f"{size} ({' or '.join(names)})" if names else str(size)


def joined(got, expected):
    """(a, b, k) when `got` is `expected` with axis a k times longer and axis b k times shorter (pieces
    joined along the wrong axis), else None."""
    if len(got) != len(expected) or int(np.prod(got)) != int(np.prod(expected)) or sorted(got) == sorted(expected):
        return None
    diff = [i for i in range(len(got)) if got[i] != expected[i]]
    if len(diff) != 2:
        return None
    a, b = diff if got[diff[0]] > expected[diff[0]] else diff[::-1]
    if expected[a] and got[a] % expected[a] == 0 and got[b] and expected[b] % got[b] == 0 \
            and got[a] // expected[a] == expected[b] // got[b] > 1:
        return a, b, got[a] // expected[a]
    return None


def explain_shape(got, expected, sizes=None, tokens=False):
    """Which axis is missing, extra or out of place in `got` compared with `expected` (two shapes), and what
    usually causes it, in the case's own size names; "" when nothing simple explains it. With `tokens` (decoded
    ids, whose last axis is as long as the longest row), a last axis of another length says that the tokens
    differ, not that a size was read from elsewhere."""
    got, expected = tuple(got), tuple(expected)
    if tokens and len(got) == len(expected) and got[:-1] == expected[:-1] and got and got[-1] != expected[-1]:
        return (f"the rows are {got[-1]} tokens long where {expected[-1]} are expected: the longest row is the "
                "length, so the answer decoded other tokens (a row that ends at another step, or one that never "
                "ends before max_len)")
    if len(got) == len(expected) - 1:
        for k in range(len(expected)):
            if expected[:k] + expected[k + 1:] == got:
                size = expected[k]
                if size == 1:
                    return (f"an axis of size 1 is missing at position {k} of {expected}: a mask keeps the axes it "
                            "broadcasts over, the heads' axis and, for a padding mask, the queries' ((B, 1, 1, n) for "
                            "the encoder's, (B, 1, m, m) for the decoder's); after a sum, max or mean, keepdims=True "
                            "keeps the axis")
                if k == 0:
                    return (f"the leading axis of size {size_named(size, sizes)} is missing: a batch was treated as one "
                            "example (an index [0], a squeeze, or a reshape that drops it)")
                return (f"the axis of size {size_named(size, sizes)} at position {k} is missing: a reduction over it (a sum "
                        "or mean without keepdims), or an index that picks one entry of it")
    extra = len(got) - len(expected)
    if extra >= 2 and got[extra:] == expected and all(n == 1 for n in got[:extra]):
        return (f"there are {extra} extra leading axes of size 1: the answer adds axes that the expected shape does not "
                "have ([None, None], np.newaxis, reshape(1, 1, ...)), as if to broadcast over a batch and heads; "
                "broadcasting adds such axes itself where the array is used: return it without them")
    if len(got) == len(expected) + 1:
        for k in range(len(got)):
            if got[:k] + got[k + 1:] == expected:
                size = got[k]
                if size == 1 and k == 0:
                    return ("there is an extra leading axis of size 1: an unbatched input was given a batch axis "
                            "([None], np.newaxis, reshape(1, ...)) that is not removed before returning")
                if size == 1:
                    return (f"there is an extra axis of size 1 at position {k}: keepdims=True where the axis should "
                            "go, a [..., None] too many, or a reshape that counts on one batch axis in front "
                            "(x.reshape(x.shape[0], -1, d) on an input with none)")
                if k == 0 and got[1:2] != (size,):  # only where the extra axis is surely the first one
                    return (f"there is an extra leading axis of size {size_named(size, sizes)}: an input without a batch "
                            "axis read as a batch (its first axis, x.shape[0] or len(x), taken for the batch size), "
                            "or pieces stacked along a new first axis")
                return f"there is an extra axis of size {size_named(size, sizes)} at position {k}"
    if joined(got, expected) is not None:
        a, b, k = joined(got, expected)
        return (f"axis {a} is {k} times too long and axis {b} {k} times too short: what belongs along axis {b} is "
                f"laid out along axis {a}, as when {k} pieces are joined (np.concatenate, torch.cat) along axis {a} "
                f"where they belong along axis {b}, or a reshape groups the numbers so")
    if len(got) == len(expected) and sorted(got) == sorted(expected):
        moved = [k for k in range(len(got)) if got[k] != expected[k]]
        if [n for n in got if n != 1] == [n for n in expected if n != 1]:
            def ones(shape):
                return ", ".join(str(k) for k, n in enumerate(shape) if n == 1)
            return (f"the axes of size 1 are in other places (the answer has them at {ones(got)}; they belong at "
                    f"{ones(expected)}): new axes inserted counting "
                    "from the front (np.expand_dims(x, 1), x[:, None]) land after the batch axes of one input and "
                    "not another; insert them counting from the end (x[..., None, None, :], np.expand_dims(x, -2))")
        if len(moved) == 2:
            a, b = moved
            return (f"axes {a} and {b} are exchanged ({size_named(got[a], sizes)} where {size_named(expected[a], sizes)} "
                    "belongs): a transpose too many or too few, or a reshape where an axis swap was meant")
        return "the axes are in another order: a reshape where a transpose (np.swapaxes) was meant?"
    if len(got) == len(expected):
        diff = [k for k in range(len(got)) if got[k] != expected[k]]
        if len(diff) == 1:
            k = diff[0]
            return (f"axis {k} has size {size_named(got[k], sizes)} where {size_named(expected[k], sizes)} is expected: a size "
                    "read from another axis or another array")
    return ""
