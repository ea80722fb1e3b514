"""``sbert serve`` on the bundled all-MiniLM-L6-v2: the openai client gets ``encode()``'s vectors."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.integration
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))


def test_openai_client_on_the_bundled_model(bundled_encoder) -> None:
    from openai import OpenAI
    from server_process import ServerProcess

    sentences = ["A man is playing a guitar.", "Someone plays an instrument.", "The stock market fell."]
    server = ServerProcess(["--precision", "float32"]).wait_ready()
    try:
        client = OpenAI(base_url=f"{server.url}/v1", api_key="unused")
        response = client.embeddings.create(input=sentences, model="all-MiniLM-L6-v2")
        got = np.array([item.embedding for item in response.data], dtype=np.float32)
        expected = bundled_encoder.encode(sentences)
        np.testing.assert_allclose(got, expected, atol=1e-6)
        assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)  # the model's Normalize layer
        assert response.usage.prompt_tokens == sum(
            len(ids) for ids in bundled_encoder.token_ids(sentences).ids
        )
    finally:
        server.terminate()
        assert server.wait_exit() == 0
