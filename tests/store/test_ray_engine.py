"""The Ray Data engine on a local Ray instance: the same store, in the same order, as the local one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from sbert.store import CorpusOptions, encode_corpus

ray = pytest.importorskip("ray")


@pytest.fixture(scope="session")
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_ray_store_equals_the_local_store(local_ray: None, tmp_path: Path, tiny_encoder) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(3)
    words = ["dog", "cat", "runs", "the", "park", "plays", "guitar", "happy", "red", "car"]
    texts = [" ".join(rng.choice(words, size=int(rng.integers(0, 15)))) for _ in range(300)]
    source = tmp_path / "in.jsonl"
    source.write_text(
        "".join(json.dumps({"text": t, "n": 5 * i}) + "\n" for i, t in enumerate(texts)), encoding="utf-8"
    )
    options = {"shard_size": 120, "chunk_rows": 50, "show_progress": False, "id_column": "n"}
    local = encode_corpus(tiny_encoder, source, tmp_path / "local", CorpusOptions(**options))
    remote = encode_corpus(
        tiny_encoder, source, tmp_path / "ray", CorpusOptions(engine="ray", workers=2, **options)
    )
    assert [(s.start, s.stop) for s in remote.shards] == [(s.start, s.stop) for s in local.shards]
    rows = np.arange(len(texts))
    np.testing.assert_array_equal(remote.ids(rows), rows * 5)
    assert np.abs(remote.vectors(rows) - local.vectors(rows)).max() <= 1e-6
    assert remote.texts([0, 1495]) == [texts[0], texts[299]]
    assert {k: v for k, v in remote.manifest.items() if k != "shards"} == {
        k: v for k, v in local.manifest.items() if k != "shards"
    }


def test_ray_resumes_after_the_finished_shards(local_ray: None, tmp_path: Path, tiny_encoder) -> None:  # type: ignore[no-untyped-def]
    source = tmp_path / "in.txt"
    texts = [f"the dog {'runs ' * (i % 7)}{i}" for i in range(90)] + ["", "last"]
    source.write_text("\r\n".join(texts) + "\r\n", encoding="utf-8")
    options = {"shard_size": 40, "chunk_rows": 20, "show_progress": False}
    local = encode_corpus(tiny_encoder, source, tmp_path / "local", CorpusOptions(**options))
    # the state a run killed between shards leaves: two finished shards, the manifest unfinished
    store = tmp_path / "ray"
    encode_corpus(tiny_encoder, source, store, CorpusOptions(**options))
    manifest = json.loads((store / "manifest.json").read_text())
    (store / manifest["shards"].pop()["file"]).unlink()
    manifest.update(rows=80, complete=False)
    (store / "manifest.json").write_text(json.dumps(manifest))
    resumed = encode_corpus(tiny_encoder, source, store, CorpusOptions(engine="ray", workers=1, **options))
    rows = np.arange(len(texts))
    assert resumed.texts(rows.tolist()) == texts
    np.testing.assert_array_equal(resumed.ids(rows), rows)
    assert np.abs(resumed.vectors(rows) - local.vectors(rows)).max() <= 1e-6


def test_a_model_on_cuda_gets_one_worker_per_gpu() -> None:
    from sbert.store.ray_engine import worker_plan

    plan = worker_plan({"CPU": 16.0, "GPU": 4.0}, "cuda")
    assert (plan.workers, plan.device, plan.num_gpus, plan.threads) == (4, "cuda", 1, 4)
    assert worker_plan({"CPU": 16.0, "GPU": 4.0}, "cuda", workers=2).workers == 2
    assert worker_plan({"CPU": 2.0, "GPU": 4.0}, "cpu").device == "cpu"  # a CPU model ignores the GPUs
    with pytest.raises(ValueError, match="workers=5, but the Ray cluster has 4 GPU"):
        worker_plan({"CPU": 16.0, "GPU": 4.0}, "cuda", workers=5)
    with pytest.raises(ValueError, match="runs on CUDA but the Ray cluster has no GPU"):
        worker_plan({"CPU": 16.0}, "cuda")
