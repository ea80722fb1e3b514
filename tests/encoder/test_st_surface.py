"""Code written for sentence-transformers runs on sbert with the module name changed (issue 39).

Each snippet below is written the way sentence-transformers' documentation teaches the call
(quickstart, semantic search, paraphrase mining, quantization, Matryoshka truncation, prompts). It
is run once with ``sentence_transformers`` and once with ``sbert`` as the module, on tiny random
models built in the test, and the two results must agree: the same structure, dtypes and shapes,
vectors within 1e-5, integer codes equal. sentence-transformers is the oracle.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sentence_transformers
import torch
from sentence_transformers import quantization as st_quantization
from sentence_transformers import util as st_util

import sbert
from sbert import quantization as sbert_quantization
from sbert import util as sbert_util

SENTENCES = [
    "a man plays the guitar",
    "a woman plays the piano",
    "the dog runs in the park",
    "the cat is eating food",
    "a red car on the street",
    "the rocket is in space",
    "",
]
QUERIES = ["a man is playing music", "a dog in the park"]


def _namespace(module: Any, util: Any, quantization: Any, **constructor: Any) -> types.SimpleNamespace:
    return types.SimpleNamespace(
        SentenceTransformer=functools.partial(module.SentenceTransformer, **constructor),
        util=util,
        quantize_embeddings=quantization.quantize_embeddings,
    )


# sbert is asked for float32 on PyTorch, what sentence-transformers computes: its default ("auto") is
# bf16 on a CPU with native bf16, whose vectors differ by about 1e-3 (docs/guides/fast-cpu.md).
ST = _namespace(sentence_transformers, st_util, st_quantization)
SBERT = _namespace(sbert, sbert_util, sbert_quantization, precision="float32", backend="torch")


def assert_same(ours: Any, theirs: Any, where: str = "result") -> None:
    """Equal structure, types, dtypes and shapes; floats within 1e-5, integers equal."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, torch.Tensor), f"{where}: {type(ours).__name__}, expected a tensor"
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, (where, ours.dtype, ours.shape)
        ours, theirs = ours.cpu().numpy(), theirs.cpu().numpy()
    if isinstance(theirs, np.ndarray):
        assert isinstance(ours, np.ndarray), f"{where}: {type(ours).__name__}, expected an ndarray"
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, (where, ours.dtype, ours.shape)
        if np.issubdtype(theirs.dtype, np.floating):
            np.testing.assert_allclose(ours, theirs, atol=1e-5, err_msg=where)
        else:
            np.testing.assert_array_equal(ours, theirs, err_msg=where)
    elif isinstance(theirs, dict):
        assert isinstance(ours, dict) and set(ours) == set(theirs), (where, ours, theirs)
        for key in theirs:
            assert_same(ours[key], theirs[key], f"{where}[{key!r}]")
    elif isinstance(theirs, list | tuple):
        assert type(ours) is type(theirs) and len(ours) == len(theirs), (where, ours, theirs)
        for i, (mine, other) in enumerate(zip(ours, theirs)):
            assert_same(mine, other, f"{where}[{i}]")
    elif isinstance(theirs, float):
        assert isinstance(ours, float) and ours == pytest.approx(theirs, abs=1e-5), (where, ours, theirs)
    else:
        assert type(ours) is type(theirs) and ours == theirs, (where, ours, theirs)


def run_both(snippet: Callable[[Any, Path], Any], path: Path) -> None:
    assert_same(snippet(SBERT, path), snippet(ST, path))


# --- the snippets, as sentence-transformers' docs write them ---------------------------------------


def quickstart(st: Any, path: Path) -> Any:
    model = st.SentenceTransformer(str(path), device="cpu")
    embeddings = model.encode(SENTENCES)
    similarities = model.similarity(embeddings, embeddings)
    pairwise = model.similarity_pairwise(embeddings[:3], embeddings[3:6])
    model.similarity_fn_name = "dot"
    dots = model.similarity(embeddings[:2], embeddings)
    return embeddings, similarities, pairwise, dots, model.get_sentence_embedding_dimension()


