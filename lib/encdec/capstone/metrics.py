"""Translation metrics from sacrebleu, on detokenised strings: chrF and BLEU.

chrF (sacrebleu.corpus_chrf, its defaults: character n-grams up to 6, beta 2) scores the characters a
prediction shares with its reference, so a German number word one morpheme off still earns most of
its score. BLEU is computed on characters (sacrebleu's tokenize="char"): the German targets are
single words ("vierhundertzweiunddreißig"), and word-level BLEU on one-word sentences has no
bigrams at all, so it is 0 even for a perfect translation (sacrebleu's 13a tokenizer gives BLEU 0.00
on ["null"] against ["null"]). Both are corpus scores from 0 to 100, with sacrebleu's signature.
"""


def chrf(hypotheses, references):
    """sacrebleu's corpus chrF (0..100) of a list of predictions against one reference each."""
    import sacrebleu
    return float(sacrebleu.corpus_chrf(list(hypotheses), [list(references)]).score)


def bleu(hypotheses, references, tokenize="char"):
    """sacrebleu's corpus BLEU (0..100) on characters (tokenize="char"; "13a" for words)."""
    import sacrebleu
    return float(sacrebleu.corpus_bleu(list(hypotheses), [list(references)], tokenize=tokenize).score)


def scores(hypotheses, references):
    """{"chrf", "bleu", "chrf_signature", "bleu_signature"}: the report's translation metrics."""
    from sacrebleu.metrics import BLEU, CHRF
    hyps, refs = list(hypotheses), [list(references)]
    c, b = CHRF(), BLEU(tokenize="char")
    chrf_score, bleu_score = c.corpus_score(hyps, refs), b.corpus_score(hyps, refs)
    return {"chrf": round(float(chrf_score.score), 4), "bleu": round(float(bleu_score.score), 4),
            "chrf_signature": c.get_signature().format(), "bleu_signature": b.get_signature().format()}
