"""``sbert similarity "A" "B" ...``: print the similarity matrix of a few sentences."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from sbert.base.options import METRICS
from sbert.cli.common import add_model_arguments, add_prompt_arguments, load_model

if TYPE_CHECKING:
    from sbert.embeddings.similarity import ArrayLike


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("similarity", help="similarity matrix of the sentences given")
    parser.add_argument("sentences", nargs="+", help="two or more sentences")
    parser.add_argument(
        "--metric",
        choices=METRICS,
        default="cosine",
        help="score of two vectors (default cosine; euclidean and manhattan: negated distances)",
    )
    add_model_arguments(parser)
    add_prompt_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if len(args.sentences) < 2:
        raise ValueError("give at least two sentences to compare")
    from sbert.embeddings.similarity import similarity_function

    model = load_model(args)
    vectors = model.encode(args.sentences, prompt_name=args.prompt_name, prompt=args.prompt)
    matrix = similarity_function(args.metric)(vectors, vectors)
    print(format_matrix(args.sentences, matrix))
    return 0


def format_matrix(labels: list[str], matrix: ArrayLike, width: int = 40) -> str:
    """A plain-text table: one row per sentence, columns numbered."""
    import numpy as np

    matrix = np.asarray(matrix)
    short = [label if len(label) <= width else label[: width - 1] + "…" for label in labels]
    header = " " * (width + 5) + "".join(f"{j + 1:>8}" for j in range(len(labels)))
    rows = [
        f"{i + 1:>3}. {short[i]:<{width}}" + "".join(f"{v:8.3f}" for v in row) for i, row in enumerate(matrix)
    ]
    return "\n".join([header, *rows])
