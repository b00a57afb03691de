"""What the class exercises of lesson 02 share: the earlier exercises that run as the reference,
random reference layers, and the student's object built with their constructor and given the
reference's weights."""

import copy

from ... import attention, layers
from ..fixtures import generator, randomize
from ..running import run_student

# Earlier exercises a student's answer may call: each runs as the reference while a later
# exercise is checked, so a mistake is charged once, where it was made.
EARLIER = dict(softmax=attention.softmax, scaled_dot_product_attention=attention.scaled_dot_product_attention,
               rms_norm=layers.rms_norm, gelu=layers.gelu, padding_mask=attention.padding_mask,
               MultiHeadAttention=attention.MultiHeadAttention, FeedForward=layers.FeedForward)


def random_layer(layer, seed):
    """A reference layer with every parameter random: gains in [0.5, 1.5], biases around 0, matrices
    with entries of size about 1/sqrt(d_in)."""
    return randomize(layer, generator(seed), 1.0, fan_in=True)


def build_student(c, cls, args, ref_obj, attributes, what):
    """The student's object built with their constructor, holding copies of the reference's
    `attributes`; None when that fails (the check stops, or the part fails, with a message)."""
    outcome = run_student(cls, args)
    if outcome.error is not None:  # nothing can be checked without an object
        c.stop(f"building `{cls.__name__}{args}` raised {outcome.error_text}. Keep the given "
               "constructor, and run the cell that defines the class again.", "error")
        return None
    obj = outcome.value
    for name in attributes:
        try:
            setattr(obj, name, copy.deepcopy(getattr(ref_obj, name)))
        except Exception as exc:  # a read-only property, say
            c.part(what, False, f"could not set `{name}` on your object ({type(exc).__name__}: {exc}); "
                                "keep the attribute names of the given constructor")
            return None
    return obj
