"""sentence-transformers' CrossEncoder snippets on sbert, with sentence-transformers as the oracle.

Tiny random ``BertForSequenceClassification`` models of 1 and 3 labels (the tiny BERT's tokenizer)
are scored by both libraries; sbert runs float32 here (exact), its other engines are compared with
its own float32 at the end.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from transformers import BertConfig, BertForSequenceClassification

from sbert import CrossEncoder
from sbert.base.errors import ModelLoadError
from sbert.inference.precision import openvino_installed

st = pytest.importorskip("sentence_transformers")

PAIRS = [
    ("a man plays guitar", "a man plays music"),
    ("the dog runs in the park", "a cat eats food"),
    ("rain", "the sun is big and happy and not sad at all in the park with the dog"),
    ("", "a woman is cooking"),
]
QUERY = "a man plays guitar"
DOCUMENTS = ["a cat eats food", "a man plays music", "rain in the park", "the dog runs", "a man"]
EXACT = {"device": "cpu", "precision": "float32"}


def build_classifier(tiny_model_dir: Path, path: Path, num_labels: int) -> Path:
    """A random BERT sequence classifier saved as plain Hugging Face files, with the tiny tokenizer."""
    config = BertConfig.from_pretrained(tiny_model_dir)
    config.num_labels = num_labels
    torch.manual_seed(num_labels)
    model = BertForSequenceClassification(config)
    with torch.no_grad():  # logits of a few units, so that the activations are not all near 0.5
        model.classifier.weight.mul_(40)
    model.save_pretrained(path)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if (tiny_model_dir / name).is_file():
            shutil.copy(tiny_model_dir / name, path / name)
    return path


@pytest.fixture(scope="module", params=[1, 3], ids=["1-label", "3-labels"])
def classifier_dir(request: pytest.FixtureRequest, tiny_model_dir: Path, tmp_path_factory: Any) -> Path:
    return build_classifier(tiny_model_dir, tmp_path_factory.mktemp("classifier") / "ce", request.param)


@pytest.fixture(scope="module")
def regression_dir(tiny_model_dir: Path, tmp_path_factory: Any) -> Path:
    return build_classifier(tiny_model_dir, tmp_path_factory.mktemp("regression") / "ce", 1)


def close(ours: Any, theirs: Any) -> None:
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), atol=1e-5, rtol=0)


def test_constructor_by_path_and_predict(classifier_dir: Path) -> None:
    ours, theirs = (
        CrossEncoder(str(classifier_dir), **EXACT),
        st.CrossEncoder(str(classifier_dir), device="cpu"),
    )
    assert ours.num_labels == theirs.num_labels and ours.max_length == theirs.max_seq_length == 64
    assert type(ours.activation_fn) is type(theirs.activation_fn)  # Sigmoid for 1 label, else Identity
    scores = ours.predict(PAIRS)
    assert isinstance(scores, np.ndarray) and scores.dtype == np.float32
    assert scores.shape == ((4,) if ours.num_labels == 1 else (4, 3))
    close(scores, theirs.predict(PAIRS))
    close(ours.predict(PAIRS[1]), theirs.predict(PAIRS[1]))  # one pair: its score
    close(ours.predict(PAIRS, batch_size=1, show_progress_bar=False), theirs.predict(PAIRS, batch_size=1))


def test_predict_variants(classifier_dir: Path) -> None:
    ours, theirs = CrossEncoder(classifier_dir, **EXACT), st.CrossEncoder(str(classifier_dir), device="cpu")
    for options in (
        {"activation_fn": torch.nn.Identity()},
        {"activation_fn": torch.nn.Tanh()},
        {"apply_softmax": True},
    ):
        close(ours.predict(PAIRS, **options), theirs.predict(PAIRS, **options))
    tensor = ours.predict(PAIRS, convert_to_tensor=True)
    assert isinstance(tensor, torch.Tensor)
    close(tensor, theirs.predict(PAIRS, convert_to_tensor=True))
    rows = ours.predict(PAIRS, convert_to_numpy=False)
    expected = theirs.predict(PAIRS, convert_to_numpy=False)
    assert isinstance(rows, list) and all(isinstance(row, torch.Tensor) for row in rows)
    close(torch.stack(rows), torch.stack(expected))
    single = ours.predict(PAIRS[0], convert_to_tensor=True)
    assert single.shape == theirs.predict(PAIRS[0], convert_to_tensor=True).shape


def test_three_labels_softmax(tiny_model_dir: Path, tmp_path: Path) -> None:
    path = build_classifier(tiny_model_dir, tmp_path / "nli", 3)
    ours, theirs = CrossEncoder(path, **EXACT), st.CrossEncoder(str(path), device="cpu")
    probabilities = ours.predict(PAIRS, apply_softmax=True)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-6)
    close(probabilities, theirs.predict(PAIRS, apply_softmax=True))
    assert not np.allclose(ours.predict(PAIRS).sum(axis=1), 1.0)  # logits without it, as theirs
    with pytest.raises(ValueError, match="one-output"):
        ours.rank(QUERY, DOCUMENTS)


@pytest.mark.parametrize("top_k", [None, 2])
@pytest.mark.parametrize("return_documents", [False, True])
def test_rank(regression_dir: Path, top_k: int | None, return_documents: bool) -> None:
    ours, theirs = CrossEncoder(regression_dir, **EXACT), st.CrossEncoder(str(regression_dir), device="cpu")
    got = ours.rank(QUERY, DOCUMENTS, top_k=top_k, return_documents=return_documents)
    expected = theirs.rank(QUERY, DOCUMENTS, top_k=top_k, return_documents=return_documents)
    assert [sorted(row) for row in got] == [sorted(row) for row in expected]
    assert [row["corpus_id"] for row in got] == [row["corpus_id"] for row in expected]
    assert [row.get("text") for row in got] == [row.get("text") for row in expected]
    close([row["score"] for row in got], [row["score"] for row in expected])
    assert len(got) == (top_k or len(DOCUMENTS))


def test_max_length_truncates_as_theirs(classifier_dir: Path) -> None:
    ours = CrossEncoder(classifier_dir, max_length=8, **EXACT)
    theirs = st.CrossEncoder(str(classifier_dir), device="cpu", max_length=8)
    assert ours.max_length == ours.max_seq_length == 8
    assert ours.tokenize(PAIRS).lengths == [8, 8, 8, 8]
    close(ours.predict(PAIRS), theirs.predict(PAIRS))


def test_sentence_transformers_loads_our_save(classifier_dir: Path, tmp_path: Path) -> None:
    ours = CrossEncoder(classifier_dir, max_length=12, activation_fn=torch.nn.Tanh(), **EXACT)
    ours.save(tmp_path / "ours")
    theirs = st.CrossEncoder(str(tmp_path / "ours"), device="cpu")
    assert isinstance(theirs.activation_fn, torch.nn.Tanh) and theirs.max_seq_length == 12
    close(ours.predict(PAIRS), theirs.predict(PAIRS))
    again = CrossEncoder(tmp_path / "ours", **EXACT)
    assert isinstance(again.activation_fn, torch.nn.Tanh) and again.max_length == 12
    close(again.predict(PAIRS), ours.predict(PAIRS))


def test_we_load_their_save(classifier_dir: Path, tmp_path: Path) -> None:
    theirs = st.CrossEncoder(str(classifier_dir), device="cpu", max_length=10, activation_fn=torch.nn.Tanh())
    theirs.save(str(tmp_path / "theirs"))
    ours = CrossEncoder(tmp_path / "theirs", **EXACT)
    assert isinstance(ours.activation_fn, torch.nn.Tanh) and ours.max_length == 10
    close(ours.predict(PAIRS), theirs.predict(PAIRS))
    theirs.save_pretrained(str(tmp_path / "pretrained"))
    close(
        CrossEncoder.from_pretrained(tmp_path / "pretrained", **EXACT).predict(PAIRS), theirs.predict(PAIRS)
    )


def test_from_pretrained_keeps_sbert_probabilities(tiny_model_dir: Path, tmp_path: Path) -> None:
    """sbert's own name gives k-label probabilities (a softmax), and sentence-transformers loads its
    save with the same ones."""
    path = build_classifier(tiny_model_dir, tmp_path / "nli", 3)
    ours = CrossEncoder.from_pretrained(path, **EXACT)
    np.testing.assert_allclose(ours.predict(PAIRS).sum(axis=1), 1.0, atol=1e-6)
    ours.save(tmp_path / "saved")
    with pytest.warns(UserWarning, match="[Ii]mplicit dimension"):  # torch's Softmax built without dim
        close(st.CrossEncoder(str(tmp_path / "saved"), device="cpu").predict(PAIRS), ours.predict(PAIRS))


ENGINES = [
    pytest.param("float32", "torch", False, 1e-5, id="torch-float32"),
    pytest.param("bfloat16", "torch", False, 0.05, id="torch-bf16"),
    pytest.param("float32", "openvino", False, 1e-5, id="openvino-float32"),
    pytest.param("float32", "openvino", True, 1e-5, id="openvino-float32-packed"),
    pytest.param("bfloat16", "openvino", True, 0.05, id="openvino-bf16-packed"),
]


@pytest.mark.parametrize(("precision", "backend", "pack", "bound"), ENGINES)
def test_cpu_engines_serve_the_cross_encoder(
    classifier_dir: Path, precision: str, backend: str, pack: bool, bound: float
) -> None:
    if backend == "openvino" and not openvino_installed():
        pytest.skip("the openvino extra is not installed")
    reference = st.CrossEncoder(str(classifier_dir), device="cpu").predict(
        PAIRS, activation_fn=torch.nn.Identity()
    )
    model = CrossEncoder(classifier_dir, device="cpu", precision=precision, backend=backend)
    many = PAIRS * 9  # several packed rows and padded batches
    logits = model.logits(many, batch_size=8, pack=pack).numpy()
    assert model.plan.backend == backend
    if backend == "torch" and model.plan.precision == "bfloat16":  # the bf16 kernels, not autocast
        assert model.runners.fast is not None
    if pack:  # packed rows ran, not padded batches after a failed probe
        assert model.plan.packs and getattr(model._runner(model.plan, pack)[1], "packed", False)
    scale = max(1.0, float(np.abs(reference).max()))
    difference = float(np.abs(logits - np.tile(reference.reshape(len(PAIRS), -1), (9, 1))).max())
    assert difference <= bound * scale, f"{precision}/{backend}: {difference} from sentence-transformers"


def test_fast_bert_reads_the_folded_segments(classifier_dir: Path) -> None:
    """FastBert (bf16 on PyTorch) in float32 gives sentence-transformers' logits: the doubled word
    table gives each folded id its own segment's vector."""
    from sbert.inference.fast_bert import FastBert

    model = CrossEncoder(classifier_dir, **EXACT)
    fast = FastBert(model.input_module.model, torch.float32)
    features = model.input_module.collate(model.input_module.tokenize(PAIRS).ids)
    mask = features["attention_mask"]
    with torch.inference_mode():
        logits = model.pooling(fast(features["input_ids"], mask), mask)
    theirs = st.CrossEncoder(str(classifier_dir), device="cpu").predict(
        PAIRS, activation_fn=torch.nn.Identity()
    )
    close(logits.reshape(theirs.shape), theirs)


