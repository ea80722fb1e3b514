"""Training under ``torchrun`` on CPU (gloo): real processes, on a tiny BERT with dropout off.

Two processes take the same optimiser steps as one process with the same global batch; in-batch
losses gathered across ranks equal the single-process loss; a run whose rank 1 is SIGKILLed resumes
to the weights of a run never stopped; bad settings stop every process with a message, not a hang.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from tests.conftest import REPO, WORDS, build_tiny_bert

from sbert import SentenceEncoder
from sbert.base.distributed import DistributedError, check_batching, join_process_group, rank_share
from sbert.cli import main
from sbert.data.training_files import read_scored_pairs, read_triplets
from sbert.losses import CoSENTLoss, MultipleNegativesRankingLoss

WORKER = Path(__file__).with_name("ddp_worker.py")
EXAMPLES = 29  # batches of 8: the last one has 5 examples, shared 3 + 2


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dropout-free tiny BERT, a triplet file and a scored-pair file."""
    work = tmp_path_factory.mktemp("ddp")
    model = build_tiny_bert(work / "model")
    config = json.loads((model / "config.json").read_text())
    config |= {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
    (model / "config.json").write_text(json.dumps(config))
    rng = np.random.default_rng(0)
    sentences = [" ".join(rng.choice(WORDS, size=rng.integers(2, 9))) for _ in range(3 * EXAMPLES)]
    triplets, scored = ["anchor\tpositive\tnegative"], ["sentence1\tsentence2\tscore"]
    for i in range(EXAMPLES):
        a, p, n = sentences[3 * i : 3 * i + 3]
        triplets.append(f"{a}\t{p}\t{n}")
        scored.append(f"{a}\t{p}\t{rng.integers(0, 6)}")
    (work / "triplets.tsv").write_text("\n".join(triplets) + "\n")
    (work / "scored.tsv").write_text("\n".join(scored) + "\n")
    return work


def train_argv(work: Path, loss: str, output: Path, epochs: int = 3, *more: str) -> list[str]:
    data = "triplets.tsv" if loss == "mnrl" else "scored.tsv"
    return [
        *("train", "file", "--train", str(work / data), "--loss", loss, "--base", str(work / "model")),
        *("--output", str(output), "--batch-size", "8", "--epochs", str(epochs), "--lr", "1e-3"),
        *("--eval-steps", "0", "--checkpoint-steps", "4", "--no-progress", "--device", "cpu", *more),
    ]


def environment() -> dict[str, str]:
    env = os.environ | {
        "PYTHONPATH": str(REPO / "src"),
        "OMP_NUM_THREADS": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    env.pop("SBERT_DATA", None)  # no STSb dev set: the runs keep their final model
    return env


def torchrun(args: Sequence[str], cwd: Path, nproc: int = 2, **popen: object) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc), *args]
    return subprocess.Popen(
        command,
        cwd=cwd,
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        **popen,
    )  # type: ignore[call-overload]


def finish(process: subprocess.Popen[str], timeout: float = 240) -> tuple[int, str]:
    output, _ = process.communicate(timeout=timeout)
    return process.returncode, output


def weights(path: Path) -> dict[str, torch.Tensor]:
    return load_file(str(path / "model.safetensors"))


def max_difference(a: Path, b: Path) -> float:
    first, second = weights(a), weights(b)
    assert first.keys() == second.keys()
    return max(float((first[k] - second[k]).abs().max()) for k in first)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def ddp(work: Path) -> dict[str, object]:
    """One torchrun launch of ddp_worker.py: the DDP runs, losses and errors the tests compare."""
    runs = {loss: train_argv(work, loss, work / "ddp" / loss) for loss in ("mnrl", "cosine-mse", "cosent")}
    runs["reference"] = train_argv(work, "mnrl", work / "ddp" / "reference", 10)
    (work / "runs.json").write_text(json.dumps(runs))
    code, output = finish(torchrun(["--standalone", str(WORKER), str(work)], cwd=work))
    assert code == 0, output
    return dict(json.loads((work / "ddp.json").read_text()))


