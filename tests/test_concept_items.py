"""The item bank of the concept checks (encdec.concepts): 5 or 6 concepts per lesson, each asked by a
PRE item and a parallel POST item; every answer key that can be computed agrees with the library; each
distractor's catalog entry exists; and no item gives another away."""

import re

import pytest

from encdec.concepts import concepts
from encdec.concepts.items import LETTERS
from encdec.mistakes import CATALOG
from nbtools import checks_module, lessons

LESSONS = lessons()
SLUG = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")


def by_lesson(**kwargs):
    return pytest.mark.parametrize("lesson", [pytest.param(name, marks=getattr(pytest.mark, f"lesson{name[:2]}"))
                                              for name in LESSONS], **kwargs)


def catalog():
    """The catalog, filled: each lesson's checker module imports its mistakes."""
    for lesson in lessons(every=True):
        checks_module(lesson)
    return CATALOG


def items_of(lesson):
    return [item for c in concepts(int(lesson[:2])) for item in (c.pre, c.post)]


def computed():
    return [pytest.param(item, marks=getattr(pytest.mark, f"lesson{lesson[:2]}"), id=f"{lesson[:2]}-{item.concept}-{i}")
            for lesson in LESSONS for i, item in enumerate(items_of(lesson)) if item.compute is not None]


@by_lesson()
def test_every_lesson_has_five_or_six_concepts_each_asked_before_and_after(lesson):
    found = concepts(int(lesson[:2]))
    assert 5 <= len(found) <= 6, f"{lesson}: {len(found)} concepts"
    ids = [c.id for c in found]
    assert len(set(ids)) == len(ids), f"{lesson}: a concept id is used twice: {ids}"
    for c in found:
        assert SLUG.fullmatch(c.id), f"{c.id!r} is not a short slug"
        assert c.pre.concept == c.post.concept == c.id  # one concept per item, shared by the pair
        assert c.pre.prompt != c.post.prompt, f"{c.id}: the item after the lesson repeats the one before"
        assert (c.pre.kind, c.pre.answer_text()) != (c.post.kind, c.post.answer_text()) or c.pre.options != c.post.options


@by_lesson()
def test_every_item_is_complete(lesson):
    for item in items_of(lesson):
        where = f"{lesson} {item.concept}"
        assert len(item.prompt.split()) >= 4 and len(item.explanation.split()) >= 10, where
        assert "$" not in item.explanation, f"{where}: explanations are printed as plain text"
        if item.options:
            assert 3 <= len(item.options) <= 5 and item.answer in LETTERS[:len(item.options)], where
            assert len(set(item.options)) == len(item.options), f"{where}: two options are the same"
        else:
            assert item.tolerance >= 0 and isinstance(item.answer, (int, float)), where
        if item.compute is not None and item.options:
            assert len(item.values) == len(item.options), f"{where}: a computed choice gives every option's value"


@by_lesson()
def test_the_distractors_name_real_catalog_entries(lesson):
    for item in items_of(lesson):
        for ref in item.mistakes:
            exercise, _, key = ref.partition("/")
            catalog().find(exercise, key)  # raises KeyError when the entry does not exist


@pytest.mark.parametrize("item", computed())
def test_the_answer_key_is_what_the_library_computes(item):
    ok, message = item.computed_matches()
    assert ok, f"{item.concept}: {message}"


def test_a_wrong_key_or_a_distractor_with_the_right_value_is_caught():
    from dataclasses import replace
    from encdec.concepts import lesson03
    causal = lesson03.CONCEPTS[0].pre
    assert causal.computed_matches()[0]
    assert not replace(causal, answer=10).computed_matches()[0]  # the mask hides 6, not 10
    shape = next(c for c in concepts(1) if c.id == "weights-shape").post
    assert shape.computed_matches()[0]
    assert not replace(shape, answer="b").computed_matches()[0]
    twice = replace(shape, values=(shape.values[0],) * len(shape.values))
    assert "distractors" in twice.computed_matches()[1]


def test_most_items_have_a_computed_key_or_catalog_distractors():
    every = [item for lesson in LESSONS for item in items_of(lesson)]
    assert sum(item.compute is not None for item in every) >= 0.4 * len(every)
    assert sum(bool(item.mistakes) for item in every) >= 0.8 * len(every)


# -- no item gives another away ------------------------------------------------------------------------------------
def norm(text):
    """Text compared for a give-away: lower case, Markdown's $ and backticks and spacing removed."""
    return re.sub(r"\s+", " ", re.sub(r"[$`*]", "", text)).strip().lower()


def shown(item):
    """What a student reads of an item before it is marked: its prompt and options."""
    return norm(" ".join([item.prompt, *item.options]))


def numbers_in(text):
    return set(re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])", text))


def sentences(text):
    return [s for s in (norm(p) for p in re.split(r"(?<=[.:;])\s+", text)) if len(s) >= 25]


def giveaways(item, other):
    """How `item` gives `other` away: other's answer text or a sentence of its explanation in what
    `item` shows. Single-digit numeric answers are too common to count (any count or size)."""
    found, text = [], shown(item)
    if other.options:
        answer = norm(other.answer_text())
        if len(answer) >= 12 and answer in text:
            found.append(f"the answer {answer!r}")
    else:
        answer = f"{other.answer:g}"
        if len(answer.lstrip("-")) >= 2 and answer in numbers_in(text):
            found.append(f"the answer {answer}")
    found += [f"the explanation's {s!r}" for s in sentences(other.explanation) if s in text]
    return found


@by_lesson()
def test_no_item_shows_another_items_answer_or_explanation(lesson):
    every = items_of(lesson)
    problems = [f"{a.concept} ({'pre' if i % 2 == 0 else 'post'}) shows {b.concept}'s {what}"
                for i, a in enumerate(every) for j, b in enumerate(every) if i != j for what in giveaways(a, b)]
    assert problems == []


def test_the_give_away_check_sees_one():
    from dataclasses import replace
    first, second = concepts(1)[:2]
    leaky = replace(first.post, prompt=first.post.prompt + " (Hint: " + second.pre.answer_text() + ")")
    assert giveaways(leaky, second.pre)
    numeric = second.post  # its answer is 16
    assert giveaways(replace(first.pre, prompt="With a standard deviation of 16, what ...?"), numeric)
    assert giveaways(replace(first.pre, prompt=second.post.explanation), second.post)


@by_lesson()
def test_the_checks_ask_the_bank_in_order(lesson):
    before, after = checks_module(lesson).CONCEPTS
    found = concepts(int(lesson[:2]))
    assert before.items == [c.pre for c in found] and after.items == [c.post for c in found]
    assert before.number == f"{int(lesson[:2])}.0" and before.partner is after and after.partner is before
