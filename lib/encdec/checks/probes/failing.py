"""The student's failing line, read from an error: the frame, the line's text and its syntax tree, which
failed_lines.py, indexing.py and library_errors.py read their causes from.
"""

import ast
import linecache
import traceback

from .shapes import _parsed, _student_frame


def failing_line(exc):
    """(frame, the failing line's text, its syntax tree) of the student's last frame in the traceback, or None."""
    tb = _student_frame(exc)
    if tb is None:
        return None
    entry = traceback.extract_tb(tb, limit=1)[0]
    raw = (linecache.getline(entry.filename, entry.lineno) or entry.line or "").strip()
    text = raw.removeprefix("return ").rstrip(":")
    for keyword in ("if ", "elif ", "while "):  # a condition's line: its expression
        text = text.removeprefix(keyword)
    tree = _parsed(text, raw)
    return (tb.tb_frame, raw, tree) if tree is not None else None


def _failed(attempt, kinds, words):
    """failing_line() of the answer's error when it is one of `kinds` and its message says `words`, else None."""
    exc = attempt.error
    if not isinstance(exc, kinds) or words not in str(exc):
        return None
    return failing_line(exc)


def failed_nodes(attempt, kinds, words):
    """(frame, the failing line, a node of its tree) for each node, when the answer's error is one of `kinds`
    and says `words`; nothing otherwise."""
    found = _failed(attempt, kinds, words)
    if found is not None:
        frame, line, tree = found
        for node in ast.walk(tree):
            yield frame, line, node
