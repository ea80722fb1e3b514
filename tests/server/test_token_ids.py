"""Token ids on a real server whose engine is not PyTorch float32 (a bf16-capable CPU simulated): a
text and its token ids get one vector, from the engine /health names; a list of numbers is one
input, its length tokens (cut or refused as a text's are), wherever it is flat or nested."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from openai import APIStatusError, OpenAI
from openai.types import CreateEmbeddingResponse
from server_process import ServerProcess

from sbert import SentenceEncoder

TEXTS = ["a man plays the guitar", "the dog runs in the park", "rain"]
MAX_ITEMS = 4
LONG = 3000  # token ids of one input: far over --max-items, and over the tiny model's 64 tokens
ATOL = 1e-6  # float32 rounding; the old PyTorch float32 path was 1e-4 off the bf16 engine here


@pytest.fixture(scope="module")
def bf16_server(tiny_model_dir: Path) -> Iterator[ServerProcess]:
    """The tiny BERT planned as on a CPU with native bf16: bf16 (OpenVINO where installed)."""
    args = ["--model", str(tiny_model_dir), "--served-model-name", "tiny", "--max-items", str(MAX_ITEMS)]
    process = ServerProcess(args, env={"SBERT_SIMULATE_CPU": "bf16"}).wait_ready()
    yield process
    process.terminate()
    process.wait_exit()


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir: Path) -> Any:
    return SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu").transformer.tokenizer


def client(server: ServerProcess) -> OpenAI:
    return OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)


def vectors(answer: CreateEmbeddingResponse) -> np.ndarray:
    return np.array([d.embedding for d in answer.data], dtype=np.float32)


def test_texts_and_their_token_ids_get_one_vector_from_the_served_engine(
    bf16_server: ServerProcess, tokenizer: Any
) -> None:
    health = httpx.get(f"{bf16_server.url}/health", timeout=30).json()
    assert health["precision"] == "bfloat16"  # not PyTorch float32: the case that differed
    ids = [tokenizer(text, add_special_tokens=False)["input_ids"] for text in TEXTS]
    openai = client(bf16_server)
    as_text = vectors(openai.embeddings.create(model="tiny", input=TEXTS, encoding_format="float"))
    as_ids = vectors(openai.embeddings.create(model="tiny", input=ids, encoding_format="float"))
    np.testing.assert_allclose(as_ids, as_text, atol=ATOL, rtol=0)
    one = vectors(openai.embeddings.create(model="tiny", input=ids[0], encoding_format="float"))
    np.testing.assert_allclose(one[0], as_text[0], atol=ATOL, rtol=0)


def test_a_flat_list_of_ids_is_one_input_counted_in_tokens(
    bf16_server: ServerProcess, tokenizer: Any
) -> None:
    """3,000 ids flat or nested: one input, cut to the model's limit as the text they spell is; only
    a list of lists counts items against --max-items."""
    music = tokenizer("music", add_special_tokens=False)["input_ids"]
    ids = music * LONG
    openai = client(bf16_server)
    flat = openai.embeddings.create(model="tiny", input=ids, encoding_format="float")
    nested = openai.embeddings.create(model="tiny", input=[ids], encoding_format="float")
    text = openai.embeddings.create(model="tiny", input=" ".join(["music"] * LONG), encoding_format="float")
    assert len(flat.data) == len(nested.data) == 1
    np.testing.assert_allclose(vectors(flat), vectors(nested), atol=ATOL, rtol=0)
    np.testing.assert_allclose(vectors(flat), vectors(text), atol=ATOL, rtol=0)
    tokens = len(ids) + 2  # [CLS] and [SEP]
    for answer in (flat, nested):
        assert answer.model_extra["truncated"] == [{"param": "input[0]", "tokens": tokens}]
        assert answer.usage.prompt_tokens == 64  # what was embedded: the model's limit
    for given in (ids, [ids]):  # truncate: false refuses both alike, as it refuses the text
        with pytest.raises(APIStatusError) as refused:
            openai.embeddings.create(model="tiny", input=given, extra_body={"truncate": False})
        assert refused.value.status_code == 413
        assert refused.value.body["code"] == "input_too_long"
        assert refused.value.body["message"].startswith(f"input[0]: {tokens} tokens")
    with pytest.raises(APIStatusError) as many:
        openai.embeddings.create(model="tiny", input=[music] * (MAX_ITEMS + 1))
    assert many.value.status_code == 413
    assert (
        many.value.body["message"]
        == f"input: {MAX_ITEMS + 1} items, more than the limit of {MAX_ITEMS} per request"
    )


def test_decode_counts_a_flat_list_as_one_input(bf16_server: ServerProcess, tokenizer: Any) -> None:
    music = tokenizer("music", add_special_tokens=False)["input_ids"]
    decoded = httpx.post(f"{bf16_server.url}/decode", json={"ids": music * LONG}, timeout=30)
    assert decoded.status_code == 200 and decoded.json() == [" ".join(["music"] * LONG)]
    many = httpx.post(f"{bf16_server.url}/decode", json={"ids": [music] * (MAX_ITEMS + 1)}, timeout=30)
    assert many.status_code == 413 and many.json()["error_type"] == "Validation"


def test_the_document_bounds_lists_of_inputs_not_one_input_s_ids(bf16_server: ServerProcess) -> None:
    schemas = httpx.get(f"{bf16_server.url}/openapi.json", timeout=30).json()["components"]["schemas"]
    flat, nested = schemas["EmbeddingIdsRequest"]["properties"]["input"]["anyOf"]
    assert "maxItems" not in flat and nested["maxItems"] == MAX_ITEMS
    assert "maxItems" not in schemas["DecodeRequest"]["properties"]["ids"]
    assert schemas["DecodeBatchRequest"]["properties"]["ids"]["maxItems"] == MAX_ITEMS
