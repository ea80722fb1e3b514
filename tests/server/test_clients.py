"""The clients users point at TEI, infinity or OpenAI, unchanged but for the URL (and the api key a
client demands), against a real ``sbert serve``: each call exactly as its documentation shows, the
vectors compared with ``encode()`` in float32."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from openai import AsyncOpenAI, OpenAI
from server_process import ServerProcess, tiny_server_args

from sbert import SentenceEncoder

TEXTS = ["a man plays the guitar", "the dog runs in the park", "rain"]
OPENAI_NAME = "text-embedding-3-small"  # what existing code asks for: an alias of the served model
ATOL = 1e-6


@pytest.fixture(scope="module")
def server(tiny_model_dir: Path) -> Iterator[ServerProcess]:
    names = ["--served-model-name", "tiny-bert", "--served-model-name", OPENAI_NAME]
    process = ServerProcess(tiny_server_args(tiny_model_dir, *names)).wait_ready()
    yield process
    process.terminate()
    process.wait_exit()


@pytest.fixture
def online(monkeypatch: pytest.MonkeyPatch) -> None:
    """huggingface_hub refuses every request under HF_HUB_OFFLINE, even to 127.0.0.1."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)


def unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)


def test_openai_sdk_sync_float_base64_and_dimensions(
    server: ServerProcess, tiny_encoder: SentenceEncoder
) -> None:
    expected = tiny_encoder.encode(TEXTS)
    client = OpenAI(base_url=f"{server.url}/v1", api_key="unused")
    # Not given, the SDK asks for base64 and decodes it itself; given, it hands back what came.
    default = client.embeddings.create(model=OPENAI_NAME, input=TEXTS)
    floats = client.embeddings.create(model=OPENAI_NAME, input=TEXTS, encoding_format="float")
    encoded = client.embeddings.create(model=OPENAI_NAME, input=TEXTS, encoding_format="base64")
    decoded = [np.frombuffer(base64.b64decode(str(d.embedding)), dtype="<f4") for d in encoded.data]
    for got in ([d.embedding for d in default.data], [d.embedding for d in floats.data], decoded):
        np.testing.assert_allclose(got, expected, atol=ATOL)
    assert default.model == "tiny-bert"
    short = client.embeddings.create(model=OPENAI_NAME, input=TEXTS, dimensions=8)
    np.testing.assert_allclose([d.embedding for d in short.data], unit(expected[:, :8]), atol=ATOL)
    assert [m.id for m in client.models.list()] == ["tiny-bert", OPENAI_NAME]
    assert client.models.retrieve(OPENAI_NAME).id == OPENAI_NAME


def test_openai_sdk_token_ids(server: ServerProcess, tiny_encoder: SentenceEncoder) -> None:
    """OpenAI's ``input`` of token ids: the text's tokens, the model adding its [CLS] and [SEP]."""
    tokenizer = tiny_encoder.transformer.tokenizer
    ids = [tokenizer(text, add_special_tokens=False)["input_ids"] for text in TEXTS]
    client = OpenAI(base_url=f"{server.url}/v1", api_key="unused")
    got = client.embeddings.create(model=OPENAI_NAME, input=ids)
    np.testing.assert_allclose([d.embedding for d in got.data], tiny_encoder.encode(TEXTS), atol=ATOL)
    one = client.embeddings.create(model=OPENAI_NAME, input=ids[0], encoding_format="float")
    np.testing.assert_allclose(one.data[0].embedding, tiny_encoder.encode(TEXTS[0]), atol=ATOL)


def test_openai_sdk_async_and_infinity_style_base_url(
    server: ServerProcess, tiny_encoder: SentenceEncoder
) -> None:
    async def embed() -> list[list[float]]:
        client = AsyncOpenAI(base_url=server.url, api_key="unused")  # no /v1: /embeddings, /models
        got = await client.embeddings.create(model=OPENAI_NAME, input=TEXTS)
        assert OPENAI_NAME in [m.id async for m in client.models.list()]
        return [d.embedding for d in got.data]

    np.testing.assert_allclose(asyncio.run(embed()), tiny_encoder.encode(TEXTS), atol=ATOL)


def test_huggingface_hub_inference_client(
    server: ServerProcess, tiny_encoder: SentenceEncoder, online: None
) -> None:
    from huggingface_hub import InferenceClient

    client = InferenceClient(base_url=server.url)  # posts to / as to TEI
    vector = client.feature_extraction("rain")
    np.testing.assert_allclose(vector, unit(tiny_encoder.encode(["rain"])), atol=ATOL)
    scores = client.sentence_similarity("rain", other_sentences=TEXTS)
    vectors = unit(tiny_encoder.encode(["rain", *TEXTS]))
    np.testing.assert_allclose(scores, vectors[1:] @ vectors[0], atol=ATOL)


def test_langchain_openai(server: ServerProcess, tiny_encoder: SentenceEncoder) -> None:
    from langchain_openai import OpenAIEmbeddings

    # check_embedding_ctx_length=False: else it tokenizes with tiktoken, whose files it downloads
    embeddings = OpenAIEmbeddings(
        model=OPENAI_NAME, base_url=f"{server.url}/v1", api_key="unused", check_embedding_ctx_length=False
    )
    np.testing.assert_allclose(embeddings.embed_documents(TEXTS), tiny_encoder.encode(TEXTS), atol=ATOL)
    np.testing.assert_allclose(embeddings.embed_query("rain"), tiny_encoder.encode("rain"), atol=ATOL)


def test_llama_index_tei_and_openai(server: ServerProcess, tiny_encoder: SentenceEncoder) -> None:
    from llama_index.embeddings.openai import OpenAIEmbedding
    from llama_index.embeddings.text_embeddings_inference import TextEmbeddingsInference

    tei = TextEmbeddingsInference(model_name="tiny-bert", base_url=server.url)
    expected = unit(tiny_encoder.encode(TEXTS))  # TEI's /embed normalizes by default
    np.testing.assert_allclose(tei.get_text_embedding_batch(TEXTS), expected, atol=ATOL)
    np.testing.assert_allclose(tei.get_query_embedding("rain"), unit(tiny_encoder.encode("rain")), atol=ATOL)
    openai = OpenAIEmbedding(model_name=OPENAI_NAME, api_base=f"{server.url}/v1", api_key="unused")
    np.testing.assert_allclose(openai.get_text_embedding_batch(TEXTS), tiny_encoder.encode(TEXTS), atol=ATOL)
