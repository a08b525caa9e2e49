"""Corpus BLEU, chrF and TER with sacreBLEU; imports without TensorFlow.

The run config checks its target language (`check_bleu_language`) before
TensorFlow starts; the recipe, the exports and `BleuCallback` score with
`corpus_scores`.
"""

import sacrebleu


def check_bleu_language(target_language):
    """Checks that sacreBLEU can score text in `target_language`.

    Raises:
        ValueError: its tokenizer for the language needs a package that is
            missing (Japanese and Korean), saying which.
    """
    try:
        sacrebleu.metrics.BLEU(trg_lang=target_language or "")
    except RuntimeError as error:  # sacreBLEU's missing-dependency error
        raise ValueError(
            f"sacreBLEU cannot score {target_language!r} here: "
            + " ".join(str(error).split())
        ) from error


def corpus_scores(hypotheses, references, target_language=None):
    """sacreBLEU corpus BLEU, chrF and TER of detokenized text against references.

    BLEU uses sacreBLEU's defaults (13a tokenization, mixed case; for a
    `target_language` of "zh", "ja" or "ko", sacreBLEU's tokenizer for
    it), so the numbers are comparable with published sacreBLEU scores;
    TER (translation edit rate: word edits per reference word, lower is
    better) uses sacreBLEU's defaults (case-insensitive, tercom
    tokenization, no normalization; text without spaces, as in Chinese,
    counts as one word a sentence). The signatures say exactly how they
    were computed.

    Args:
        hypotheses: list of `str`, the system's translations.
        references: list of `str`, one reference per hypothesis.
        target_language: the language code of the text, if known.

    Returns:
        A dict with `bleu`, `chrf`, `ter` (floats, BLEU and chrF 0-100,
        TER >= 0 in percent) and their sacreBLEU signatures
        `bleu_signature`, `chrf_signature` and `ter_signature`.

    Example:

    >>> scores = corpus_scores(["the cat sat on the mat"], ["the cat sat on the mat"])
    >>> round(scores["bleu"], 1), round(scores["chrf"], 1), round(scores["ter"], 1)
    (100.0, 100.0, 0.0)
    """
    hypotheses, references = list(hypotheses), list(references)
    if len(hypotheses) != len(references):
        raise ValueError(
            f"Got {len(hypotheses)} hypotheses but {len(references)} references."
        )
    bleu = sacrebleu.metrics.BLEU(trg_lang=target_language or "")
    chrf = sacrebleu.metrics.CHRF()
    ter = sacrebleu.metrics.TER()
    return {
        "bleu": bleu.corpus_score(hypotheses, [references]).score,
        "chrf": chrf.corpus_score(hypotheses, [references]).score,
        "ter": ter.corpus_score(hypotheses, [references]).score,
        "bleu_signature": str(bleu.get_signature()),
        "chrf_signature": str(chrf.get_signature()),
        "ter_signature": str(ter.get_signature()),
    }


def format_scores(scores):
    """`corpus_scores` as a line of the scores, then a line per signature.

    Example:

    >>> lines = format_scores(corpus_scores(["a b c d"], ["a b c e"])).splitlines()
    >>> lines[0], lines[3][:20]
    ('BLEU 59.46  chrF 47.92  TER 25.00', '  nrefs:1|case:lc|to')
    """
    line = f"BLEU {scores['bleu']:.2f}  chrF {scores['chrf']:.2f}"
    if "ter" in scores:  # results written before TER was scored have none
        line += f"  TER {scores['ter']:.2f}"
    names = ("bleu_signature", "chrf_signature", "ter_signature")
    return "\n".join([line] + [f"  {scores[name]}" for name in names if name in scores])