@pytest.fixture()
def one_thread() -> Iterator[None]:
    """As each torchrun worker: one thread (two threads on two busy cores train 5x slower)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("loss", ["mnrl", "cosine-mse", "cosent"])
def test_two_processes_end_with_the_weights_of_one_process_on_the_global_batch(
    loss: str, work: Path, ddp: dict[str, object], monkeypatch: pytest.MonkeyPatch, one_thread: None
) -> None:
    monkeypatch.delenv("SBERT_DATA", raising=False)
    single = work / "single" / loss
    assert main(train_argv(work, loss, single)) == 0
    assert 0 < max_difference(single, work / "ddp" / loss) < 1e-5  # 12 steps, the last of each epoch uneven
    assert json.loads((single / "results.json").read_text())["steps"] == 12
    records = (work / "ddp" / loss / "training_log.jsonl").read_text().splitlines()
    assert [json.loads(line).get("event") for line in records].count("start") == 1  # rank 0 alone logs


@pytest.mark.parametrize("name", ["mnrl", "cosent"])
def test_gathered_in_batch_loss_equals_the_single_process_loss(
    name: str, work: Path, ddp: dict[str, object]
) -> None:
    encoder = SentenceEncoder.from_pretrained(
        work / "model", device="cpu", precision="float32", backend="torch"
    )
    if name == "mnrl":  # triplets: the hard negatives must stay with their anchors
        loss, batch = MultipleNegativesRankingLoss(encoder), read_triplets(work / "triplets.tsv")[:7]
    else:
        loss, batch = CoSENTLoss(encoder), read_scored_pairs(work / "scored.tsv")[:7]
    whole = float(loss(batch).detach())
    assert abs(ddp[f"{name}_gathered"] - whole) < 1e-5  # type: ignore[operator]
    share = [batch[i] for i in rank_share(np.arange(7), 0, 2)]  # rank 0's 4 examples alone
    assert ddp[f"{name}_local"] == pytest.approx(float(loss(share).detach()), abs=1e-5)
    assert abs(ddp[f"{name}_local"] - whole) > 1e-3  # type: ignore[operator]


def test_a_global_batch_the_processes_cannot_share_is_refused(ddp: dict[str, object]) -> None:
    assert "--batch-size 7 is the global batch" in str(ddp["error_7_7"])
    assert "must be a multiple of 2" in str(ddp["error_7_7"]) and "use 6 or 8" in str(ddp["error_7_7"])
    assert "2 processes but only 1 training examples" in str(ddp["error_1_2"])
    with pytest.raises(ValueError, match="8 processes but only 5"):
        check_batching(5, 8, 8)


def rank_pid(parent: int, rank: int) -> int | None:
    """The process of ``rank`` among the workers that torchrun ``parent`` started (Linux /proc)."""
    for entry in Path("/proc").iterdir():
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid == parent and f"RANK={rank}".encode() in (entry / "environ").read_bytes().split(b"\0"):
                return int(entry.name)
        except (OSError, ValueError, IndexError):
            continue
    return None


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="finds the rank's process in /proc")
def test_resume_after_sigkill_of_one_rank_ends_with_the_weights_of_an_uninterrupted_run(
    work: Path, ddp: dict[str, object]
) -> None:
    output = work / "killed"
    argv = ["--standalone", "-m", "sbert", *train_argv(work, "mnrl", output, 10)]
    process = torchrun(argv, cwd=work)
    deadline = time.monotonic() + 180
    while not (output / "checkpoint" / "state.json").is_file() and process.poll() is None:
        assert time.monotonic() < deadline, "no checkpoint written"
        time.sleep(0.005)
    victim = rank_pid(process.pid, 1)
    assert victim is not None, "rank 1 not found"
    os.kill(victim, signal.SIGKILL)
    code, log = finish(process)
    assert code != 0, log
    assert "rank 0 of 2: stopped at step" in log and "the last good checkpoint is kept in" in log
    stopped_at = json.loads((output / "checkpoint" / "state.json").read_text())["global_step"]
    assert 4 <= stopped_at < 40

    code, log = finish(torchrun([*argv, "--resume"], cwd=work))
    assert code == 0, log
    assert max_difference(output, work / "ddp" / "reference") < 1e-6
    records = [json.loads(line) for line in (output / "training_log.jsonl").read_text().splitlines()]
    steps = [r["step"] for r in records if "loss" in r]
    assert steps == sorted(set(steps)) and steps[-1] == 40


def test_ranks_with_different_data_are_refused_at_start(work: Path) -> None:
    """Two 'machines' (two torchrun agents, static rendezvous) whose training files differ by a line."""
    port = free_port()
    nodes = []
    for node in (0, 1):
        folder = work / f"node{node}"
        folder.mkdir()
        text = (work / "scored.tsv").read_text()
        (folder / "pairs.tsv").write_text(text if node == 0 else text.replace("\t5\n", "\t4\n", 1))
        argv = train_argv(work, "cosent", folder / "out", 1, "--rendezvous-timeout", "20")
        argv[3] = "pairs.tsv"  # each machine reads its own copy
        rendezvous = ["--nnodes", "2", "--node-rank", str(node), "--master-addr", "127.0.0.1"]
        nodes.append(
            torchrun([*rendezvous, "--master-port", str(port), "-m", "sbert", *argv], folder, nproc=1)
        )
    results = [finish(node, timeout=120) for node in nodes]
    assert all(code != 0 for code, _ in results), results
    log = results[0][1]
    assert "rank 0 of 2: the training data of rank 1 differ from rank 0's (checksum at start)" in log
    assert not (work / "node0" / "out" / "model.safetensors").exists()


def test_an_unreachable_rendezvous_is_reported_within_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    port = free_port()  # nothing listens there
    for name, value in {
        "RANK": "1",
        "WORLD_SIZE": "2",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("TORCHELASTIC_USE_AGENT_STORE", raising=False)
    started = time.monotonic()
    with pytest.raises(
        DistributedError, match=f"rank 1 of 2: cannot reach the rendezvous at 127.0.0.1:{port} within 1 s"
    ):
        join_process_group(torch.device("cpu"), rendezvous_timeout=1)
    assert time.monotonic() - started < 10  # the timeout, not a hang
