"""sbert distill static: the recipe, the fitting step (resumable, deterministic) and bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sbert import SentenceEncoder
from sbert.base.errors import ModelLoadError
from sbert.cli import main
from sbert.static.distill import distill_table, fit_pca, zipf_sif_weights
from sbert.static.fit import FitConfig, fit_table
from sbert.static.pipeline import distill_static

TEXT = ["a man plays guitar", "the dog runs in the park", "a cat eats food", "good and bad", "no yes"] * 8


def test_pca_matches_scikit_learn() -> None:
    from sklearn.decomposition import PCA

    data = np.random.default_rng(0).normal(size=(200, 6)) @ np.diag([5, 4, 3, 2, 1, 0.5])
    ours = fit_pca(data, 3, np.arange(200))(data)
    theirs = PCA(3).fit_transform(data)
    np.testing.assert_allclose(np.abs(ours), np.abs(theirs), rtol=1e-4, atol=1e-6)


def test_sif_weights_grow_with_rank() -> None:
    weights = zipf_sif_weights(1000, 1e-4)
    assert np.all(np.diff(weights) > 0) and 0 < weights[0] < weights[-1] < 1


def test_distilled_token_rows(tiny_encoder: SentenceEncoder) -> None:
    static, projection = distill_table(tiny_encoder, dimensions=4, show_progress_bar=False)
    assert static.input_module.embedding.weight.shape == (len(tiny_encoder.transformer.tokenizer), 4)
    special = tiny_encoder.transformer.tokenizer.all_special_ids
    assert not static.input_module.embedding.weight[special].any()  # never in text: zero rows
    assert projection.components.shape == (4, tiny_encoder.dim)


def test_fitting_lowers_the_loss_and_is_deterministic(tiny_encoder: SentenceEncoder) -> None:
    def run(epochs: int) -> tuple[np.ndarray, float]:
        static, projection = distill_table(tiny_encoder, dimensions=4, show_progress_bar=False)
        config = FitConfig(epochs=epochs, batch_size=8, learning_rate=0.05, seed=3)
        result = fit_table(static, projection, tiny_encoder, TEXT, config, None, show_progress_bar=False)
        return static.input_module.embedding.weight.detach().numpy().copy(), result["loss"]

    once, loss_once = run(1)
    full, loss_full = run(3)
    assert loss_full < loss_once
    np.testing.assert_array_equal(run(3)[0], full)  # the same seed, the same table
    assert not np.array_equal(run(3)[0], once)


def test_resume_continues_where_a_run_stopped(tiny_encoder: SentenceEncoder, tmp_path: Path) -> None:
    config = FitConfig(epochs=3, batch_size=8, learning_rate=0.05, seed=3)
    static, projection = distill_table(tiny_encoder, dimensions=4, show_progress_bar=False)
    fit_table(static, projection, tiny_encoder, TEXT, config, None, show_progress_bar=False)
    expected = static.input_module.embedding.weight.detach().numpy().copy()

    class Stop(Exception):
        pass

    static, projection = distill_table(tiny_encoder, dimensions=4, show_progress_bar=False)
    calls = {"epochs": 0}
    original = static.input_module.embedding.forward

    def stop_in_epoch_two(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls["epochs"] += 1
        if calls["epochs"] > 6:  # 5 steps an epoch: stop inside the second epoch
            raise Stop
        return original(*args, **kwargs)

    static.input_module.embedding.forward = stop_in_epoch_two  # type: ignore[method-assign]
    with pytest.raises(Stop):
        fit_table(static, projection, tiny_encoder, TEXT, config, tmp_path / "ckpt", show_progress_bar=False)
    assert (tmp_path / "ckpt" / "state" / "state.json").is_file()
    resumed, projection = distill_table(tiny_encoder, dimensions=4, show_progress_bar=False)
    fit_table(resumed, projection, tiny_encoder, TEXT, config, tmp_path / "ckpt", show_progress_bar=False)
    np.testing.assert_allclose(
        resumed.input_module.embedding.weight.detach().numpy(), expected, rtol=1e-6, atol=1e-7
    )


def test_distill_with_corpus_writes_a_record(tiny_model_dir: Path, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TEXT) + "\n", encoding="utf-8")
    args = ["distill", "static", "--teacher", str(tiny_model_dir), "-o", str(tmp_path / "m")]
    code = main([*args, "--dimensions", "4", "--corpus", str(corpus), "--epochs", "2", "--seed", "1"])
    assert code == 0
    assert not (tmp_path / "m.checkpoint").exists()  # removed once the model is saved
    record = (tmp_path / "m" / "distill.json").read_text()
    assert '"sentences": 40' in record and '"epochs": 2' in record


@pytest.mark.parametrize(
    ("dimensions", "corpus_bytes", "message"),
    [
        (1, None, "dimensions 1 is out of range"),
        (33, None, "dimensions 33 is out of range: between 2 and the teacher's 32"),
        (4, b"", "holds no sentence"),
        (4, b"\n  \n", "holds no sentence"),
        (4, b"caf\xe9\n", "not valid UTF-8|invalid UTF-8|UTF-8"),
    ],
)
def test_bad_input_fails_before_any_work(
    tiny_model_dir: Path, tmp_path: Path, capsys, dimensions: int, corpus_bytes: bytes | None, message: str
) -> None:
    args = ["distill", "static", "--teacher", str(tiny_model_dir), "-o", str(tmp_path / "m")]
    args += ["--dimensions", str(dimensions)]
    if corpus_bytes is not None:
        (tmp_path / "c.txt").write_bytes(corpus_bytes)
        args += ["--corpus", str(tmp_path / "c.txt")]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "Teacher on tokens" not in err  # no work started
    import re

    assert re.search(message, err), err
    assert not (tmp_path / "m").exists()


def test_a_teacher_sbert_cannot_load(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="no-such-model"):
        distill_static(str(tmp_path / "no-such-model"), tmp_path / "m", show_progress_bar=False)


def test_the_teacher_pass_resumes_by_parts(
    tiny_encoder: SentenceEncoder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sbert.static.fit as fit

    monkeypatch.setattr(fit, "TEACHER_PART", 16)  # 40 sentences: parts of 16, 16 and 8
    config = FitConfig(epochs=1, batch_size=8, learning_rate=0.05, seed=3)
    static, projection = distill_table(tiny_encoder, dimensions=4, show_progress_bar=False)
    fit_table(static, projection, tiny_encoder, TEXT, config, None, show_progress_bar=False)
    expected = static.input_module.embedding.weight.detach().numpy().copy()

    encoded: list[int] = []
    original = tiny_encoder.encode

    def encode_twice_then_die(sentences, **kwargs):  # type: ignore[no-untyped-def]
        if len(encoded) == 2:
            raise KeyboardInterrupt
        encoded.append(len(sentences))
        return original(sentences, **kwargs)

    monkeypatch.setattr(tiny_encoder, "encode", encode_twice_then_die)
    static, projection = distill_table(tiny_encoder, dimensions=4, show_progress_bar=False)
    with pytest.raises(KeyboardInterrupt):
        fit_table(static, projection, tiny_encoder, TEXT, config, tmp_path / "ckpt", show_progress_bar=False)
    assert sorted(p.name for p in (tmp_path / "ckpt" / "teacher").iterdir()) == [
        "part-00000.safetensors",
        "part-00001.safetensors",
    ]
    encoded.clear()
    monkeypatch.setattr(tiny_encoder, "encode", lambda s, **k: (encoded.append(len(s)), original(s, **k))[1])
    fit_table(static, projection, tiny_encoder, TEXT, config, tmp_path / "ckpt", show_progress_bar=False)
    assert encoded == [8]  # only the last part was left to the teacher
    np.testing.assert_allclose(
        static.input_module.embedding.weight.detach().numpy(), expected, rtol=1e-6, atol=1e-7
    )
