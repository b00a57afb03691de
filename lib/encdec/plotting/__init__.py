"""The course's one plotting module. Every figure follows course/FIGURE_KEY.md:

colour    = role: source/encoder blue, target/decoder orange, cross-attention purple,
            reference grey, the point of the figure red;
line      = solid: measured or yours; dashed: reference or theory; dotted: a threshold;
marker    = circle: train, square: validation, triangle: test;
heatmaps  = rows are queries (who asks), columns are keys (who is looked at); each row sums to
            1; hidden (masked) cells are drawn grey and hatched;
diagrams  = boxes are computations, coloured by role; a solid chip is a [LEARNED] parameter,
            a dashed chip a [CONFIG] choice, an arrow a [STATE] tensor labelled with its shape.

`style` holds the palette and the figure factory, `charts` draws measured data, `diagrams`
draws the model itself.
"""

from .charts import alignment, bars, beam_tree, curves, head_grid, heatmap, histograms, matrix, threshold
from .diagrams import (course_map, cross_attention_flow, decoder_block, decoder_only_vs_encoder_decoder, kv_cache,
                       multi_head_split, pre_norm_vs_post_norm, shared_embedding, training_step)
from .style import CMAPS, COLORS, LINES, MARKERS, figure, shades
