"""Tokenizing speed: transformers' call against sbert's BatchTokenizer, on one thread and on several.

The GPU pipeline is fed by the host's tokenizing (issue 35): this measures what one core gives
through transformers' ``tokenizer(texts, truncation=True, max_length=n)`` and through
:class:`sbert.modules.batch_tokenizer.BatchTokenizer` (the same ids, checked here), and how the
latter scales over host threads, as the pipeline runs it. STSb test's sentences 8 times over
(22,064), the bundled all-MiniLM-L6-v2 tokenizer, ``TOKENIZERS_PARALLELISM=false`` (so each call
stays on its thread); median of ``--repeats``, the sides alternating each repeat.

    SBERT_DATA=../shared/data PYTHONPATH=src python benchmarks/tokenizing.py --repeats 7
    SBERT_DATA=../shared/data PYTHONPATH=src python benchmarks/tokenizing.py --options 2  # the ways to feed a GPU
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

os.environ["TOKENIZERS_PARALLELISM"] = "false"  # before tokenizers loads: one thread per call

from alternating import alternating_rates
from encode_speed import cpu_name

PIECE = 512  # sentences per call on a thread, as the pipeline cuts a chunk


def main() -> None:
    from sbert import SentenceEncoder
    from sbert.data import read_stsb
    from sbert.modules.batch_tokenizer import BatchTokenizer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("SBERT_DATA", "../shared/data"))
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument(
        "--options",
        type=int,
        metavar="THREADS",
        help="instead: the GPU pipeline's tokenizing options (tokenizing_options.py) on THREADS threads",
    )
    args = parser.parse_args()

    pairs = read_stsb("test", args.data_dir)
    sentences = [text for pair in pairs for text in (pair.sentence1, pair.sentence2)] * 8
    model = SentenceEncoder.from_pretrained(device="cpu")
    tokenizer, length = model.tokenizer, model.max_seq_length
    if args.options:
        from tokenizing_options import measure

        when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        print(f"{cpu_name()}, {os.cpu_count()} cores, {when}; {len(sentences):,} sentences a pass")
        for name, rate in measure(tokenizer, length, sentences, args.options, args.repeats).items():
            print(f"{name}: {rate:,.0f} sentences/s")
        return
    batch = BatchTokenizer(tokenizer, length)
    expected = tokenizer(sentences, truncation=True, max_length=length)["input_ids"]
    assert batch(sentences)[0] == expected, "BatchTokenizer must give transformers' ids"

    sides: dict[str, Callable[[], object]] = {
        "transformers' call, 1 thread": lambda: tokenizer(sentences, truncation=True, max_length=length),
    }
    for threads in args.threads:
        sides[f"BatchTokenizer, {threads} thread(s)"] = _threaded(batch, sentences, threads)
    for side in sides.values():
        side()  # warm-up
    rates = alternating_rates(sides, args.repeats, len(sentences))
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"{cpu_name()}, {os.cpu_count()} cores, {when}; {len(sentences):,} sentences a pass")
    base = statistics.median(rates["transformers' call, 1 thread"])
    for name, side_rates in rates.items():
        rate = statistics.median(side_rates)
        print(
            f"{name}: {rate:,.0f} sentences/s ({rate / base:.2f}× transformers' call; "
            f"min {min(side_rates):,.0f}, max {max(side_rates):,.0f})"
        )


def _threaded(
    batch: Callable[[list[str]], object], sentences: list[str], threads: int
) -> Callable[[], object]:
    pieces = [sentences[start : start + PIECE] for start in range(0, len(sentences), PIECE)]
    pool = ThreadPoolExecutor(threads)
    return lambda: list(pool.map(batch, pieces))


if __name__ == "__main__":
    main()
