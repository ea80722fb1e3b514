"""Prompts as sentence-transformers applies them: read from its config, put before each sentence,
left out of pooling where ``include_prompt`` is off, saved back; sentence-transformers is the oracle."""

from pathlib import Path

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer

from sbert import SentenceEncoder
from sbert.base.errors import ModelLoadError
from sbert.model.prompts import Prompts

SENTENCES = ["a man plays the guitar", "rain", "the dog runs in the park and the cat sleeps in the sun", ""]


def test_prompts_resolve_as_sentence_transformers_does() -> None:
    prompts = Prompts({"query": "q: ", "passage": "p: "}, default_name="query")
    assert prompts.resolve() == "q: "
    assert prompts.resolve("passage") == "p: "
    assert prompts.resolve(prompt="x: ") == "x: "
    assert prompts.document_name() == "passage" and prompts.query_name() == "query"
    assert Prompts().resolve() is None


def test_an_unknown_prompt_name_lists_the_models_prompts() -> None:
    with pytest.raises(
        ValueError, match=r"unknown prompt_name 'doc'; this model's prompts: 'query', 'passage'"
    ):
        Prompts({"query": "q: ", "passage": "p: "}).resolve("doc")


def test_a_default_prompt_name_that_is_not_a_prompt_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="x.json: default prompt name 'doc' is not one of the prompts"):
        Prompts.from_config({"prompts": {"query": "q: "}, "default_prompt_name": "doc"}, "x.json")
    with pytest.raises(ValueError, match="x.json: prompts must map names to strings"):
        Prompts.from_config({"prompts": {"query": 3}}, "x.json")


@pytest.mark.parametrize("backend", ["torch", "auto"])
def test_vectors_equal_sentence_transformers_with_every_prompt_choice(
    prompted_model_dir: Path, backend: str
) -> None:
    ours = SentenceEncoder.from_pretrained(
        prompted_model_dir, device="cpu", precision="float32", backend=backend
    )
    theirs = SentenceTransformer(str(prompted_model_dir), device="cpu")
    cases = [
        (ours.encode(SENTENCES), theirs.encode(SENTENCES)),  # the default prompt
        (ours.encode(SENTENCES, prompt_name="document"), theirs.encode(SENTENCES, prompt_name="document")),
        (ours.encode(SENTENCES, prompt="Represent: "), theirs.encode(SENTENCES, prompt="Represent: ")),
        (ours.encode(SENTENCES, prompt=""), theirs.encode(SENTENCES, prompt="")),
        (ours.encode_query(SENTENCES), theirs.encode_query(SENTENCES)),
        (ours.encode_document(SENTENCES), theirs.encode_document(SENTENCES)),
    ]
    for got, expected in cases:
        np.testing.assert_allclose(got, expected, atol=1e-5)
    assert not np.allclose(cases[0][0], cases[1][0], atol=1e-3)  # the prompt changes the vectors


def test_a_prompt_left_out_of_pooling_runs_on_pytorch_and_says_why(prompted_model_dir: Path) -> None:
    model = SentenceEncoder.from_pretrained(prompted_model_dir, device="cpu", precision="float32")
    if model.pooling.include_prompt:
        pytest.skip("the prompt is pooled here: every backend runs it")
    assert model.plan.backend == "torch"
    assert any("include_prompt" in reason for reason in model.plan.fallbacks)
    if model.plan.requested_backend == "auto":
        with pytest.raises(ValueError, match="include_prompt"):
            model.plan_for("float32", "openvino")


def test_prompts_survive_a_save_that_sentence_transformers_reads(
    prompted_model_dir: Path, tmp_path: Path
) -> None:
    model = SentenceEncoder.from_pretrained(
        prompted_model_dir, device="cpu", precision="float32", backend="torch"
    )
    model.save(tmp_path / "saved")
    theirs = SentenceTransformer(str(tmp_path / "saved"), device="cpu")
    assert (
        theirs.prompts == {"query": "query: ", "document": "passage: "}
        and theirs.default_prompt_name == "query"
    )
    np.testing.assert_allclose(theirs.encode(SENTENCES), model.encode(SENTENCES), atol=1e-5)
    np.testing.assert_allclose(theirs.encode_document(SENTENCES), model.encode_document(SENTENCES), atol=1e-5)


def test_token_counts_include_the_prompt(prompted_model_dir: Path) -> None:
    model = SentenceEncoder.from_pretrained(prompted_model_dir, device="cpu", backend="torch")
    plain = model.token_counts(SENTENCES, prompt="")
    prompt_tokens = len(model.token_ids(["query: "]).ids[0]) - 2  # without [CLS] and [SEP]
    assert prompt_tokens > 0
    assert model.token_counts(SENTENCES) == [count + prompt_tokens for count in plain]


def test_a_prompt_that_fills_max_seq_length_is_refused_with_its_length(prompted_model_dir: Path) -> None:
    model = SentenceEncoder.from_pretrained(prompted_model_dir, device="cpu", backend="torch")
    with pytest.raises(ValueError, match=r"alone is 102 tokens, and max_seq_length is 64"):
        model.encode(SENTENCES, prompt=" ".join(["rain"] * 100))


def test_an_unknown_prompt_name_is_refused_before_any_work(prompted_model_dir: Path) -> None:
    model = SentenceEncoder.from_pretrained(prompted_model_dir, device="cpu", backend="torch")
    with pytest.raises(ValueError, match="this model's prompts: 'document', 'query'"):
        model.encode(SENTENCES, prompt_name="passage")


def test_a_bad_prompts_config_is_a_load_error_naming_the_file(
    prompted_model_dir: Path, tmp_path: Path
) -> None:
    import json
    import shutil

    broken = Path(shutil.copytree(prompted_model_dir, tmp_path / "broken"))
    config = broken / "config_sentence_transformers.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "default_prompt_name": "nope"}))
    with pytest.raises(ModelLoadError, match="config_sentence_transformers.json: default prompt name 'nope'"):
        SentenceEncoder.from_pretrained(broken)


def test_the_identity_of_a_prompted_model_records_its_prompts(
    prompted_model_dir: Path, tiny_model_dir: Path
) -> None:
    from sbert.embeddings.identity import model_identity

    prompted = model_identity(SentenceEncoder.from_pretrained(prompted_model_dir, backend="torch"))
    plain = model_identity(SentenceEncoder.from_pretrained(tiny_model_dir, backend="torch"))
    assert prompted.pipeline["prompts"]["default_prompt_name"] == "query"
    assert "prompts" not in plain.pipeline and prompted.fingerprint != plain.fingerprint