def encode_keywords(st: Any, path: Path) -> Any:
    model = st.SentenceTransformer(str(path), device="cpu")
    return [
        model.encode(SENTENCES[0]),  # one sentence: one vector
        model.encode(SENTENCES, normalize_embeddings=True, batch_size=2, show_progress_bar=False),
        model.encode(SENTENCES, convert_to_tensor=True),
        model.encode(SENTENCES, convert_to_numpy=False),  # a list of tensors
        model.encode(SENTENCES[0], convert_to_tensor=True),
        model.encode(SENTENCES[:3], output_value="token_embeddings"),
        model.encode(SENTENCES, device="cpu", convert_to_numpy=True, chunk_size=None),
    ]


def model_attributes(st: Any, path: Path) -> Any:
    model = st.SentenceTransformer(str(path), device="cpu")
    before = model.max_seq_length
    model.max_seq_length = 12  # the default prompt and a few tokens (sbert refuses a prompt that fills it)
    features = model.tokenize(SENTENCES[:2])
    return (
        before,
        model.max_seq_length,
        model.encode(SENTENCES),  # cut to 5 tokens
        {key: features[key] for key in ("input_ids", "attention_mask")},
        model.tokenizer.tokenize("a man plays the guitar"),
        str(model.device),
    )


def semantic_search(st: Any, path: Path) -> Any:
    model = st.SentenceTransformer(str(path), device="cpu")
    corpus_embeddings = model.encode(SENTENCES, convert_to_tensor=True)
    query_embeddings = model.encode(QUERIES, convert_to_tensor=True)
    hits = st.util.semantic_search(query_embeddings, corpus_embeddings, top_k=3)
    dot_hits = st.util.semantic_search(
        query_embeddings, corpus_embeddings, top_k=2, score_function=st.util.dot_score
    )
    scores = st.util.cos_sim(query_embeddings, corpus_embeddings)
    top = torch.topk(scores[0], k=3)
    numpy_scores = st.util.dot_score(model.encode(QUERIES), model.encode(SENTENCES))
    return hits, dot_hits, scores, top.values, top.indices, numpy_scores


def paraphrase_mining(st: Any, path: Path) -> Any:
    model = st.SentenceTransformer(str(path), device="cpu")
    return st.util.paraphrase_mining(model, SENTENCES + QUERIES, top_k=3)


def community_detection(st: Any, path: Path) -> Any:
    model = st.SentenceTransformer(str(path), device="cpu")
    embeddings = model.encode(SENTENCES + QUERIES, convert_to_tensor=True)
    return [
        st.util.community_detection(embeddings, threshold=threshold, min_community_size=2)
        for threshold in (0.8, 0.9, 0.95)
    ]


def quantization(st: Any, path: Path) -> Any:
    model = st.SentenceTransformer(str(path), device="cpu")
    embeddings = model.encode(SENTENCES)
    return [
        *(model.encode(SENTENCES, precision=p) for p in ("float32", "int8", "uint8", "binary", "ubinary")),
        model.encode(SENTENCES, precision="ubinary", convert_to_tensor=True),
        st.quantize_embeddings(embeddings, precision="ubinary"),
        st.quantize_embeddings(embeddings[:2], precision="int8", calibration_embeddings=embeddings),
        st.quantize_embeddings(embeddings, "uint8", ranges=np.stack([embeddings.min(0), embeddings.max(0)])),
    ]


def matryoshka(st: Any, path: Path) -> Any:
    model = st.SentenceTransformer(str(path), device="cpu", truncate_dim=16)
    embeddings = model.encode(SENTENCES)
    return (
        embeddings,
        model.get_sentence_embedding_dimension(),
        model.encode(SENTENCES, truncate_dim=8, normalize_embeddings=True),
        model.similarity(embeddings, embeddings),
    )


def prompts(st: Any, path: Path) -> Any:
    model = st.SentenceTransformer(
        str(path),
        device="cpu",
        prompts={"classification": "classify: ", "query": "query: "},
        default_prompt_name="classification",
    )
    return [
        model.encode(SENTENCES),  # the default prompt
        model.encode(SENTENCES, prompt_name="query"),
        model.encode(SENTENCES, prompt="a cat: "),
        model.encode_query(QUERIES),
        model.encode_document(SENTENCES),
    ]


SNIPPETS = [
    quickstart,
    encode_keywords,
    model_attributes,
    semantic_search,
    paraphrase_mining,
    community_detection,
    quantization,
    matryoshka,
    prompts,
]


