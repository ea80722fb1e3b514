"""A cold `sbert encode` runs the cached graph without the PyTorch model: the same vectors, never a
stale graph (sbert.encoder.cold_start)."""

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from sbert import SentenceEncoder
from sbert.cli import encode as cli_encode
from sbert.cli import main
from sbert.encoder import cold_start
from sbert.model.hub import resolve_model_path
from sbert.modules import Normalize

TEXTS = ["a man plays guitar", "the dog runs", "rain " * 80]  # the last is truncated


@pytest.fixture()
def model_dir(tiny_model_dir: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(tiny_model_dir, tmp_path / "model"))


@pytest.fixture(scope="module")
def built_graphs(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache holding the tiny model's OpenVINO graph, converted once for the module: what these
    tests check is the entry of the cold start, written by the command that ran the graph, not the
    first conversion (tests/inference/test_graph_cache.py checks that)."""
    folder = tmp_path_factory.mktemp("built-graphs")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SBERT_CACHE_DIR", str(folder / "cache"))
        _encode(tiny_model_dir, folder, "built")
    return folder / "cache" / "openvino"


@pytest.fixture()
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, built_graphs: Path) -> Path:
    """This test's cache folder: the module's graphs, no entry."""
    monkeypatch.setenv("SBERT_CACHE_DIR", str(tmp_path / "cache"))
    shutil.copytree(built_graphs, tmp_path / "cache" / "openvino")
    return tmp_path / "cache"


@pytest.fixture()
def loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The models the command builds (the full path), by name."""
    built: list[str] = []
    real = cli_encode.load_model

    def counted(args: object) -> SentenceEncoder:
        built.append(str(getattr(args, "model", None)))
        return real(args)  # type: ignore[arg-type]

    monkeypatch.setattr(cli_encode, "load_model", counted)
    return built


def _encode(model: Path, folder: Path, name: str, *extra: str) -> np.ndarray:
    (folder / "in.txt").write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    out = folder / f"{name}.npy"
    assert main(["encode", str(folder / "in.txt"), "-o", str(out), "--model", str(model), *extra]) == 0
    return np.load(out)


def _request(model: Path) -> cold_start.ColdRequest:
    return cold_start.ColdRequest(str(resolve_model_path(model)), "auto", "auto", None, 32, None)


def _with_normalize(model: Path) -> Path:
    """The model saved in sentence-transformers' layout with a Normalize layer after pooling."""
    loaded = SentenceEncoder.from_pretrained(model, device="cpu")
    path = model.parent / "normalized"
    SentenceEncoder(loaded.transformer, loaded.pooling, [Normalize()]).save(path)
    return path


@pytest.mark.parametrize(
    ("normalize_layer", "extra"),
    [(False, ()), (True, ()), (False, ("--normalize", "--batch-size", "1")), (True, ("--dimensions", "8"))],
)
def test_the_second_command_reads_the_graph_and_gives_the_same_vectors(
    model_dir: Path,
    cache: Path,
    loads: list[str],
    tmp_path: Path,
    normalize_layer: bool,
    extra: tuple[str, ...],
) -> None:
    model = _with_normalize(model_dir) if normalize_layer else model_dir
    first = _encode(model, tmp_path, "first", *extra)
    assert len(loads) == 1 and len(list((cache / cold_start.ENTRY_FOLDER).glob("*.json"))) == 1
    second = _encode(model, tmp_path, "second", *extra)
    assert len(loads) == 1  # no PyTorch model built the second time
    np.testing.assert_array_equal(second, first)
    full = SentenceEncoder.from_pretrained(model, device="cpu")
    options = {"normalize": "--normalize" in extra, "batch_size": 1 if "--batch-size" in extra else 32}
    expected = full.encode(TEXTS, truncate_dim=8 if "--dimensions" in extra else None, **options)
    if "--dimensions" in extra:
        expected = expected / np.linalg.norm(expected, axis=1, keepdims=True)
        np.testing.assert_allclose(second, expected, atol=1e-6)  # the CLI renormalises the prefix
    else:
        np.testing.assert_array_equal(second, expected)
    assert full.backend == "openvino"


def test_the_cold_path_warns_of_truncation_as_the_full_path(
    model_dir: Path, cache: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _encode(model_dir, tmp_path, "first")
    caplog.clear()
    assert cold_start.encode(_request(model_dir), TEXTS) is not None
    assert "1 of 3 inputs were longer than max_seq_length" in caplog.text


def test_a_rewritten_weight_file_is_never_served_the_old_graph(
    model_dir: Path, cache: Path, loads: list[str], tmp_path: Path
) -> None:
    before = _encode(model_dir, tmp_path, "before")
    weights = model_dir / "model.safetensors"
    stat = weights.stat()
    tensors = load_file(weights)
    name = next(key for key in tensors if "embeddings.word_embeddings" in key)
    noise = torch.randn(tensors[name].shape, generator=torch.Generator().manual_seed(0))
    tensors[name] = tensors[name] + noise  # not a constant: LayerNorm would take that away
    save_file(tensors, weights, metadata={"format": "pt"})
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same size, same mtime
    assert weights.stat().st_size == stat.st_size
    assert cold_start.encode(_request(model_dir), TEXTS) is None
    after = _encode(model_dir, tmp_path, "after")
    assert len(loads) == 2  # the full path ran again
    assert not np.allclose(after, before, atol=1e-3)
    np.testing.assert_array_equal(
        after, SentenceEncoder.from_pretrained(model_dir, device="cpu").encode(TEXTS)
    )


def test_an_altered_graph_is_not_served(model_dir: Path, cache: Path, tmp_path: Path) -> None:
    _encode(model_dir, tmp_path, "first")
    (graph,) = (cache / "openvino").glob("*/model.bin")
    data = bytearray(graph.read_bytes())
    data[len(data) // 2] ^= 0xFF
    graph.write_bytes(bytes(data))
    assert cold_start.encode(_request(model_dir), TEXTS) is None


def test_cache_off_always_builds_the_model(
    model_dir: Path, monkeypatch: pytest.MonkeyPatch, loads: list[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("SBERT_CACHE_DIR", "off")
    _encode(model_dir, tmp_path, "first")
    _encode(model_dir, tmp_path, "second")
    assert len(loads) == 2
    assert cold_start.encode(_request(model_dir), TEXTS) is None


@pytest.mark.parametrize(
    "extra",
    [("--prompt", "query: "), ("--pooling", "cls"), ("--precision", "float32"), ("--backend", "torch")],
)
def test_other_requests_take_the_full_path(
    model_dir: Path, cache: Path, loads: list[str], tmp_path: Path, extra: tuple[str, ...]
) -> None:
    _encode(model_dir, tmp_path, "first")
    got = _encode(model_dir, tmp_path, "other", *extra)
    assert len(loads) == 2  # the entry was for another request: the model built
    if extra[0] in ("--prompt", "--pooling"):
        assert len(list((cache / cold_start.ENTRY_FOLDER).glob("*.json"))) == 1  # and none entered
    full = SentenceEncoder.from_pretrained(model_dir, device="cpu", **_model_options(extra))
    np.testing.assert_array_equal(
        got, full.encode(TEXTS, prompt=extra[1] if extra[0] == "--prompt" else None)
    )


def _model_options(extra: tuple[str, ...]) -> dict[str, str]:
    name = extra[0].removeprefix("--")
    return {name: extra[1]} if name in ("pooling", "precision", "backend") else {}


def test_a_model_changed_after_its_graph_was_built_is_not_entered(model_dir: Path, cache: Path) -> None:
    model = SentenceEncoder.from_pretrained(model_dir, device="cpu")
    model.encode(TEXTS)
    assert cold_start._entry_of(model, _request(model_dir)) is not None
    with torch.no_grad():
        next(model.parameters()).add_(1.0)
    assert cold_start._entry_of(model, _request(model_dir)) is None


def test_a_command_without_an_entry_does_not_hash_the_model(
    model_dir: Path, cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    hashed: list[Path] = []
    real = cold_start.files_digest
    monkeypatch.setattr(cold_start, "files_digest", lambda folder: hashed.append(folder) or real(folder))
    _encode(model_dir, tmp_path, "torch", "--backend", "torch")  # never entered: PyTorch ran
    assert hashed == []
    _encode(model_dir, tmp_path, "first")
    assert len(hashed) == 1  # to enter what it ran
