"""text-embeddings-inference's routes on a real server: TEI's documented request bodies, TEI's answer
shapes, the same numbers as ``encode()``, and errors in TEI's shape that name the field and item
(tests/server/test_tei_errors.py: every route's errors, statuses and error types)."""

from __future__ import annotations

import httpx
import numpy as np
import pytest
from server_process import ServerProcess

from sbert import SentenceEncoder

LONG = " ".join(["music"] * 100)  # over the tiny model's 64 tokens
TEXTS = ["a man plays the guitar", "the dog runs in the park", "rain"]


def post(server: ServerProcess, path: str, body: object) -> httpx.Response:
    return httpx.post(f"{server.url}{path}", json=body, timeout=30)


def tei_error(response: httpx.Response, status: int, error_type: str = "Validation") -> str:
    """The message of TEI's error body, ``{"error": "<message>", "error_type": "..."}``."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "error_type"} and body["error_type"] == error_type, body
    assert isinstance(body["error"], str)
    return str(body["error"])


def unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)


def test_embed_as_tei_documents_it(server: ServerProcess, tiny_encoder: SentenceEncoder) -> None:
    # TEI's README: curl 127.0.0.1:8080/embed -X POST -d '{"inputs":"What is Deep Learning?"}'
    one = post(server, "/embed", {"inputs": "What is Deep Learning?"})
    assert one.status_code == 200
    np.testing.assert_allclose(one.json(), [unit(tiny_encoder.encode("What is Deep Learning?"))], atol=1e-6)
    many = post(server, "/embed", {"inputs": TEXTS, "normalize": False}).json()
    np.testing.assert_allclose(many, tiny_encoder.encode(TEXTS), atol=1e-6)  # no Normalize layer here
    short = post(server, "/embed", {"inputs": TEXTS, "dimensions": 8}).json()
    np.testing.assert_allclose(short, unit(tiny_encoder.encode(TEXTS)[:, :8]), atol=1e-6)
    prompted = post(server, "/embed", {"inputs": "rain", "prompt_name": "nope"})
    assert "prompt_name 'nope'" in tei_error(prompted, 413)


def test_embed_refuses_long_inputs_unless_truncated_as_tei_does(
    server: ServerProcess, tiny_encoder: SentenceEncoder
) -> None:
    refused = post(server, "/embed", {"inputs": ["rain", LONG]})  # TEI's default: truncate false
    assert tei_error(refused, 413).startswith("inputs[1]: 102 tokens, more than the model's limit of 64")
    cut = post(server, "/embed", {"inputs": ["rain", LONG], "truncate": True}).json()
    np.testing.assert_allclose(cut[1], unit(tiny_encoder.encode(LONG)), atol=1e-6)
    left = post(
        server, "/embed", {"inputs": ["rain", LONG], "truncate": True, "truncation_direction": "Left"}
    )
    message = tei_error(left, 413)
    assert message.startswith("truncation_direction: Left is not supported") and "inputs[1]" in message
    short_left = post(server, "/embed", {"inputs": "rain", "truncation_direction": "left"})
    assert short_left.status_code == 200  # nothing to cut: the direction does not matter


def test_rerank_with_tei_body(server: ServerProcess, tiny_encoder: SentenceEncoder) -> None:
    # TEI's README: {"query":"What is Deep Learning?", "texts": ["Deep Learning is not...", "Deep learning is..."]}
    query, texts = "What is Deep Learning?", ["Deep Learning is not...", "Deep learning is..."]
    answer = post(server, "/rerank", {"query": query, "texts": texts}).json()
    vectors = tiny_encoder.encode([query, *texts])
    cosines = unit(vectors[1:]) @ unit(vectors[0])
    assert [rank["index"] for rank in answer] == list(np.argsort(-cosines, kind="stable"))
    assert all(set(rank) == {"index", "score"} for rank in answer)
    np.testing.assert_allclose([rank["score"] for rank in answer], np.sort(cosines)[::-1], atol=1e-6)
    with_text = post(server, "/rerank", {"query": query, "texts": texts, "return_text": True})
    assert [rank["text"] for rank in with_text.json()] == [texts[rank["index"]] for rank in answer]
    # A cosine has no raw form: refused as Cohere's body refuses it (422), in TEI's shape.
    raw = post(server, "/rerank", {"query": query, "texts": texts, "raw_scores": True})
    message = tei_error(raw, 422)
    cohere_raw = post(server, "/rerank", {"query": query, "documents": texts, "raw_scores": True})
    assert cohere_raw.status_code == 422 and message == cohere_raw.json()["error"]["message"]
    assert message.startswith("raw_scores: true needs a cross-encoder")
    long = post(server, "/rerank", {"query": "rain", "texts": ["sun", LONG]})
    assert tei_error(long, 413).startswith("texts[1]: ")
    empty = post(server, "/rerank", {"query": "rain", "texts": []})
    assert tei_error(empty, 400, "Empty") == "texts: must not be empty"  # TEI's 400 for an empty list
    cohere = post(server, "/rerank", {"query": "rain", "documents": ["sun"]}).json()
    assert cohere["scorer"] == "bi-encoder"  # the other body still gets the other answer


def test_similarity_with_tei_body(server: ServerProcess, tiny_encoder: SentenceEncoder) -> None:
    # TEI's README: {"inputs": {"source_sentence": "What is Deep Learning?", "sentences": [...]}}
    source, sentences = "What is Deep Learning?", ["What is Machine Learning?", "rain"]
    answer = post(server, "/similarity", {"inputs": {"source_sentence": source, "sentences": sentences}})
    vectors = tiny_encoder.encode([source, *sentences])
    np.testing.assert_allclose(answer.json(), unit(vectors[1:]) @ unit(vectors[0]), atol=1e-6)
    long = {"inputs": {"source_sentence": "rain", "sentences": ["sun", LONG]}}
    refused = post(server, "/similarity", long)
    assert tei_error(refused, 413).startswith("inputs.sentences[1]: 102 tokens")
    assert post(server, "/similarity", {**long, "parameters": {"truncate": True}}).status_code == 200
    bad = post(server, "/similarity", {"inputs": {"source_sentence": "rain", "sentences": [None]}})
    assert tei_error(bad, 422).startswith("inputs.sentences[0]: ")
    sbert = post(server, "/similarity", {"source_sentence": "rain", "sentences": ["sun"]}).json()
    assert set(sbert) == {"scores", "model", "usage", "truncated"}  # sbert's body, sbert's answer


def test_embed_all_gives_every_token_vector(server: ServerProcess, tiny_encoder: SentenceEncoder) -> None:
    answer = post(server, "/embed_all", {"inputs": TEXTS}).json()
    lengths = [len(ids) for ids in tiny_encoder.token_ids(TEXTS).ids]
    assert [len(tokens) for tokens in answer] == lengths  # [CLS] and [SEP] included
    assert {len(vector) for tokens in answer for vector in tokens} == {tiny_encoder.dim}
    assert tiny_encoder.pooling.mode == "mean"
    means = np.array([np.mean(tokens, axis=0) for tokens in answer])
    np.testing.assert_allclose(means, tiny_encoder.encode(TEXTS), atol=1e-5)
    refused = post(server, "/embed_all", {"inputs": ["rain", "sun", LONG]})
    assert tei_error(refused, 413).startswith("inputs[2]: 102 tokens")
    cut = post(server, "/embed_all", {"inputs": LONG, "truncate": True}).json()
    assert len(cut[0]) == tiny_encoder.max_seq_length


def test_tokenize_and_decode(server: ServerProcess, tiny_encoder: SentenceEncoder) -> None:
    text = "A man plays the guitar"
    tokens = post(server, "/tokenize", {"inputs": text}).json()[0]
    assert tokens[0] == {"id": 2, "text": "[CLS]", "special": True, "start": None, "stop": None}
    assert tokens[-1]["special"] and tokens[-1]["text"] == "[SEP]"
    assert [t["id"] for t in tokens] == tiny_encoder.token_ids([text]).ids[0]
    assert all(text[t["start"] : t["stop"]] == t["text"] for t in tokens[1:-1])
    assert tokens[1] == {"id": tokens[1]["id"], "text": "A", "special": False, "start": 0, "stop": 1}
    bare = post(server, "/tokenize", {"inputs": [text, "rain"], "add_special_tokens": False}).json()
    assert [t["id"] for t in bare[0]] == [t["id"] for t in tokens[1:-1]] and len(bare) == 2
    ids = [t["id"] for t in tokens]
    assert post(server, "/decode", {"ids": ids}).json() == ["a man plays the guitar"]
    both = post(server, "/decode", {"ids": [ids, ids[:2]], "skip_special_tokens": False}).json()
    assert both == ["[CLS] a man plays the guitar [SEP]", "[CLS] a"]
    unknown = post(server, "/decode", {"ids": [[5], [5, 10**6]]})
    assert tei_error(unknown, 422, "Tokenizer").startswith(
        "ids[1][1]: 1000000 is not a token id of this model"
    )
    negative = post(server, "/decode", {"ids": [5, -1]})
    assert tei_error(negative, 422).startswith("ids[1]: ")


def test_info(server: ServerProcess, tiny_encoder: SentenceEncoder) -> None:
    info = httpx.get(f"{server.url}/info", timeout=30).json()
    assert info["model_id"] == "tiny-bert" and info["model_type"] == {"embedding": {"pooling": "mean"}}
    assert info["max_input_length"] == tiny_encoder.max_seq_length and info["model_dtype"] == "float32"
    assert info["max_client_batch_size"] == 2048 and info["auto_truncate"] is False


@pytest.mark.parametrize(
    ("path", "body", "param", "status", "error_type"),
    [
        ("/embed", {"inputs": ["a", None]}, "inputs[1]", 422, "Validation"),
        ("/embed", {"inputs": []}, "inputs", 400, "Empty"),
        ("/embed", {"inputs": "a", "normalise": True}, "normalise", 422, "Validation"),
        ("/embed", {"inputs": "a", "truncation_direction": "Up"}, "truncation_direction", 422, "Validation"),
        ("/embed_all", {"inputs": ["a", 3]}, "inputs[1]", 422, "Validation"),
        ("/tokenize", {"inputs": "a", "add_special_tokens": "yes"}, "add_special_tokens", 422, "Validation"),
        ("/rerank", {"query": "q", "texts": ["a", None]}, "texts[1]", 422, "Validation"),
        ("/decode", {"ids": []}, "ids", 400, "Empty"),
    ],
)
def test_bad_bodies_name_the_field_and_item(
    server: ServerProcess, path: str, body: object, param: str, status: int, error_type: str
) -> None:
    assert tei_error(post(server, path, body), status, error_type).startswith(f"{param}: ")
