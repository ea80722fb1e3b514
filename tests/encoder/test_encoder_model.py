import logging
from pathlib import Path

import numpy as np
import pytest
import torch

from sbert import SentenceEncoder
from sbert.base.batching import length_sorted_batches
from sbert.inference.cpu import BF16_AND_VNNI, CpuCapabilities, this_cpu
from sbert.inference.precision import cpu_has_native_bf16, openvino_installed

BACKENDS_HERE = ["torch", "openvino"] if openvino_installed() else ["torch"]
INT8_HERE = this_cpu().int8 and openvino_installed(with_nncf=True)

SENTENCES = [
    "a man plays the guitar",
    "the dog runs in the park",
    "rain",
    "a small red car and a big blue car",
]


def test_shapes(tiny_encoder: SentenceEncoder) -> None:
    assert tiny_encoder.encode(SENTENCES).shape == (4, tiny_encoder.dim)
    assert tiny_encoder.encode("one sentence").shape == (tiny_encoder.dim,)
    empty = tiny_encoder.encode([])  # sentence-transformers' np.array([]) (tests/test_weak_answers_encode.py)
    assert empty.shape == (0,) and empty.dtype == np.float64
    assert isinstance(tiny_encoder.encode(SENTENCES, convert_to_tensor=True), torch.Tensor)


def test_order_and_batch_independence(tiny_encoder: SentenceEncoder) -> None:
    alone = np.stack([tiny_encoder.encode(s) for s in SENTENCES])
    for batch_size in (1, 2, 3, 32):
        together = tiny_encoder.encode(SENTENCES, batch_size=batch_size)
        np.testing.assert_allclose(together, alone, atol=1e-5)
    mixed = tiny_encoder.encode([SENTENCES[2], "the cat eats food", SENTENCES[0]], batch_size=3)
    np.testing.assert_allclose(mixed[[0, 2]], alone[[2, 0]], atol=1e-5)


