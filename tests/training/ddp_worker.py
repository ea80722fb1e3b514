"""Run by test_distributed.py under ``torchrun --nproc-per-node 2``: the DDP side of its comparisons.

``python -m torch.distributed.run --nproc-per-node 2 ddp_worker.py WORK`` trains every run listed in
``WORK/runs.json`` (name -> ``sbert train`` arguments) in the one process group, computes the in-batch
losses of a 7-example global batch shared unevenly (4 + 3), tries the bad batch settings, and writes
what it found to ``WORK/ddp.json`` (rank 0).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch

from sbert import SentenceEncoder
from sbert.base.distributed import join_process_group, leave_process_group, rank_share
from sbert.cli import build_parser
from sbert.cli.train import recipe_config
from sbert.data.training_files import read_scored_pairs, read_triplets
from sbert.losses import CoSENTLoss, MultipleNegativesRankingLoss
from sbert.training import Trainer, TrainingConfig
from sbert.training.recipes import train_recipe


def main(work: Path) -> None:
    run = join_process_group(torch.device("cpu"))
    found: dict[str, object] = {}
    for argv in json.loads((work / "runs.json").read_text()).values():
        train_recipe(recipe_config(build_parser().parse_args(argv)))
    encoder = SentenceEncoder.from_pretrained(
        work / "model", device="cpu", precision="float32", backend="torch"
    )
    batches = {
        "mnrl": read_triplets(work / "triplets.tsv")[:7],
        "cosent": read_scored_pairs(work / "scored.tsv")[:7],
    }
    for name, loss in (("mnrl", MultipleNegativesRankingLoss(encoder)), ("cosent", CoSENTLoss(encoder))):
        share = [batches[name][i] for i in rank_share(np.arange(7), run.rank, run.world_size)]
        for gather in (True, False):
            loss.gather_across_ranks = gather
            found[f"{name}_{'gathered' if gather else 'local'}"] = float(loss(share).detach())
    for count, batch_size in ((7, 7), (1, 2)):  # a global batch 2 processes cannot share; too few examples
        try:
            Trainer(loss, batches["cosent"][:count], work / "unused", TrainingConfig(batch_size=batch_size))
        except ValueError as error:
            found[f"error_{count}_{batch_size}"] = str(error)
    if run.is_main:
        (work / "ddp.json").write_text(json.dumps(found))
    leave_process_group()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
