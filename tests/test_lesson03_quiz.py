"""Lesson 03's [LEARNED]/[CONFIG]/[STATE] quiz (Exercise 3.6): a dict answer, a share of the points
per item, an explanation of the category for every wrong item."""

import contextlib
import io
import json
from pathlib import Path

import pytest

from encdec.checks import lesson02 as L2
from encdec.checks import lesson03 as L
from encdec.checks import lesson04 as L4

pytestmark = pytest.mark.lesson03
ROOT = Path(__file__).resolve().parents[1]
QUIZ = L.TAG_QUIZ
N = len(QUIZ.items)


def run(answer, points=3):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        score = L.check_quantity_tags(answer, points=points)
    return score, out.getvalue()


def test_the_quiz_covers_every_tag_several_times_and_has_no_duplicate_items():
    counts = {tag: sum(item.tag == tag for item in QUIZ.items) for tag in L.TAGS}
    assert min(counts.values()) >= 4, counts
    assert len({item.text for item in QUIZ.items}) == N


def test_the_right_answer_gets_full_marks():
    score, text = run(QUIZ.answer)
    assert score == 3, text
    assert "All checks pass." in text


@pytest.mark.parametrize("spelling", ["[learned]", " Learned ", "LEARNED"])
def test_tags_are_read_whatever_their_case_brackets_or_spaces(spelling):
    answer = {n: (spelling if tag == "LEARNED" else tag) for n, tag in QUIZ.answer.items()}
    score, text = run(answer)
    assert score == 3, text


def test_item_numbers_may_be_strings():
    score, text = run({str(n): tag for n, tag in QUIZ.answer.items()})
    assert score == 3, text


@pytest.mark.parametrize("n", range(1, N + 1))
def test_each_wrong_item_costs_its_share_and_is_explained(n):
    item = QUIZ.items[n - 1]
    wrong = next(tag for tag in L.TAGS if tag != item.tag)
    answer = {**QUIZ.answer, n: wrong}
    score, text = run(answer)
    assert score == pytest.approx(int(3 * (N - 1) / N * 100) / 100), text
    share = f"[0 / {round(3 / N, 2):g}]"  # what the item was worth, shown before it
    assert f"✗ {share} {n}. {item.text}: you said {wrong}, but it is {item.tag}: {item.why}" in text
    assert L.MEANING[item.tag] in text


def test_every_explanation_is_its_own():
    whys = [item.why for item in QUIZ.items]
    assert len(set(whys)) == len(whys)


def test_all_wrong_scores_zero_and_explains_every_item():
    answer = {n: next(t for t in L.TAGS if t != tag) for n, tag in QUIZ.answer.items()}
    score, text = run(answer)
    assert score == 0
    assert text.count("but it is") == N


def test_missing_items_and_unknown_tags_are_named():
    answer = dict(QUIZ.answer)
    del answer[2]
    answer[3] = "PARAMETER"
    score, text = run(answer)
    assert score < 3
    assert "no tag given for this item" in text
    assert "'PARAMETER' is not a tag: use LEARNED, CONFIG or STATE" in text


@pytest.mark.parametrize("bad, says", [
    (["LEARNED"] * N, "should be a dict from item number to tag"),
    ({"W_q": "LEARNED"}, "keys that are not item numbers"),
    ({0: "LEARNED"}, "keys that are not item numbers"),
    ({N + 1: "STATE"}, "keys that are not item numbers"),
])
def test_unreadable_answers_score_zero_with_a_message(bad, says):
    score, text = run(bad)
    assert score == 0
    assert says in text, text


def test_the_answer_is_found_by_name_in_the_notebook_namespace():
    globals()["quantity_tags"] = QUIZ.answer
    try:
        score, text = run(None)
    finally:
        del globals()["quantity_tags"]
    assert score == 3, text


def test_no_answer_defined_says_so():
    score, text = run(None)
    assert score == 0 and "no answer named `quantity_tags`" in text


def test_the_widget_builds():
    widget = QUIZ.widget()
    assert len(widget.children) == N + 1


def _markdown(lesson):
    nb = json.loads((ROOT / "solutions" / lesson / f"{lesson}.ipynb").read_text())
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


@pytest.mark.parametrize("lesson, prompts", [
    ("02_encoder", [L2.ENCODER_BLOCK_ORDER.prompt()]),
    ("03_decoder", [L.MASKED_ATTENTION_ORDER.prompt(), QUIZ.prompt()]),
    pytest.param("04_cross_attention", [L4.QKV_ORDER.prompt()], marks=pytest.mark.lesson04),
])
def test_the_notebooks_show_exactly_the_lists_the_checkers_grade(lesson, prompts):
    text = _markdown(lesson)
    for prompt in prompts:
        assert prompt in text


def test_the_quiz_follows_the_one_rule_a_mask_rule_is_config_its_array_state():
    """FIGURE_KEY's rule: the masking *rule* is set before the run, the mask *array* is computed
    from the batch at hand; and STATE is defined by who computes it, not by being thrown away."""
    by_text = {item.text: item.tag for item in QUIZ.items}
    rules = [text for text in by_text if "rule" in text and "mask" in text]
    arrays = [text for text in by_text if "mask array" in text]
    assert rules and all(by_text[text] == "CONFIG" for text in rules)
    assert arrays and all(by_text[text] == "STATE" for text in arrays)
    state_texts = [L.MEANING["STATE"]] + [item.why for item in QUIZ.items if item.tag == "STATE"]
    for text in state_texts:
        assert "discarded" not in text and "thrown away" not in text, text
    assert "before training" not in L.MEANING["CONFIG"]  # decoding settings are CONFIG too