def test_matches_a_hand_written_forward_pass(tiny_encoder: SentenceEncoder) -> None:
    tokenizer, bert = tiny_encoder.transformer.tokenizer, tiny_encoder.transformer.model
    batch = tokenizer(SENTENCES, padding=True, return_tensors="pt")
    with torch.no_grad():
        tokens = bert(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    expected = (tokens * mask).sum(1) / mask.sum(1)
    np.testing.assert_allclose(tiny_encoder.encode(SENTENCES), expected.numpy(), atol=1e-5)


def test_normalize(tiny_encoder: SentenceEncoder) -> None:
    norms = np.linalg.norm(tiny_encoder.encode(SENTENCES, normalize=True), axis=1)
    np.testing.assert_allclose(norms, 1.0, atol=1e-6)


@pytest.mark.parametrize("bad", [None, 3, 2.5, b"bytes"])
def test_non_strings_name_index_and_type(tiny_encoder: SentenceEncoder, bad: object) -> None:
    with pytest.raises(TypeError, match=rf"sentences\[1\] is {type(bad).__name__}"):
        tiny_encoder.encode(["fine", bad])  # type: ignore[list-item]


def test_any_text_is_embedded(tiny_encoder: SentenceEncoder) -> None:
    odd = [
        "",
        "   ",
        "😀🎸",
        "中文文本",
        "עברית מימין לשמאל",
        "nul\x00byte",
        "lone \ud800 surrogate",
        "x" * 100_000,
    ]
    vectors = tiny_encoder.encode(odd)
    assert vectors.shape == (len(odd), tiny_encoder.dim) and np.isfinite(vectors).all()


def test_truncation_is_reported_once_with_count(tiny_encoder: SentenceEncoder, caplog) -> None:
    long = " ".join(["guitar"] * 200)
    with caplog.at_level(logging.WARNING, logger="sbert"):
        tiny_encoder.encode([long, long, "short"])
    notices = [r.getMessage() for r in caplog.records if "truncated" in r.getMessage()]
    assert notices == [
        f"2 of 3 inputs were longer than max_seq_length={tiny_encoder.max_seq_length} tokens and were truncated"
    ]


def test_max_seq_length_from_model_config(tiny_encoder: SentenceEncoder) -> None:
    assert tiny_encoder.max_seq_length == 64


def test_training_mode_is_restored(tiny_encoder: SentenceEncoder) -> None:
    tiny_encoder.train()
    tiny_encoder.encode(SENTENCES)
    assert tiny_encoder.training


@pytest.fixture()
def native_bf16(monkeypatch: pytest.MonkeyPatch) -> CpuCapabilities:
    """Models made from now on plan for a CPU with native bf16 and VNNI, so the bf16 path runs on
    any machine (emulated where the CPU has no bf16)."""
    monkeypatch.setattr("sbert.inference.planning.this_cpu", lambda: BF16_AND_VNNI)
    return BF16_AND_VNNI


def test_precision_and_backend_are_visible_and_overridable(
    tiny_model_dir, native_bf16: CpuCapabilities
) -> None:
    model = SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu")
    assert model.precision == "bfloat16"
    assert model.backend == ("openvino" if openvino_installed() else "torch")
    model.requested_backend = "torch"
    assert model.precision == "bfloat16"
    model.requested_precision = "float32"
    model.requested_backend = "torch"
    assert (model.precision, model.backend) == ("float32", "torch")


@pytest.mark.parametrize("backend", BACKENDS_HERE)
def test_bfloat16_stays_close_and_batch_independent(
    tiny_encoder: SentenceEncoder, native_bf16: CpuCapabilities, backend: str
) -> None:
    tiny_encoder.cpu_capabilities = native_bf16  # made before the fixture
    tiny_encoder.requested_backend = backend
    exact = tiny_encoder.encode(SENTENCES, compute_precision="float32")
    fast = tiny_encoder.encode(SENTENCES, compute_precision="bfloat16")
    cosines = (exact * fast).sum(1) / np.linalg.norm(exact, axis=1) / np.linalg.norm(fast, axis=1)
    assert 1 - cosines.min() < 0.005
    # Really ran in bf16; OpenVINO keeps float32 on a CPU without native bf16 (this test only
    # pretends the CPU has it), so there the vectors may equal float32's.
    assert np.abs(fast - exact).max() > 0 or (backend == "openvino" and not cpu_has_native_bf16())
    alone = np.stack([tiny_encoder.encode(s, compute_precision="bfloat16") for s in SENTENCES])
    np.testing.assert_allclose(
        tiny_encoder.encode(SENTENCES, batch_size=3, compute_precision="bfloat16"), alone, atol=1e-4
    )


@pytest.mark.parametrize("backend", BACKENDS_HERE)
@pytest.mark.parametrize("precision", ["bfloat16", "float32"])
def test_fast_paths_follow_weight_updates(
    tiny_encoder: SentenceEncoder, native_bf16: None, backend: str, precision: str
) -> None:
    tiny_encoder.requested_backend = backend
    before = tiny_encoder.encode(SENTENCES, compute_precision=precision)
    with torch.no_grad():
        tiny_encoder.transformer.model.embeddings.word_embeddings.weight.mul_(2.0)
    after = tiny_encoder.encode(SENTENCES, compute_precision=precision)
    tiny_encoder.requested_backend = "torch"
    np.testing.assert_allclose(after, tiny_encoder.encode(SENTENCES, compute_precision="float32"), atol=0.05)
    assert np.abs(after - before).max() > 0.01


@pytest.mark.parametrize("backend", BACKENDS_HERE)
def test_float32_equals_forward(tiny_encoder: SentenceEncoder, backend: str) -> None:
    tiny_encoder.requested_backend = backend
    features = tiny_encoder.transformer.collate(tiny_encoder.token_ids(SENTENCES).ids)
    with torch.no_grad():
        expected = tiny_encoder(features)
    np.testing.assert_allclose(
        tiny_encoder.encode(SENTENCES, compute_precision="float32"), expected.numpy(), atol=1e-5
    )


def test_unknown_precision(tiny_model_dir, tiny_encoder: SentenceEncoder) -> None:
    with pytest.raises(ValueError, match="choose one of auto, float32, bfloat16, mixed, int8"):
        tiny_encoder.encode(SENTENCES, compute_precision="int4")
    with pytest.raises(ValueError, match="unknown precision 'half'"):
        SentenceEncoder.from_pretrained(tiny_model_dir, precision="half")
    with pytest.raises(ValueError, match="unknown backend 'onnx'; choose one of auto, torch, openvino"):
        SentenceEncoder.from_pretrained(tiny_model_dir, backend="onnx")


@pytest.mark.parametrize(("precision", "on_pytorch"), [("float32", "float32"), ("mixed", "bfloat16")])
def test_a_model_openvino_cannot_convert_runs_on_pytorch(
    tiny_model_dir,
    native_bf16: None,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    precision: str,
    on_pytorch: str,
) -> None:
    if not (INT8_HERE if precision == "mixed" else openvino_installed()):
        pytest.skip(f"{precision} does not run on OpenVINO here")
    from sbert.inference import runners as engines_module

    def refuse(*args: object, **kwargs: object) -> None:
        raise RuntimeError("unsupported operation aten::exotic")

    monkeypatch.setattr(engines_module, "OpenVinoEngine", refuse)
    model = SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu", precision=precision)
    with caplog.at_level(logging.WARNING, logger="sbert"):
        vectors = model.encode(SENTENCES)
    assert "OpenVINO could not compile" in caplog.text and "aten::exotic" in caplog.text
    assert (model.precision, model.backend) == (on_pytorch, "torch")
    np.testing.assert_allclose(vectors, model.encode(SENTENCES, compute_precision=on_pytorch), atol=1e-6)
    model.requested_backend = "openvino"  # asked for explicitly: the error is the caller's to see
    with pytest.raises(RuntimeError, match="aten::exotic"):
        model.encode(SENTENCES)


def test_token_budget_changes_batches_not_vectors(
    tiny_encoder: SentenceEncoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sbert.inference import runners as encoder_module

    expected = tiny_encoder.encode(SENTENCES)
    sizes: list[int] = []

    def spied(
        lengths: list[int], batch_size: int, max_tokens: int | None = None, cost: int | None = None
    ) -> list[np.ndarray]:
        batches = length_sorted_batches(lengths, batch_size, max_tokens, cost)
        sizes.extend(len(batch) for batch in batches)
        return batches

    monkeypatch.setattr(encoder_module, "length_sorted_batches", spied)
    np.testing.assert_allclose(tiny_encoder.encode(SENTENCES, max_tokens=6), expected, atol=1e-5, rtol=0)
    assert sizes and max(sizes) == 1  # 6 padded tokens hold one of these sentences at a time
    sizes.clear()
    np.testing.assert_allclose(
        tiny_encoder.encode(SENTENCES, batch_cost_tokens=1), expected, atol=1e-5, rtol=0
    )
    assert sizes and len(sizes) > 1  # cut where padding costs more than another pass
    with pytest.raises(ValueError, match="max_tokens must be at least 1, got 0"):
        tiny_encoder.encode(SENTENCES, max_tokens=0)


def test_auto_never_calibrates(
    tiny_model_dir, native_bf16: CpuCapabilities, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A one-line query must not pay seconds of calibration, nor a long input get other vectors."""
    from sbert.inference.openvino.engine import OpenVinoEngine

    monkeypatch.setattr(OpenVinoEngine, "_quantize", lambda *args: pytest.fail("auto calibrated"))
    model = SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu")
    assert model.precision == "bfloat16"
    one = model.encode(SENTENCES[0])
    many = model.encode(SENTENCES * 300)  # long enough that calibrating would pay for itself
    assert model.precision == "bfloat16"
    np.testing.assert_allclose(many[0], one, atol=1e-2, rtol=0)


def test_bad_or_empty_input_compiles_no_engine(tiny_model_dir, monkeypatch: pytest.MonkeyPatch) -> None:
    from sbert.inference import runners as engines_module

    monkeypatch.setattr(engines_module, "OpenVinoEngine", lambda *a, **k: pytest.fail("compiled an engine"))
    model = SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu", backend="auto")
    with pytest.raises(TypeError, match=r"sentences\[1\] is int"):
        model.encode(["fine", 7])
    assert model.encode([]).shape == (0,)  # as sentence-transformers


class _Frame:
    """Iterates over its column names, like a pandas DataFrame."""

    columns = ("text",)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.columns)


@pytest.mark.parametrize(
    ("sentences", "problem"),
    [
        ({"a": "first text"}, "sentences is a dict, which iterates over its keys"),
        (_Frame(), "sentences is a _Frame, which iterates over its keys or column names"),
        (b"abc", "sentences is bytes: decode it"),
        ({"a", "b"}, "sentences is a set, which has no order"),
        (None, "sentences is None, expected a string or a list of strings"),
        (5, "sentences is int, expected a string or a list of strings"),
    ],
)
def test_what_is_not_a_list_of_texts_is_refused(
    tiny_encoder: SentenceEncoder, sentences: object, problem: str
) -> None:
    with pytest.raises(TypeError, match=problem):
        tiny_encoder.encode(sentences)  # type: ignore[arg-type]


def test_ordered_collections_of_texts_are_embedded(tiny_encoder: SentenceEncoder) -> None:
    expected = tiny_encoder.encode(SENTENCES)
    for same in (
        tuple(SENTENCES),
        np.array(SENTENCES),
        (s for s in SENTENCES),
        dict.fromkeys(SENTENCES).keys(),
    ):
        np.testing.assert_allclose(tiny_encoder.encode(same), expected, atol=1e-6)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("arguments", "error", "problem"),
    [
        ({"batch_size": 1.5}, TypeError, "batch_size must be a whole number, got 1.5"),
        ({"batch_size": True}, TypeError, "batch_size must be a whole number, got True"),
        ({"batch_size": 0}, ValueError, "batch_size must be at least 1, got 0"),
        ({"max_tokens": "64"}, TypeError, "max_tokens must be a whole number, got '64'"),
        ({"precision": ""}, ValueError, "unknown precision ''"),
    ],
)
def test_bad_arguments_are_refused(
    tiny_encoder: SentenceEncoder, arguments: dict[str, object], error: type[Exception], problem: str
) -> None:
    with pytest.raises(error, match=problem):
        tiny_encoder.encode(SENTENCES, **arguments)  # type: ignore[arg-type]
    assert tiny_encoder.encode(SENTENCES, batch_size=np.int64(2)).shape == (len(SENTENCES), tiny_encoder.dim)


def test_a_name_given_to_the_constructor_loads_like_from_pretrained(tiny_model_dir: Path) -> None:
    # sentence-transformers' constructor (issue 39); it pointed to from_pretrained before.
    model = SentenceEncoder(str(tiny_model_dir), device="cpu")
    assert type(model) is SentenceEncoder and model.source == str(tiny_model_dir.resolve())
    expected = SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu").encode(SENTENCES)
    np.testing.assert_array_equal(model.encode(SENTENCES), expected)
    with pytest.raises(TypeError, match="a StaticEmbedding or a model name or path, not int"):
        SentenceEncoder(3)  # type: ignore[arg-type]


def test_a_training_submodule_does_not_bring_dropout_into_encode(tiny_encoder: SentenceEncoder) -> None:
    expected = tiny_encoder.encode(SENTENCES)
    tiny_encoder.transformer.train()  # the encoder itself stays in eval mode
    assert tiny_encoder.transformer.model.config.hidden_dropout_prob > 0
    np.testing.assert_allclose(tiny_encoder.encode(SENTENCES), expected, atol=1e-6, rtol=0)
    tiny_encoder.transformer.eval()


@pytest.mark.parametrize("backend", BACKENDS_HERE)
def test_a_model_that_has_encoded_can_be_pickled_and_deep_copied(
    tiny_encoder: SentenceEncoder, backend: str
) -> None:
    # What the runners built (OpenVINO's compiled requests among them) is left behind and built again:
    # a model that has encoded is still shipped to a Ray worker, or copied as a distillation teacher.
    import copy
    import pickle

    tiny_encoder.requested_backend = backend
    expected = tiny_encoder.encode(SENTENCES, compute_precision="float32")
    for copied in (pickle.loads(pickle.dumps(tiny_encoder)), copy.deepcopy(tiny_encoder)):
        assert copied.runners.input_module is copied.input_module is not tiny_encoder.input_module
        np.testing.assert_allclose(copied.encode(SENTENCES, compute_precision="float32"), expected, atol=1e-6)
