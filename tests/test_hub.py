from pathlib import Path

import pytest

from sbert.errors import ModelLoadError
from sbert.hub import bundled_model_path, resolve_model_path


def test_default_and_short_names_resolve_to_bundled_model() -> None:
    bundled = bundled_model_path()
    assert (bundled / "model.safetensors").is_file()
    for name in (None, "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        assert resolve_model_path(name) == bundled


def test_local_directory_is_used_as_is(tmp_path: Path) -> None:
    assert resolve_model_path(tmp_path) == tmp_path


def test_hub_download_failure_names_bundled_alternative(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelLoadError, match=r"could not be downloaded.*all-MiniLM-L6-v2"):
        resolve_model_path("some-org/some-model-that-is-not-cached")


def test_unknown_name() -> None:
    with pytest.raises(ModelLoadError, match="no such directory"):
        resolve_model_path("./does/not/exist")
