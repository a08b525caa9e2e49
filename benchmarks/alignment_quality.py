"""Alignment error rate on a gold set: every decoder layer and head, and eflomal.

A model's word alignments (`keras_transformer.alignment`) are read from one
decoder layer's cross-attention, averaged over its first heads: the model
config's `alignment_layer` and `alignment_heads`, in the pass of the
decoder under its causal mask or (`full_context_alignment`) without it.
This scores every choice on a gold set of sure and possible links, each
single head too (for insight: the config can name only a layer's first
heads), in both passes ("full" names the one without the mask), by
forced decoding of the gold pairs (the config's choice also with the
source words that no target piece attends to most left unlinked,
`word_links(every_source_word=False)`), and eflomal (pip `eflomal`) given
a training text:

    python benchmarks/alignment_quality.py RUN_DIR|MODEL.keras \\
        --gold ../shared/data/word-alignment \\
        --eflomal-text train.en train.fr --speed EXPORT --teacher LINKS

The gold set (`enfr.src-tgt`, `enfr.gold`, 1-indexed links) is the
Hansards English-French one of `../shared/data/word-alignment`; the model
translates English into French. eflomal aligns the training text with
the gold pairs appended (the same text the model should have been trained
on) and is scored on those pairs: forward, reverse, and their
intersection and union. With `--teacher`, the links a guided model was
trained toward on the gold pairs, it says how near the attention that
aligns came to them. With `--speed`, an export of the model is timed on
the gold sources: its translation, `align`, and both. Prints one JSON
object.
"""

import argparse
import itertools
import json
import os
import tempfile
import time

import numpy as np


def read_gold(folder):
    """(sources, targets, sure, possible) of a gold folder."""
    from keras_transformer.alignment import parse_pharaoh

    with open(os.path.join(folder, "enfr.src-tgt"), encoding="utf-8") as file:
        pairs = [line.rstrip("\n").split(" ||| ") for line in file]
    with open(os.path.join(folder, "enfr.gold"), encoding="utf-8") as file:
        gold = [parse_pharaoh(line, first_index=1) for line in file]
    if len(gold) != len(pairs):
        raise ValueError(f"{len(pairs)} pairs but {len(gold)} gold lines.")
    sources, targets = (list(side) for side in zip(*pairs, strict=True))
    sure, possible = (list(side) for side in zip(*gold, strict=True))
    return sources, targets, sure, possible


def load_translator(model_path):
    """A `Translator` of a run folder or `.keras` file and its tokenizer,
    long enough for every gold sentence: nothing is cut."""
    import keras_transformer.models.transformer  # noqa: F401  (registers it)
    from keras_transformer.data.tokenizer import load_tokenizer
    from keras_transformer.export import Translator
    from keras_transformer.recipe.run_directory import model_and_run
    from keras_transformer.training import load_model

    path, run = model_and_run(model_path)
    model = load_model(path, compile=False)
    return Translator(model, load_tokenizer(run.tokenizer), max_length=512)


def model_choices(translator, sources, targets, batch_size):
    """{"layer heads" or "layer head h": per sentence its links}, read in
    the causal pass and, prefixed "full ", in the pass without the causal
    mask (full context); the model config's choice again with the source
    words that no target piece attends to most left unlinked
    (`word_links(every_source_word=False)`), from the same attention; and
    the sentences whose words the tokenizer counts otherwise."""
    from keras_transformer.alignment import (
        alignment_attention,
        word_links,
        word_positions,
    )
    from keras_transformer.decoding.forced import (
        teacher_forced_cross_attention,
        teacher_forced_inputs,
    )

    model = translator.model
    layers, heads = model.config.num_decoder_layers, model.config.num_heads
    its_choice = _choice(model.config)
    choices, unlinked_left, miscounted = {}, [], 0
    for start in range(0, len(sources), batch_size):
        batch = slice(start, start + batch_size)
        source_ids, target_ids, encoded, mask = translator.forced_inputs(
            sources[batch], targets[batch]
        )
        passes = {
            "": teacher_forced_cross_attention(model, target_ids, encoded, mask),
            "full ": model.full_context_cross_attention(
                teacher_forced_inputs(target_ids), encoded, mask, num_layers=layers
            ),
        }
        source_words = word_positions(source_ids, translator.source_piece_roles)
        target_words = word_positions(target_ids, translator.target_piece_roles)
        for words, texts in ((source_words, sources), (target_words, targets)):
            counts = np.asarray(words).max(axis=1) + 1  # (B,) words a row
            miscounted += sum(
                int(count != len(text.split()))
                for count, text in zip(counts, texts[batch], strict=True)
            )
        options = [(layer, n) for layer in range(layers) for n in range(heads + 1)]
        options += [(layer, "head", h) for layer in range(layers) for h in range(heads)]
        for (context, attention), option in itertools.product(passes.items(), options):
            if option[1] == "head":
                maps = np.asarray(attention)[:, option[0], option[2]]  # (B, T, S)
            else:
                maps = alignment_attention(attention, option[0], option[1])
            name = context + " ".join(map(str, option))
            links = word_links(maps, source_words, target_words)
            choices.setdefault(name, []).extend(_link_sets(links))
            if name == its_choice:
                argmax_only = word_links(
                    maps, source_words, target_words, every_source_word=False
                )
                unlinked_left.extend(_link_sets(argmax_only))
    return choices, unlinked_left, miscounted


