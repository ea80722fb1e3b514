"""A real encode process killed with SIGKILL mid-run, then resumed: the store equals an uninterrupted one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from sbert.store import CorpusOptions, EmbeddingStore, encode_corpus

# The child encodes slowly (a pause per chunk), so that the kill lands mid-run, inside a shard.
CHILD = """
import sys, time, torch
from sbert import SentenceEncoder
from sbert.store import CorpusOptions, encode_corpus
torch.set_num_threads(int(sys.argv[4]))
model = SentenceEncoder.from_pretrained(sys.argv[1], device="cpu", precision="float32", backend="torch")
plain = model.encode
def slow(*args, **kwargs):
    time.sleep(0.05)
    return plain(*args, **kwargs)
model.encode = slow
options = CorpusOptions(shard_size=20, chunk_rows=5, dtype=sys.argv[5], show_progress=False)
encode_corpus(model, sys.argv[2], sys.argv[3], options)
"""


def finished_rows(store: Path) -> int:
    try:
        return int(json.loads((store / "manifest.json").read_text())["rows"])
    except (FileNotFoundError, json.JSONDecodeError, KeyError):
        return 0


# int8: the calibrated ranges must survive the kill too. (float32 resume is byte-compared in
# test_corpus.py::test_a_full_disk_stops_cleanly_and_resumes, and by benchmarks/corpus_encode.py.)
@pytest.mark.parametrize("dtype", ["int8"])
def test_sigkill_then_resume_gives_byte_identical_shards(
    tmp_path: Path, tiny_encoder, tiny_model_dir: Path, dtype: str
) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(0)
    words = ["dog", "cat", "runs", "the", "park", "plays", "guitar", "happy"]
    texts = [" ".join(rng.choice(words, size=int(rng.integers(1, 14)))) for _ in range(150)]
    source = tmp_path / "in.txt"
    source.write_text("\n".join(texts) + "\n", encoding="utf-8")
    store = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            CHILD,
            str(tiny_model_dir),
            str(source),
            str(store),
            str(torch.get_num_threads()),
            dtype,
        ],
        env=env,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while finished_rows(store) < 40 and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    child.send_signal(signal.SIGKILL)
    _, stderr = child.communicate()
    assert child.returncode == -signal.SIGKILL, stderr.decode()
    rows = finished_rows(store)
    assert 40 <= rows < 150, "the kill must land mid-run"
    with pytest.raises(ValueError, match="unfinished"):
        EmbeddingStore.open(str(store))

    resumed = encode_corpus(
        tiny_encoder,
        source,
        store,
        CorpusOptions(shard_size=20, chunk_rows=5, dtype=dtype, show_progress=False),
    )
    reference = encode_corpus(
        tiny_encoder,
        source,
        tmp_path / "whole",
        CorpusOptions(shard_size=20, chunk_rows=5, dtype=dtype, show_progress=False),
    )
    shards = sorted(p.name for p in store.iterdir())
    assert shards == sorted(p.name for p in (tmp_path / "whole").iterdir()), (
        "half-written files are cleaned up"
    )
    for name in shards:
        if name.endswith(".parquet"):
            assert (store / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name
    assert [s.sha256 for s in resumed.shards] == [s.sha256 for s in reference.shards]
    assert resumed.manifest["quantization_ranges"] == reference.manifest["quantization_ranges"]
    resumed.verify()
