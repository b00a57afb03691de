"""Exercise 3.6, a tag quiz: the quantities of the decoder stack to tag [LEARNED], [CONFIG] or [STATE],
each with why it carries its tag, and the checker."""

from .tag_quiz import Item, TagQuiz


TAG_QUIZ = TagQuiz(
    "3.6", "[LEARNED], [CONFIG] or [STATE]?", "quantity_tags", points=3,
    items=[
        Item("the self-attention projections `W_q, W_k, W_v, W_o` of a decoder block", "LEARNED",
             "they are weight matrices, and every training step moves them along their gradient."),
        Item("the number of decoder blocks `N_dec`", "CONFIG",
             "you pick it before training; no gradient can add or remove a block."),
        Item("the attention weights of a decoder block, for one input", "STATE",
             "the softmax computes them afresh from each input's queries and keys; a new input gives new weights."),
        Item("the embedding matrix `E`, shared by the source, the target and the output head", "LEARNED",
             "its rows are trained like any weight; tying it to the output head makes it one parameter "
             "used in three places, not a fixed table."),
        Item("the logits `h @ E.T` for one input", "STATE",
             "they are the output of a forward pass on one input; a new input gives new logits."),
        Item("the rule that position `i` may only look at positions `j <= i` (the causal-mask policy)", "CONFIG",
             "the rule is a design decision fixed before training, the same for every input, with no parameters. "
             "(The (m, m) array that create_causal_mask(m) builds from it for an input of length m is STATE.)"),
        Item("the RMSNorm gains `norm1_gamma`, `norm2_gamma`, `norm3_gamma`", "LEARNED",
             "they start at 1 but are trained like any other weight."),
        Item("the encoder output `H_enc` for one source sentence", "STATE",
             "it is computed from the source each time the model runs (once per sentence, then reused "
             "at every decoding step); training changes the weights that produce it, not it."),
        Item("the widths `d_model` and `d_ff` and the number of heads `h`", "CONFIG",
             "they fix the shapes of the weight matrices, so they must be chosen before any weight exists."),
        Item("the cross-attention projections of a decoder block", "LEARNED",
             "they are a second full set of weight matrices, trained like the self-attention ones."),
        Item("the decoder hidden states `H_dec` after each block", "STATE",
             "they are intermediate results of one forward pass, different for every input."),
        Item("whether the source, the target and the output head share one embedding matrix", "CONFIG",
             "it decides how many embedding matrices exist, an architecture choice made before training, "
             "not the values inside them."),
        Item("the predicted next-token probabilities `softmax(h @ E.T)`", "STATE",
             "they are computed from one input's logits and change with every input."),
        Item("the feed-forward weights `W1, b1, W2, b2`", "LEARNED",
             "weights and biases are both parameters: the optimiser updates them at every step."),
        Item("the learning rate and RMSNorm's `eps`", "CONFIG",
             "you set them before the run (a learning-rate schedule too: a fixed formula of the step number, "
             "Lesson 8); the optimiser uses the learning rate but never learns it."),
        Item("the mask array that `decoder_mask(tgt_in, pad_id)` builds for one batch of targets", "STATE",
             "the program builds it from the batch at hand: its shape follows the target length and its hidden "
             "columns follow where the pads are, so a new batch gives a new array. Only the rule it applies "
             "(item 6) is CONFIG."),
    ],
)


@TAG_QUIZ.checked_by
def check_quantity_tags(quantity_tags=None, *, points=None):
    """Each item earns the same share of the points."""
    return TAG_QUIZ.check(quantity_tags, points)
