"""Lesson 10, Capstone in PyTorch: the concepts asked before and after the lesson."""

import numpy as np

from .. import optim
from .items import Concept, choice, number


def _clip_factor(norm, max_norm):
    grads = {"W": np.array([norm, 0.0])}
    optim.clip_grad_norm(grads, max_norm)
    return float(grads["W"][0] / norm)


def _decayed(shape):
    return "decayed" if optim.is_matrix("p", np.zeros(shape)) else "not decayed"


CONCEPTS = [
    Concept(
        "copy-in-place",
        pre=choice(
            "You move a trained NumPy model's weights into the course's PyTorch model, whose parameters have "
            "the same names and shapes. How is each array copied?",
            ["Transposed first, because torch stores weights the other way round.",
             "In place, into the existing parameter: `p.copy_(torch.from_numpy(value))` under "
             "`torch.no_grad()`.",
             "By assigning a new `nn.Parameter` built from the array.",
             "By `p.data = torch.from_numpy(value)`."],
            answer="b",
            explanation="The course's torch model keeps x @ W with W stored (d_in, d_out), like the NumPy one, so "
                        "nothing is transposed. Copying into the existing tensor keeps it the object everything "
                        "else holds, converts to the parameter's dtype and device, and no_grad lets torch change "
                        "a leaf that requires grad.",
            mistakes=["load_numpy_parameters/transposed", "load_numpy_parameters/new_parameters",
                      "load_numpy_parameters/data_from_numpy"]),
        post=choice(
            "An optimizer was made from the model's parameters before the trained weights were loaded. Which "
            "way of loading leaves the optimizer training the loaded weights?",
            ["Replacing every parameter with a new `nn.Parameter` holding the loaded values.",
             "Building a fresh model from the loaded values.",
             "Copying the values into the existing parameters, in place, under `torch.no_grad()`.",
             "Any of them: an optimizer looks its parameters up by name."],
            answer="c",
            explanation="An optimizer holds the parameter tensors themselves, not their names. Only an in-place "
                        "copy keeps those tensors; new ones would leave the optimizer stepping the old, "
                        "unloaded weights.",
            mistakes=["load_numpy_parameters/new_parameters"]),
    ),
    Concept(
        "cosine-schedule",
        pre=choice(
            "After its linear warm-up, how does the capstone's learning rate change?",
            ["It stays at the peak until the last step.",
             "It decays like $1/\\sqrt{\\text{step}}$, without end.",
             "It follows half a cosine wave from the peak down to `min_lr`, reached at the last step.",
             "It follows a full cosine wave, from the peak down and back up to the peak."],
            answer="c",
            explanation="lr = min_lr + (peak_lr - min_lr) (1 + cos(pi p)) / 2, with p going from 0 at the end of "
                        "the warm-up to 1 at total_steps (and clamped there): half a cosine wave down to min_lr. "
                        "The 1/sqrt(step) decay is the 2017 schedule of Lesson 8.",
            mistakes=["lr_at/cosine_without_half", "lr_at/no_clamp_after_the_end", "lr_at/min_lr_ignored"]),
        post=number(
            "Warm-up and cosine decay with `peak_lr = 0.002`, `warmup_steps = 100`, `total_steps = 1100` and "
            "`min_lr = 0`: what is the rate at step 600, half way through the decay?",
            0.001, tolerance=1e-9,
            explanation="Half way, p = (600 - 100) / (1100 - 100) = 0.5 and cos(pi / 2) = 0, so the rate is "
                        "half the peak: 0.002 * (1 + 0) / 2 = 0.001.",
            mistakes=["lr_at/progress_over_total", "lr_at/decay_from_step_zero", "lr_at/cosine_without_half"],
            compute=lambda: float(optim.warmup_cosine_schedule(600, 0.002, 100, 1100, 0.0))),
    ),
    Concept(
        "what-to-decay",
        pre=choice(
            "The capstone's AdamW decays some parameters and not others. An RMSNorm gain, a vector of "
            "$d_{model}$ numbers, goes in which group?",
            ["Decayed, like every parameter.",
             "Not decayed: it is a 1-D vector whose neutral value is 1, not 0.",
             "Decayed twice as strongly, since it scales a whole sublayer.",
             "It has no group: gains are not trained."],
            answer="b",
            explanation="Weight decay pulls a parameter towards 0 and is meant for the weight matrices. A gain's "
                        "neutral value is 1: pulling it to 0 would shrink the sublayer's input for no reason. "
                        "Gains and biases, the 1-D parameters, are left alone.",
            mistakes=["make_optimizer/decay_everything", "make_optimizer/groups_swapped"],
            compute=lambda: _decayed((16,)),
            values=["decayed", "not decayed", "doubled", "none"]),
        post=choice(
            "And the embedding matrix $E$, shape $(V, d_{model})$, also the tied output head?",
            ["Not decayed: the embedding is special.", "Decayed: it is a matrix, like the projections.",
             "Decayed only in its output-head role.", "It has no group: embeddings are fixed."],
            answer="b",
            explanation="The rule decays exactly the parameters with two or more dimensions: the projections, the "
                        "feed-forward matrices and the embedding. A rule by name (say, only names starting with W) "
                        "would miss it.",
            mistakes=["make_optimizer/embedding_not_decayed"],
            compute=lambda: _decayed((40, 16)),
            values=["not decayed", "decayed", "head only", "none"]),
    ),
    Concept(
        "gradient-clipping",
        pre=choice(
            "Clipping by the global norm with `max_norm = 1`, when all gradients together have norm 4, does "
            "what?",
            ["Multiplies every gradient by 1/4: the step keeps its direction, its length becomes 1.",
             "Clips every entry of every gradient to $[-1, 1]$.",
             "Sets the gradients to zero and skips the step.",
             "Divides each parameter's gradient by its own norm."],
            answer="a",
            explanation="All gradients are rescaled together by min(1, max_norm / norm): one positive factor, so "
                        "the direction of the update is unchanged and only its length is capped. Clipping each "
                        "entry would change the direction.",
            mistakes=["torch_train_step/clip_after_step", "torch_train_step/norm_after_clipping"]),
        post=number(
            "The global gradient norm is 3 and `max_norm` is 0.5. By what factor does clipping multiply every "
            "gradient? (Three decimals.)",
            0.167, tolerance=0.001,
            explanation="max_norm / norm = 0.5 / 3 = 1/6 = 0.167, applied to every gradient alike; the returned "
                        "norm is the one before clipping, 3.",
            mistakes=["torch_train_step/norm_after_clipping"],
            compute=lambda: _clip_factor(3.0, 0.5)),
    ),
    Concept(
        "zero-grad",
        pre=choice(
            "Why does a PyTorch training step call `optimizer.zero_grad()` before `loss.backward()`?",
            ["`backward()` adds its gradients to what `.grad` holds, so the previous step's would be added in.",
             "To free the memory of the computation graph.",
             "To reset Adam's running averages.",
             "To set this step's learning rate."],
            answer="a",
            explanation="torch accumulates: each backward pass adds to .grad. Without zeroing, step k would use "
                        "the sum of the gradients of all k batches so far.",
            mistakes=["torch_train_step/no_zero_grad"]),
        post=number(
            "The same batch goes through `loss.backward()` three times without `zero_grad()`. One pass alone "
            "gives a gradient of norm 2.5. What is the norm of `.grad` afterwards?",
            7.5, tolerance=1e-9,
            explanation="The three identical gradients are added: 3 * 2.5 = 7.5, three times too long.",
            mistakes=["torch_train_step/no_zero_grad"]),
    ),
    Concept(
        "exact-match",
        pre=choice(
            "A model predicts 95 % of the target tokens right. What can its exact match be?",
            ["Exactly 95 %.", "At least 95 %.",
             "At most 95 %, and often far lower: a sequence counts only when every one of its tokens, "
             "`<eos>` included, is right.",
             "Unrelated: exact match counts characters, not tokens."],
            answer="c",
            explanation="Exact match scores whole sequences: one wrong token spoils its sequence. A few errors "
                        "spread over many sequences leave token accuracy high and exact match much lower.",
            mistakes=["exact_match/token_accuracy", "exact_match/any_token_counts"]),
        post=number(
            "Four predictions of 10 tokens each have token accuracies of 100 %, 90 %, 100 % and 80 %. What is "
            "their exact match, as a fraction?",
            0.5, tolerance=1e-9,
            explanation="Only the two sequences with every token right count: 2 of 4, 0.5, although the token "
                        "accuracy is 0.925.",
            mistakes=["exact_match/token_accuracy", "exact_match/count_not_fraction"]),
    ),
]