def _link_sets(links):
    """Per sentence, the set of (source word, target word) of a `word_links`
    result."""
    return [{tuple(link) for link in np.argwhere(row)} for row in np.asarray(links)]


def teacher_agreement(translator, sources, targets, teacher, batch_size):
    """How near the attention that the model config reads is to the links
    it was trained toward (guided alignment): over the target pieces the
    teacher links, the share whose most attended source piece is linked,
    and the cross-entropy against the links spread over the pieces (the
    loss `GuidedAlignmentLoss` trains), beside its least value, the
    links' own entropy."""
    import tensorflow as tf

    from keras_transformer.alignment import alignment_attention
    from keras_transformer.data.alignment_targets import alignment_targets
    from keras_transformer.decoding.forced import teacher_forced_cross_attention

    model = translator.model
    config = model.config
    roles = translator.source_piece_roles, translator.target_piece_roles
    hits, cross_entropy, entropy, rows = 0, 0.0, 0.0, 0
    for start in range(0, len(sources), batch_size):
        batch = slice(start, start + batch_size)
        source_ids, target_ids, encoded, mask = translator.forced_inputs(
            sources[batch], targets[batch]
        )
        attention = teacher_forced_cross_attention(
            model, target_ids, encoded, mask, full_context=config.full_context_alignment
        )
        maps = np.asarray(
            alignment_attention(
                attention, config.alignment_layer_index, config.alignment_heads
            )
        )  # (B, T, S)
        for row, line in enumerate(teacher[batch]):
            links = alignment_targets(
                tf.constant(line), source_ids[row], target_ids[row], *roles
            ).numpy()  # (T, S)
            linked = links.sum(axis=1) > 0  # (T,)
            share = links[linked] / links[linked].sum(axis=1, keepdims=True)
            attended = maps[row][linked]  # (linked, S)
            hits += int(
                np.take_along_axis(links[linked], attended.argmax(1)[:, None], 1).sum()
            )
            cross_entropy -= float((share * np.log(attended + 1e-9)).sum())
            entropy -= float((share * np.log(np.where(share > 0, share, 1.0))).sum())
            rows += int(linked.sum())
    return {
        "linked_target_pieces": rows,
        "most_attended_is_linked": round(hits / rows, 4),
        "cross_entropy": round(cross_entropy / rows, 3),
        "least_cross_entropy": round(entropy / rows, 3),
    }


def eflomal_rates(text_files, sources, targets, sure, possible):
    """eflomal's AER on the gold pairs, aligned with the training text."""
    import eflomal

    from keras_transformer.alignment import alignment_error_rate, parse_pharaoh

    lines = []
    for path in text_files:
        with open(path, encoding="utf-8") as file:
            lines.append([" ".join(line.split()) for line in file])
    source_text, target_text = (
        side + gold for side, gold in zip(lines, (sources, targets), strict=True)
    )
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        forward, reverse = (os.path.join(folder, name) for name in ("fwd", "rev"))
        eflomal.Aligner().align(
            source_text,
            target_text,
            links_filename_fwd=forward,
            links_filename_rev=reverse,
        )
        links = {}
        for name, path in (("forward", forward), ("reverse", reverse)):
            with open(path, encoding="utf-8") as file:
                every = [parse_pharaoh(line)[0] for line in file]
            links[name] = every[-len(sources) :]
    seconds = time.perf_counter() - started
    pair = links["forward"], links["reverse"]
    links["intersection"] = [a & b for a, b in zip(*pair, strict=True)]
    links["union"] = [a | b for a, b in zip(*pair, strict=True)]
    rates = {
        name: round(100 * alignment_error_rate(found, sure, possible), 2)
        for name, found in links.items()
    }
    return {"aer": rates, "pairs": len(source_text), "seconds": round(seconds, 1)}


