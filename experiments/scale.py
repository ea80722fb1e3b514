"""How big a reproduction runs: the full run (82 minutes on 2 cores, measured) and ``--quick`` (14 minutes)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Scale:
    """Sizes of every experiment; ``None`` means all of the data.

    Attributes:
        name: ``full`` or ``quick`` (or a test's own).
        seeds: Seeds of the STSb runs of Table 2 (bi-encoder, NLI then STSb, cross-encoder).
        nli_pairs: SNLI pairs for the NLI model (the data directory's SNLI test split, 9,824 pairs).
        stsb_pairs: STSb train pairs (5,749) for the Table 2 runs.
        stsb_epochs: Epochs of the STSb runs (the paper: 4).
        ablation_nli_pairs: SNLI pairs for each Table 6 classification run.
        ablation_stsb_pairs: STSb train pairs for each Table 6 regression run.
        ablation_stsb_epochs: Epochs of each Table 6 regression run.
        sts_sets: STS sets of Table 1 (``None``: all seven).
        transfer_tasks: SentEval tasks of Table 5 (``None``: all seven).
        speed_sentences: STSb test sentences timed for Table 7 (``None``: all 2,758 distinct ones).
        speed_repeats: Timed repeats per speed figure (the median is reported).
        mining_sentences: Sentences of the most-similar-pair task (the paper: 10,000).
        cross_pairs: STSb test pairs timed for the cross-encoder's rate.
        cross_lr: Peak learning rate of the cross-encoder runs. 1e-4 was chosen on STSb dev (seed 1,
            4 epochs: 2e-5 85.44, 5e-5 85.43, 1e-4 86.00); the new regression head needs more than
            the bi-encoder's 2e-5.
        bf16: Train under bf16 autocast (CPUs with native bf16); evaluations use the model's default.
    """

    name: str
    seeds: tuple[int, ...]
    nli_pairs: int | None
    stsb_pairs: int | None
    stsb_epochs: int
    ablation_nli_pairs: int | None
    ablation_stsb_pairs: int | None
    ablation_stsb_epochs: int
    sts_sets: tuple[str, ...] | None
    transfer_tasks: tuple[str, ...] | None
    speed_sentences: int | None
    speed_repeats: int
    mining_sentences: int
    cross_pairs: int | None
    cross_lr: float = 2e-5
    bf16: bool = True

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


FULL = Scale(
    name="full",
    seeds=(1, 2, 3),
    nli_pairs=None,
    stsb_pairs=None,
    stsb_epochs=4,
    ablation_nli_pairs=4000,
    ablation_stsb_pairs=None,
    ablation_stsb_epochs=1,
    sts_sets=None,
    transfer_tasks=None,
    speed_sentences=None,
    speed_repeats=3,
    mining_sentences=10_000,
    cross_pairs=None,
    cross_lr=1e-4,
)

QUICK = Scale(
    name="quick",
    seeds=(1, 2),
    nli_pairs=2000,
    stsb_pairs=1000,
    stsb_epochs=1,
    ablation_nli_pairs=1000,
    ablation_stsb_pairs=1000,
    ablation_stsb_epochs=1,
    sts_sets=None,
    transfer_tasks=("CR", "TREC"),
    speed_sentences=1000,
    speed_repeats=3,
    mining_sentences=10_000,
    cross_pairs=500,
    cross_lr=1e-4,
)