def test_bad_input_names_what_is_wrong(regression_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = CrossEncoder(regression_dir, **EXACT)
    with pytest.raises(TypeError, match="needs its tokenizer"):
        CrossEncoder(model.model)
    with pytest.raises(TypeError, match="model name or path"):
        CrossEncoder(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not the string"):
        model.predict("a man plays guitar")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="the pair must be"):
        model.predict(("only one",))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="batch_size"):
        model.predict(PAIRS, batch_size=0)
    with pytest.raises(ValueError, match="top_k"):
        model.rank(QUERY, DOCUMENTS, top_k=-1)
    with pytest.raises(ValueError, match="backend='onnx'"):
        CrossEncoder(regression_dir, backend="onnx")
    with pytest.raises(ValueError, match="model_kwargs"):
        CrossEncoder(regression_dir, model_kwargs={"torch_dtype": "float16"})
    with pytest.raises(TypeError, match="unexpected keyword argument 'devices'"):
        CrossEncoder(regression_dir, devices="cpu")
    with pytest.raises(ValueError, match="max_seq_length"):
        model.max_length = 1
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ModelLoadError, match="cross-encoder/ms-marco-MiniLM-L6-v2"):
        CrossEncoder("cross-encoder/ms-marco-MiniLM-L6-v2")


