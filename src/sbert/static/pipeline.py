"""``distill_static``: teacher → distilled token table → (optionally) fitted on text → saved model.

Every check runs before any work: the teacher loads, each corpus file is UTF-8 and holds a sentence,
and the dimensions lie between 2 and the teacher's.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sbert.base import json_text
from sbert.base.outputs import MODEL, claiming
from sbert.data.texts import read_texts
from sbert.embeddings.identity import model_identity
from sbert.encoder.model import SentenceEncoder
from sbert.static.distill import check_dimensions, distill_table
from sbert.static.fit import FitConfig, fit_table

RECORD_FILE = "distill.json"


@claiming("output", MODEL)
def distill_static(
    teacher: str | Path | SentenceEncoder | None,
    output: str | Path,
    dimensions: int = 256,
    corpus: Sequence[str | Path] = (),
    config: FitConfig = FitConfig(),  # noqa: B008 (frozen)
    show_progress_bar: bool = True,
) -> SentenceEncoder:
    """Distil a static model from ``teacher``, fit it on ``corpus`` if given, and save it to ``output``.

    Args:
        teacher: A model name or directory (``None``: the bundled model), or a loaded encoder.
        output: The directory to write (sentence-transformers' ``StaticEmbedding`` layout, plus
            ``distill.json``: teacher, settings, sentences, loss, time): a new path, an empty folder
            or a model, checked before any work (see :mod:`sbert.base.outputs`).
        dimensions: Size of the token vectors (PCA of the teacher's), 2 to the teacher's size.
        corpus: Text files (one sentence a line, or JSONL/CSV/Parquet with a ``text`` column) to fit
            the table on; none: the distilled table as it is.
        config: Epochs, batch size, learning rate and seed of the fitting step.
        show_progress_bar: Bars for the teacher passes and the epochs.

    The fitting step keeps its state in ``<output>.checkpoint`` after every epoch: the same call
    after a crash continues there; the folder is removed once the model is saved.

    Raises:
        OutputRefusedError: ``output`` holds files that are not a model's (named, untouched).
        ModelLoadError: the teacher cannot be loaded.
        ValueError: dimensions out of range, or a corpus file that is empty or not UTF-8 (named).

    Examples:
        >>> import tempfile
        >>> model = distill_static(None, tempfile.mkdtemp() + "/static", dimensions=32, show_progress_bar=False)
        >>> model.encode(["A man plays a guitar."]).shape
        (1, 32)
    """
    model = teacher if isinstance(teacher, SentenceEncoder) else SentenceEncoder.from_pretrained(teacher)
    if model.is_static:
        raise ValueError(f"teacher {model.name!r} is a static model; distil from a transformer model")
    check_dimensions(dimensions, model.dim, model.name)
    sentences = [text for file in corpus for text in _corpus_texts(Path(file))]
    started = time.perf_counter()
    student, projection = distill_table(model, dimensions, show_progress_bar=show_progress_bar)
    output = Path(output)
    record: dict[str, Any] = {
        "teacher": model.name,
        "teacher_fingerprint": model_identity(model).fingerprint,
        "dimensions": dimensions,
        "corpus": [str(file) for file in corpus],
        "sentences": len(sentences),
    }
    if sentences:
        checkpoint = output.with_name(output.name + ".checkpoint")
        result = fit_table(student, projection, model, sentences, config, checkpoint, show_progress_bar)
        record |= {"fit": {**config.__dict__, **result}}
    record["seconds"] = round(time.perf_counter() - started, 1)
    student.name = str(output)
    student.save(output)
    (output / RECORD_FILE).write_text(json_text.dumps(record, indent=2) + "\n", encoding="utf-8")
    if sentences:
        shutil.rmtree(output.with_name(output.name + ".checkpoint"), ignore_errors=True)
    return student


def _corpus_texts(file: Path) -> list[str]:
    """The non-empty sentences of ``file``; an empty or unreadable file is an error naming it."""
    if not file.is_file():
        raise ValueError(f"corpus file {file}: no such file")
    texts = [text for text in read_texts(file) if text.strip()]
    if not texts:
        raise ValueError(f"corpus file {file}: holds no sentence")
    return texts
