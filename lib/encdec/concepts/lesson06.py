"""Lesson 6, Assembling the encoder–decoder: the concepts asked before and after the lesson."""

from dataclasses import fields

import numpy as np

from .. import model
from ..subwords import bpe_merge_step
from .items import Concept, choice, number

BOS, EOS = 1, 2
Y1, Y2, Y3 = 11, 12, 13  # three target tokens, for the shift


def _where(name):
    """Where the toy model keeps `name`: its configuration or its parameters (or neither)."""
    m = model.Seq2Seq(vocab_size=20, d_model=8, n_heads=2, d_ff=16, n_encoder_layers=1, n_decoder_layers=1, rng=0)
    if name in {f.name for f in fields(m.config)}:
        return "config"
    if any(name in key for key in m.parameters()):
        return "parameters"
    return "neither"


def _first_merge(words):
    """The pair a BPE merge joins first on {word: count}, each word split into its letters."""
    return bpe_merge_step({tuple(w): n for w, n in words.items()})[0]


def _embedding_matrices(V=20, d=8):
    m = model.Seq2Seq(vocab_size=V, d_model=d, n_heads=2, d_ff=16, n_encoder_layers=1, n_decoder_layers=1, rng=0)
    return sum(1 for p in m.parameters().values() if p.shape == (V, d))