@pytest.mark.parametrize("snippet", SNIPPETS, ids=lambda s: s.__name__)
def test_a_snippet_gives_sentence_transformers_result(
    snippet: Callable[[Any, Path], Any], prompted_dir: Path
) -> None:
    run_both(snippet, prompted_dir)


@pytest.mark.parametrize("snippet", [quickstart, quantization, semantic_search], ids=lambda s: s.__name__)
def test_a_plain_hugging_face_model_gives_the_same(
    snippet: Callable[[Any, Path], Any], tiny_model_dir: Path
) -> None:
    run_both(snippet, tiny_model_dir)


@pytest.mark.parametrize("snippet", [quickstart, quantization, matryoshka], ids=lambda s: s.__name__)
def test_a_static_model_gives_the_same(snippet: Callable[[Any, Path], Any], tiny_static_dir: Path) -> None:
    run_both(snippet, tiny_static_dir)


def test_a_model_saved_by_either_loads_in_the_other(prompted_dir: Path, tmp_path: Path) -> None:
    ours = sbert.SentenceTransformer(str(prompted_dir), device="cpu", precision="float32")
    ours.similarity_fn_name = "dot"
    ours.save_pretrained(str(tmp_path / "sbert"))
    theirs = sentence_transformers.SentenceTransformer(str(tmp_path / "sbert"), device="cpu")
    assert theirs.similarity_fn_name == "dot"
    assert_same(ours.encode(SENTENCES), theirs.encode(SENTENCES))
    theirs.save(str(tmp_path / "st"))
    again = sbert.SentenceTransformer(str(tmp_path / "st"), device="cpu", precision="float32")
    assert again.similarity_fn_name == "dot"
    assert_same(again.encode(SENTENCES), theirs.encode(SENTENCES))


def test_the_names_resolve_to_sberts_classes() -> None:
    from sbert.cross_encoder import CrossEncoder
    from sbert.encoder.model import SentenceEncoder

    assert sbert.SentenceTransformer is SentenceEncoder
    assert sbert.CrossEncoder is CrossEncoder
    assert sbert.util.cos_sim is sbert_util.cos_sim
    assert sbert.quantization.quantize_embeddings is sbert_quantization.quantize_embeddings


@pytest.mark.parametrize("compute", ["auto", "bfloat16", "mixed", "BFLOAT16"])
def test_a_compute_precision_given_as_precision_says_which_is_which(tiny_encoder: Any, compute: str) -> None:
    with pytest.raises(ValueError, match=r"precision= is the output precision .* compute_precision="):
        tiny_encoder.encode(SENTENCES, precision=compute)


def test_precision_none_is_float32_as_in_sentence_transformers(tiny_encoder: Any) -> None:
    np.testing.assert_array_equal(
        tiny_encoder.encode(SENTENCES, precision=None), tiny_encoder.encode(SENTENCES)
    )


def test_unsupported_keywords_are_named(tiny_encoder: Any) -> None:
    with pytest.raises(ValueError, match="unknown precision 'float16'"):
        tiny_encoder.encode(SENTENCES, precision="float16")
    with pytest.raises(ValueError, match="output_value None"):
        tiny_encoder.encode(SENTENCES, output_value=None)
    with pytest.raises(ValueError, match="no multi-process pool"):
        tiny_encoder.encode(SENTENCES, pool={"processes": []})
    with pytest.raises(ValueError, match="one device"):
        tiny_encoder.encode(SENTENCES, device=["cpu", "cuda:0"])
    with pytest.raises(ValueError, match="onnx"):
        sbert.SentenceTransformer("all-MiniLM-L6-v2", backend="onnx")
    with pytest.raises(ValueError, match="model_kwargs"):
        sbert.SentenceTransformer("all-MiniLM-L6-v2", model_kwargs={"torch_dtype": "float16"})


def test_int8_output_of_one_sentence_needs_ranges_as_in_sentence_transformers(tiny_encoder: Any) -> None:
    with pytest.raises(ValueError, match="single embedding"):
        tiny_encoder.encode("one sentence", precision="int8")


def test_the_bundled_model_gives_sentence_transformers_quickstart(bundled_encoder: Any) -> None:
    path = Path(bundled_encoder.source)
    run_both(quickstart, path)
