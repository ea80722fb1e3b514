"""sbert's SentEval transfer protocols against SentEval's own toolkit, on the very same vectors.

SentEval (facebookresearch/SentEval) is not a dependency: pass a checkout of it with ``--senteval``
(``git clone https://github.com/facebookresearch/SentEval``). Its own data loading and classifier
run unchanged on the CPU (its ``.cuda()`` calls become no-ops; ``inspect.getargspec``, gone in
Python 3.11, is aliased), with the settings its README recommends: ``usepytorch=True``, ``kfold=10``,
classifier ``{"nhid": 0, "optim": "adam", "batch_size": 64, "tenacity": 5, "epoch_size": 4}``. Its
batcher encodes with the bundled model in float32 and keeps every vector; sbert's ``senteval`` and
``fast`` protocols then classify those same vectors. Run it under the shared lock: SentEval's own
classifier takes minutes per task.

    flock /tmp/sbert-heavy.lock python benchmarks/senteval_agreement.py --senteval ../SentEval \\
        --data-dir ../shared/data --tasks CR TREC MRPC
"""

from __future__ import annotations

import argparse
import inspect
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from sbert import SentenceEncoder
from sbert.evaluation.senteval import evaluate_task
from sbert.evaluation.sts import PrecomputedEncoder


def cpu_only_senteval(checkout: Path):  # type: ignore[no-untyped-def]
    """Import SentEval from ``checkout`` with its CUDA calls turned into no-ops."""
    inspect.getargspec = inspect.getfullargspec  # type: ignore[attr-defined]
    torch.nn.Module.cuda = lambda self, *args, **kwargs: self  # type: ignore[method-assign]
    torch.Tensor.cuda = lambda self, *args, **kwargs: self  # type: ignore[method-assign]
    torch.cuda.FloatTensor = torch.FloatTensor  # type: ignore[attr-defined, misc]
    move = torch.Tensor.to

    def to_cpu(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        args = tuple(
            torch.device("cpu") if isinstance(a, torch.device) and a.type == "cuda" else a for a in args
        )
        return move(self, *args, **kwargs)

    torch.Tensor.to = to_cpu  # type: ignore[method-assign]
    sys.path.insert(0, str(checkout))
    import senteval

    return senteval


class SameVectors:
    """The vectors SentEval's run made; ``fast`` reads unnormalised whitespace, hence the join."""

    def __init__(self, lookup: PrecomputedEncoder) -> None:
        self.lookup = lookup

    def encode(self, sentences: list[str], batch_size: int = 32) -> np.ndarray:
        return self.lookup.encode([" ".join(s.split()) for s in sentences])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--senteval", type=Path, required=True, help="a checkout of facebookresearch/SentEval"
    )
    parser.add_argument("--data-dir", type=Path, required=True, help="sbert's data directory")
    parser.add_argument("--tasks", nargs="+", default=["MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC"])
    parser.add_argument("--threads", type=int, default=1, help="torch threads for SentEval's classifier")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    senteval = cpu_only_senteval(args.senteval)
    model = SentenceEncoder.from_pretrained(precision="float32")
    stored: dict[str, np.ndarray] = {}

    def batcher(params, batch):  # type: ignore[no-untyped-def]
        sentences = [" ".join(tokens) for tokens in batch]  # SentEval hands over token lists
        vectors = np.asarray(model.encode(sentences, batch_size=64, show_progress_bar=False))
        stored.update(zip(sentences, vectors))
        return vectors

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "downstream").symlink_to((args.data_dir / "senteval_transfer").resolve())
        params = {
            "task_path": folder,
            "usepytorch": True,
            "kfold": 10,
            "seed": 1111,
            "classifier": {"nhid": 0, "optim": "adam", "batch_size": 64, "tenacity": 5, "epoch_size": 4},
        }
        print(
            "| Task | SentEval's toolkit | sbert senteval | sbert fast | SentEval (s) | sbert senteval (s) |"
        )
        print("|---|---|---|---|---|---|")
        for task in args.tasks:
            stored.clear()
            start = time.perf_counter()
            own = senteval.engine.SE(params, batcher).eval(task)
            own_seconds = time.perf_counter() - start
            same = SameVectors(PrecomputedEncoder(list(stored), np.stack(list(stored.values()))))
            start = time.perf_counter()
            ours = evaluate_task(same, task, args.data_dir, protocol="senteval")
            ours_seconds = time.perf_counter() - start
            fast = evaluate_task(same, task, args.data_dir, protocol="fast")
            f1 = f" (F1 {own['f1']:.2f} / {ours.f1:.2f} / {fast.f1:.2f})" if task == "MRPC" else ""
            print(
                f"| {task}{f1} | {own['acc']:.2f} | {ours.accuracy:.2f} | {fast.accuracy:.2f} "
                f"| {own_seconds:.0f} | {ours_seconds:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
