"""The diagrams of the model (encdec.plotting.diagrams): they render, they say what they show, and
every library name they print exists in the library."""

import importlib
import inspect
import pkgutil
import re

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import encdec  # noqa: E402
from encdec.plotting import diagrams  # noqa: E402

FIGURES = diagrams.lesson_figures()


def library_names():
    """Every name a reader can find in encdec: module attributes, the attributes of the model's
    objects, the fields of its configuration and the parameter names of its calls."""
    names = set(dir(encdec))
    for info in pkgutil.iter_modules(encdec.__path__):
        if info.name in ("capstone", "torch_model"):
            continue  # torch-only modules; the diagrams describe the NumPy reference
        names |= set(dir(importlib.import_module(f"encdec.{info.name}")))
    model = encdec.Seq2Seq(vocab_size=11, d_model=8, n_heads=2, d_ff=16, n_encoder_layers=1, n_decoder_layers=1)
    for obj in (model, model.encoder[0], model.decoder[0], model.decoder[0].self_attn, model.decoder[0].ffn):
        names |= set(vars(obj)) | {n for n in dir(type(obj)) if not n.startswith("_")}
        names |= set(inspect.signature(obj.__call__).parameters)
    names |= set(vars(model.config))
    return names


@pytest.fixture(scope="module")
def known():
    return library_names()


@pytest.fixture(scope="module")
def drawn():
    figures = {}
    for name, (function, kwargs) in FIGURES.items():
        figures[name] = function(**kwargs)
    yield figures
    plt.close("all")


def texts(fig):
    return [t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_text().strip()]


def test_every_lesson_has_a_course_map():
    assert [f"course_map_{k:02d}" for k in range(1, 11)] == sorted(n for n in FIGURES if n.startswith("course_map"))


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_figure_renders_with_alt_text(name, drawn):
    fig = drawn[name]
    assert len(texts(fig)) >= 5, f"{name} drew almost no labels"
    assert len(fig.alt_text.split()) >= 20, f"{name}: the alt text should say what the figure shows"
    svg = diagrams.svg_bytes(fig)
    assert svg.startswith(b"<?xml") and b"<text" in svg, "labels must stay text in the SVG (searchable, small)"
    assert svg == diagrams.svg_bytes(fig), "rendering must be deterministic"


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_library_names_in_a_figure_exist(name, drawn, known):
    fig = drawn[name]
    missing = sorted(set(fig.library_names) - known)
    assert not missing, f"{name} names {missing}, which the library does not have"
    shown = " ".join(texts(fig))
    for code in fig.library_names:
        assert code in shown, f"{name} registers {code!r} but never prints it"


def test_a_misspelled_name_would_be_caught(known):
    assert {"norm1_gamma", "cross_attn", "W_q", "self_attn_mask", "n_decoder_layers"} <= known
    assert not {"norm4_gamma", "cross_attention_layer", "W_query", "causal_mask_arg"} & known


@pytest.mark.parametrize("lesson", sorted(diagrams.MAP_PARTS))
def test_course_map_highlights_this_lessons_part_in_red(lesson):
    red = matplotlib.colors.to_rgba(encdec.plotting.COLORS["highlight"])
    fig = diagrams.course_map(lesson)
    outlined = [p for p in fig.axes[0].patches if np.allclose(p.get_edgecolor(), red)]
    lines = [ln for ln in fig.axes[0].lines if np.allclose(matplotlib.colors.to_rgba(ln.get_color()), red)]
    assert outlined or lines, f"lesson {lesson}: nothing is drawn in red"
    plain = diagrams.course_map(None)
    assert not [p for p in plain.axes[0].patches if np.allclose(p.get_edgecolor(), red)]
    assert f"Lesson {lesson}" in " ".join(texts(fig))
    plt.close("all")


def test_multi_head_split_shapes_come_from_the_library():
    fig = diagrams.multi_head_split(T=5, d_model=12, n_heads=3)
    shown = " ".join(texts(fig))
    split = encdec.split_heads(np.zeros((5, 12)), 3).shape
    assert split == (3, 5, 4) and str(split) in shown
    assert str(encdec.merge_heads(np.zeros(split)).shape) in shown
    plt.close(fig)


def test_decoder_block_names_its_three_sublayers_and_norms_in_order(drawn):
    shown = texts(drawn["decoder_block"])
    order = [next(i for i, t in enumerate(shown) if re.search(rf"\b{name}\b", t))
             for name in ("norm1_gamma", "self_attn", "norm2_gamma", "cross_attn", "norm3_gamma", "ffn")]
    assert order == sorted(order), "the block's sublayers are drawn out of order"
    block = encdec.DecoderBlock(8, 2, 16)
    assert {"norm1_gamma", "norm2_gamma", "norm3_gamma", "self_attn", "cross_attn", "ffn"} <= set(vars(block))


def test_bad_lesson_number_is_a_clear_error():
    with pytest.raises(ValueError, match="lesson must be one of"):
        diagrams.course_map(11)