def test_empty_input(classifier_dir: Path) -> None:
    model = CrossEncoder(classifier_dir, **EXACT)
    theirs = st.CrossEncoder(str(classifier_dir), device="cpu")
    for options in ({}, {"convert_to_tensor": True}, {"convert_to_numpy": False}):
        ours, expected = model.predict([], **options), theirs.predict([], **options)
        assert type(ours) is type(expected) and np.asarray(ours).shape == np.asarray(expected).shape == (0,)
        assert getattr(ours, "dtype", None) == getattr(expected, "dtype", None)
    if model.num_labels == 1:
        assert model.rank(QUERY, []) == []


def test_the_probe_judges_one_score_per_row_by_its_size() -> None:
    """Cosine says nothing of a one-column output (only its sign): a graph whose scores are 3 times
    too large must fail the probe, one 1% off must pass."""
    from sbert.inference.probe import UnfaithfulGraph, check_probe

    expected = torch.tensor([[2.0], [-1.0], [0.5]])
    check_probe(expected, expected * 1.01, "bfloat16", "g")
    with pytest.raises(UnfaithfulGraph, match="largest score"):
        check_probe(expected, expected * 3, "bfloat16", "g")


def test_a_changed_head_is_compiled_again_and_a_copy_scores_alike(regression_dir: Path) -> None:
    """A compiled graph holds the weights it was built from: a step that changes only the head (as
    training does) must not leave the old scores behind; a deep copy shares nothing it built."""
    import copy

    model = CrossEncoder(regression_dir, **EXACT)
    before = model.predict(PAIRS, apply_activation=False)
    with torch.no_grad():
        model.model.classifier.weight.mul_(2)
        model.model.classifier.bias.mul_(2)
    close(model.predict(PAIRS, apply_activation=False), 2 * before)
    copied = copy.deepcopy(model)
    assert copied.input_module.model.bert is copied.model.bert  # the engine's parts follow the copy
    close(copied.predict(PAIRS), model.predict(PAIRS))