CONCEPTS = [
    Concept(
        "teacher-forcing-shift",
        pre=choice(
            "The targets of one sentence are `[y1, y2, y3, <eos>]`. With teacher forcing, which "
            "tokens does the decoder read?",
            ["`[y1, y2, y3, <eos>]`", "`[<bos>, y1, y2, y3]`", "`[<bos>, y1, y2, y3, <eos>]`",
             "`[y2, y3, <eos>, <bos>]`"],
            answer="b",
            explanation="The targets shifted right: <bos> first and the last target dropped, so the input has the "
                        "targets' length and the position that predicts each target reads only the targets before "
                        "it. Reading the targets themselves, a position would see the token it must predict.",
            mistakes=["shift_right/last_token_kept", "shift_right/shifted_left", "train_step/targets_fed_unshifted"],
            compute=lambda: tuple(int(t) for t in model.shift_right(np.array([Y1, Y2, Y3, EOS]), BOS)),
            values=[(Y1, Y2, Y3, EOS), (BOS, Y1, Y2, Y3), (BOS, Y1, Y2, Y3, EOS), (Y2, Y3, EOS, BOS)]),
        post=choice(
            "With teacher forcing, the decoder position that must predict target $y_5$ reads which token as its "
            "own input?",
            ["$y_5$ itself.", "$y_4$, the target just before it.", "$y_6$, the target just after it.",
             "$y_3$, two targets back."],
            answer="b",
            explanation="Shifting right puts each target one position later: the position trained to predict y5 "
                        "is fed y4 (and, through the causal mask, every target before it). Fed y5 it would learn "
                        "to copy.",
            mistakes=["shift_right/shifted_by_two", "train_step/targets_fed_unshifted"]),
    ),
    Concept(
        "embedding-scale",
        pre=choice(
            "The course's model multiplies each embedding row by $\\sqrt{d_{model}}$ before adding the position "
            "encoding. Why?",
            ["To make the attention scores smaller.",
             "$E$'s entries have variance $1/d_{model}$; the factor brings them to unit variance, the order of "
             "the position encodings, so the token is not drowned by its position.",
             "So that every row has length exactly 1.",
             "So that the tied head's logits come out scaled by the same factor."],
            answer="b",
            explanation="E is initialised with entries of variance 1/d (standard deviation 0.125 at d = 64), while "
                        "the sines and cosines have root-mean-square 0.71. Unscaled, the model would see mostly "
                        "where a token is and hardly which; multiplied by sqrt(d) the entries have unit variance.",
            mistakes=["embed/no_scale", "embed/divided_by_sqrt_d", "embed/scaled_by_d"]),
        post=choice(
            "Where does the factor $\\sqrt{d_{model}}$ appear in the course's model?",
            ["On the embedding rows only, before the positions are added.",
             "On the sum $E[\\text{token}] + PE$.",
             "On the logits of the tied head.",
             "On both the embedding rows and the logits of the tied head."],
            answer="a",
            explanation="x = sqrt(d) E[token] + PE: the rows are scaled, the positions are not, and the tied head "
                        "is the plain product h E^T. Scaling the sum would scale the positions too.",
            mistakes=["embed/positions_scaled_too", "decode/scaled_head", "output_logits/scaled_by_sqrt_d_model"]),
    ),
    Concept(
        "tied-embedding",
        pre=choice(
            "The source embedding, the target embedding and the output head of the course's model: how many "
            "$V \\times d_{model}$ matrices of [LEARNED] numbers do they hold in all?",
            ["One, shared by all three.", "Two: one embedding and one head.", "Three, one each.",
             "None: the head has no parameters, and embeddings are fixed."],
            answer="a",
            explanation="One matrix E does all three jobs: it embeds the source and the target tokens and, "
                        "transposed, scores every token in the head. Tying saves V d numbers per matrix shared, and "
                        "a word is read and written with the same vector.",
            mistakes=["parameter_count/embedding_counted_twice"],
            compute=_embedding_matrices,
            values=[1, 2, 3, 0]),
        post=number(
            "By how many [LEARNED] numbers does the course's model grow when its vocabulary grows by 100 "
            "tokens, at $d_{model} = 32$?",
            3200,
            explanation="Only the shared embedding depends on V: 100 more rows of 32 numbers, 3200. Counting E "
                        "once for each of its three jobs would give 9600.",
            mistakes=["parameter_count/embedding_counted_twice"],
            compute=lambda: model.parameter_count(150, 32, 64, 2) - model.parameter_count(50, 32, 64, 2)),
    ),
    Concept(
        "final-norms",
        pre=choice(
            "After the last encoder block, what happens to the residual stream before it becomes "
            "$H_{\\text{enc}}$?",
            ["Nothing: each block already normalised its sublayers' inputs.",
             "One final RMSNorm, with the encoder's own gain.",
             "A softmax over the features.",
             "The tied head turns it into logits."],
            answer="b",
            explanation="In pre-norm blocks the residual stream is never normalised inside the stack, so the "
                        "encoder ends with one RMSNorm (encoder_norm_gamma); its output is H_enc, which every "
                        "decoder block reads as it is.",
            mistakes=["encode/no_final_norm", "encode/norm_before_the_blocks"]),
        post=choice(
            "What happens to the decoder's last state before the tied head?",
            ["Nothing: it goes straight into $h E^\\top$.",
             "A final RMSNorm with the decoder's own gain.",
             "A final RMSNorm with the encoder's gain.",
             "A softmax, so that the head returns probabilities."],
            answer="b",
            explanation="The decoder, too, ends with its own RMSNorm (decoder_norm_gamma) before the head: logits = "
                        "rms_norm(x, decoder_norm_gamma) @ E.T. Each stack has its own final gain, and the softmax "
                        "belongs to the loss and to decoding.",
            mistakes=["decode/no_final_norm", "decode/encoder_norm_gamma", "decode/returns_probabilities"]),
    ),
    Concept(
        "where-kinds-live",
        pre=choice(
            "In the NumPy model, where does `d_model`, the width, live?",
            ["In `model.config`: it is [CONFIG].",
             "In `model.parameters()`: it is [LEARNED].",
             "In what each forward call computes: it is [STATE].",
             "Nowhere: it is read from the inputs each time."],
            answer="a",
            explanation="The width is chosen before the run and is the same for every input: [CONFIG], kept in the "
                        "frozen ModelConfig. [LEARNED] arrays live in model.parameters(); [STATE] is what a "
                        "forward call computes from its inputs.",
            mistakes=[],
            compute=lambda: _where("d_model"),
            values=["config", "parameters", "state", "neither"]),
        post=choice(
            "In the NumPy model, where do the RMSNorm gains of the decoder blocks live?",
            ["In `model.config`: they are [CONFIG].",
             "In `model.parameters()`: they are [LEARNED].",
             "In what each forward call computes: they are [STATE].",
             "Nowhere: a norm has no numbers of its own."],
            answer="b",
            explanation="A gain starts at 1 and is trained like any weight: [LEARNED], one of the arrays of "
                        "model.parameters() (decoder.i.norm1_gamma and so on), saved with the model.",
            mistakes=["parameter_count/no_norm_gains"],
            compute=lambda: _where("norm1_gamma"),
            values=["config", "parameters", "state", "neither"]),
    ),
    Concept(
        "bpe-counts-occurrences",
        pre=choice(
            "A BPE tokenizer is trained on a corpus of five words, each split into letters: `pun` 12 times, "
            "`bun` 4 times, and `hug`, `pug` and `mug` once each. Which pair does its first merge join?",
            ["`u g`", "`u n`", "`p u`", "`b u`"],
            answer="b",
            explanation="BPE counts a pair once for every time a word occurs: u n occurs 12 + 4 = 16 times, p u "
                        "13, u g only 3. That u g sits in the most different words does not count; how often "
                        "the text uses them does.",
            mistakes=["bpe_merge_step/counts_per_word_type"],
            compute=lambda: _first_merge({"pun": 12, "bun": 4, "hug": 1, "pug": 1, "mug": 1}),
            values=[("u", "g"), ("u", "n"), ("p", "u"), ("b", "u")]),
        post=choice(
            "A BPE tokenizer is trained on `den` 9 times, `ten` 3 times, and `hat`, `cat`, `mat` and `rat` once "
            "each, every word split into letters. Which pair does its first merge join?",
            ["`a t`", "`d e`", "`e n`", "`t e`"],
            answer="c",
            explanation="e n occurs 9 + 3 = 12 times, d e 9, a t only 4, though a t is in four different words: "
                        "the merge joins the pair that occurs most often in the text, each word counted as often "
                        "as it occurs.",
            mistakes=["bpe_merge_step/counts_per_word_type"],
            compute=lambda: _first_merge({"den": 9, "ten": 3, "hat": 1, "cat": 1, "mat": 1, "rat": 1}),
            values=[("a", "t"), ("d", "e"), ("e", "n"), ("t", "e")]),
    ),
]
