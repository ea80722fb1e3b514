from pathlib import Path

import pytest

from sbert.base.errors import ModelLoadError
from sbert.model import hub
from sbert.model.hub import bundled_model_path, is_hub_id, resolve_model_path


def test_default_and_short_names_resolve_to_bundled_model() -> None:
    bundled = bundled_model_path().resolve()
    assert (bundled / "model.safetensors").is_file()
    for name in (None, "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        assert resolve_model_path(name) == bundled


def test_local_directory_is_used_as_its_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert resolve_model_path(tmp_path) == tmp_path.resolve()
    (tmp_path / "org" / "name").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert resolve_model_path("org/name") == (tmp_path / "org" / "name").resolve()  # a folder wins


def test_hub_download_failure_names_bundled_alternative(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelLoadError, match=r"could not be downloaded.*all-MiniLM-L6-v2"):
        resolve_model_path("some-org/some-model-that-is-not-cached")


def test_unknown_name() -> None:
    with pytest.raises(ModelLoadError, match="no such directory"):
        resolve_model_path("./does/not/exist")


@pytest.mark.parametrize(
    "name",
    ["./mine", "../mine", "models/mine", "mine/", "a/b/c", "~/no-such-sbert-model", "/no/such", "a\\b"],
)
def test_a_missing_path_is_never_sent_to_the_hub(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "models").mkdir()  # so "models/mine" names a folder in an existing local folder
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(hub, "download", lambda *args, **kwargs: pytest.fail(f"{name!r} sent to the hub"))
    expected = str(Path(name).expanduser().resolve())
    with pytest.raises(ModelLoadError, match="no such directory") as error:
        resolve_model_path(name)
    assert expected in str(error.value)


def test_a_path_object_is_never_sent_to_the_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hub, "download", lambda *args, **kwargs: pytest.fail("a Path sent to the hub"))
    with pytest.raises(ModelLoadError, match="no such directory"):
        resolve_model_path(Path("org/name"))


def test_a_missing_hub_id_names_where_it_looked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelLoadError) as error:
        resolve_model_path("other/all-MiniLM-L6-v2")
    message = str(error.value)
    assert f"no local directory {(tmp_path / 'other' / 'all-MiniLM-L6-v2').resolve()}" in message
    assert "Hugging Face Hub" in message


def test_a_file_is_not_a_model_directory(tmp_path: Path) -> None:
    (tmp_path / "model.txt").write_text("x")
    with pytest.raises(ModelLoadError, match="is a file, not a model directory"):
        resolve_model_path(tmp_path / "model.txt")


def test_hub_id_rule() -> None:
    assert is_hub_id("sentence-transformers/all-mpnet-base-v2")
    assert is_hub_id("BAAI/bge-small-en-v1.5")
    for path in ("./x", "../x", ".x/y", "x/", "/x/y", "a/b/c", "~/x", "x", "a\\b", "-a/b", "a/b."):
        assert not is_hub_id(path), path