def speed(export, sources, targets, batch_size, repeats=3):
    """Seconds a sentence of an export's translation (the default beam
    search), of `align` on the pairs, and of both (translate, then align
    the translations): the fastest of `repeats` passes over the sources."""
    from keras_transformer.export.engines import open_export

    engine = open_export(export)
    batches = [
        (sources[start : start + batch_size], targets[start : start + batch_size])
        for start in range(0, len(sources), batch_size)
    ]

    def translate():
        for texts, _ in batches:
            engine.translate(texts)

    def align():
        for texts, references in batches:
            engine.align(texts, references)

    def both():
        for texts, _ in batches:
            engine.align(texts, engine.translate(texts))

    result = {}
    for name, run in (("translate", translate), ("align", align), ("both", both)):
        run()  # traced and warm
        fastest = min(_seconds(run) for _ in range(repeats))
        result[f"{name}_ms_per_sentence"] = round(1000 * fastest / len(sources), 2)
    result["alignment_cost"] = round(
        result["both_ms_per_sentence"] / result["translate_ms_per_sentence"], 3
    )
    return result


def _seconds(function):
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def _choice(config):
    """ "layer heads" of a config, as the rows of the results name them."""
    context = "full " if config.full_context_alignment else ""
    return f"{context}{config.alignment_layer_index} {config.alignment_heads}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", metavar="RUN_DIR|MODEL.keras")
    parser.add_argument("--gold", default="../shared/data/word-alignment")
    parser.add_argument(
        "--eflomal-text",
        nargs=2,
        metavar=("SOURCE", "TARGET"),
        help="the training text eflomal aligns, with the gold pairs appended",
    )
    parser.add_argument(
        "--teacher",
        metavar="FILE",
        help="the links the model was trained toward, a Pharaoh line per "
        "gold pair (0-indexed, e.g. the last lines of --train-alignments): "
        "how near the attention that aligns came to them",
    )
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument(
        "--speed",
        metavar="EXPORT",
        help="also time an export of the model: translation, align, and both, "
        "per gold sentence in batches of --batch-size",
    )
    args = parser.parse_args()

    from keras_transformer.alignment import alignment_error_rate
    from keras_transformer.models.config import ALIGNMENT_HEADS, ALIGNMENT_LAYER

    sources, targets, sure, possible = read_gold(args.gold)
    started = time.perf_counter()
    translator = load_translator(args.model)
    config = translator.model.config
    choices, unlinked_left, miscounted = model_choices(
        translator, sources, targets, args.batch_size
    )
    rates = {
        option: round(100 * alignment_error_rate(links, sure, possible), 2)
        for option, links in choices.items()
    }
    configurable = {k: v for k, v in rates.items() if "head " not in k}
    best = min(configurable, key=configurable.get)
    its_choice = _choice(config)
    result = {
        "gold_pairs": len(sources),
        "words_counted_otherwise": miscounted,
        "model": {
            "path": args.model,
            "its_config_choice": its_choice,
            "its_config_choice_aer": configurable[its_choice],
            "its_config_choice_aer_unlinked_source_words_left": round(
                100 * alignment_error_rate(unlinked_left, sure, possible), 2
            ),
            "package_default": _choice(
                config.replace(
                    alignment_layer=ALIGNMENT_LAYER,
                    alignment_heads=ALIGNMENT_HEADS,
                    full_context_alignment=False,
                )
            ),
            "best_configurable": best,
            "aer_by_layer_and_first_heads": configurable,
            "aer_by_single_head": {k: v for k, v in rates.items() if "head " in k},
            "seconds": round(time.perf_counter() - started, 1),
        },
    }
    if args.teacher:
        with open(args.teacher, encoding="utf-8") as file:
            teacher = [line.rstrip("\n") for line in file]
        if len(teacher) != len(sources):
            raise ValueError(f"{len(sources)} gold pairs but {len(teacher)} lines.")
        result["model"]["teacher"] = teacher_agreement(
            translator, sources, targets, teacher, args.batch_size
        )
    if args.speed:
        result["speed"] = speed(args.speed, sources, targets, args.batch_size)
    if args.eflomal_text:
        result["eflomal"] = eflomal_rates(
            args.eflomal_text, sources, targets, sure, possible
        )
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
