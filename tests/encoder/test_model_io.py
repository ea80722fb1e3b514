import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer

from sbert import ModelLoadError, SentenceEncoder
from sbert.base.outputs import OutputRefusedError
from sbert.model.hub import bundled_model_path
from sbert.modules import Dense, Normalize

SENTENCES = ["a man plays the guitar", "the dog runs in the park", ""]


def test_plain_hf_dir_gets_requested_pooling(tiny_model_dir: Path) -> None:
    assert SentenceEncoder.from_pretrained(tiny_model_dir).pooling.mode == "mean"
    assert SentenceEncoder.from_pretrained(tiny_model_dir, pooling="max").pooling.mode == "max"
    with pytest.raises(ValueError, match="mean, cls, max"):
        SentenceEncoder.from_pretrained(tiny_model_dir, pooling="avg")


@pytest.mark.parametrize("pooling", ["mean", "cls", "max"])
def test_save_load_round_trip_with_sentence_transformers(
    tiny_model_dir: Path, tmp_path: Path, pooling: str
) -> None:
    model = SentenceEncoder.from_pretrained(
        tiny_model_dir, pooling=pooling, device="cpu", precision="float32"
    )
    model.layers.extend([Dense(model.dim, 8), Normalize()])
    model.save(tmp_path / "saved")
    assert not list((tmp_path / "saved").rglob("*.bin"))

    ours = SentenceEncoder.from_pretrained(tmp_path / "saved", device="cpu", precision="float32")
    theirs = SentenceTransformer(str(tmp_path / "saved"), device="cpu")
    expected = model.encode(SENTENCES)
    np.testing.assert_allclose(ours.encode(SENTENCES), expected, atol=1e-6)
    np.testing.assert_allclose(theirs.encode(SENTENCES), expected, atol=1e-5)

    theirs.save(str(tmp_path / "resaved"))  # and the reverse: what sentence-transformers writes
    again = SentenceEncoder.from_pretrained(tmp_path / "resaved", device="cpu", precision="float32")
    assert again.pooling.mode == pooling and again.dim == 8
    np.testing.assert_allclose(again.encode(SENTENCES), expected, atol=1e-5)


def test_save_replaces_its_own_dir_and_refuses_one_with_a_users_file(
    tiny_encoder: SentenceEncoder, tmp_path: Path
) -> None:
    target = tmp_path / "model"
    tiny_encoder.save(target)
    tiny_encoder.save(target)  # sbert's own output: replaced
    assert (target / "modules.json").is_file() and [p.name for p in tmp_path.iterdir()] == ["model"]
    (target / "stale.txt").write_text("old")
    with pytest.raises(OutputRefusedError, match=r"holds stale\.txt, not written by sbert"):
        tiny_encoder.save(target)  # the swap would delete it (tests/base/test_model_writers.py)
    assert (target / "stale.txt").read_text() == "old"


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_truncated_safetensors_names_file(tiny_model_dir: Path, tmp_path: Path) -> None:
    broken = _copy(tiny_model_dir, tmp_path / "broken")
    weights = broken / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    with pytest.raises(ModelLoadError, match="model.safetensors"):
        SentenceEncoder.from_pretrained(broken)


def test_broken_json_names_file(tiny_encoder: SentenceEncoder, tmp_path: Path) -> None:
    tiny_encoder.save(tmp_path / "m")
    (tmp_path / "m" / "1_Pooling" / "config.json").write_text("{not json")
    with pytest.raises(ModelLoadError, match=r"1_Pooling/config.json: not valid JSON"):
        SentenceEncoder.from_pretrained(tmp_path / "m")
    (tmp_path / "m" / "modules.json").write_text("[{")
    with pytest.raises(ModelLoadError, match="modules.json"):
        SentenceEncoder.from_pretrained(tmp_path / "m")


def test_missing_config_and_pickle_only_weights(tiny_model_dir: Path, tmp_path: Path) -> None:
    no_config = _copy(tiny_model_dir, tmp_path / "a")
    (no_config / "config.json").unlink()
    with pytest.raises(ModelLoadError, match="config.json"):
        SentenceEncoder.from_pretrained(no_config)
    pickled = _copy(tiny_model_dir, tmp_path / "b")
    (pickled / "model.safetensors").rename(pickled / "pytorch_model.bin")
    with pytest.raises(ModelLoadError, match="safetensors only"):
        SentenceEncoder.from_pretrained(pickled)


def test_unknown_module_type_is_refused(tiny_encoder: SentenceEncoder, tmp_path: Path) -> None:
    tiny_encoder.save(tmp_path / "m")
    modules = json.loads((tmp_path / "m" / "modules.json").read_text())
    modules.append({"idx": 9, "name": "9", "path": "", "type": "my_package.Custom"})
    (tmp_path / "m" / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(ModelLoadError, match="my_package.Custom"):
        SentenceEncoder.from_pretrained(tmp_path / "m")


@pytest.mark.parametrize(
    ("modules", "problem"),
    [
        ({"0": "Transformer"}, "expected a list of modules"),
        (["0_Transformer", "1_Pooling"], "entry 0 is a JSON str"),
        ([{"idx": "first", "path": "", "type": "Transformer"}], "idx 'first' is not a whole number"),
        ([{"idx": 0, "path": "../elsewhere", "type": "Transformer"}], "leads outside the model directory"),
        ([{"idx": 0, "path": "/etc", "type": "Transformer"}], "leads outside the model directory"),
        ([{"idx": 0, "path": "1_Pooling/../..", "type": "Transformer"}], "leads outside"),
        ([{"idx": 0, "path": ["0"], "type": "Transformer"}], "is not a string"),
    ],
)
def test_malformed_modules_json_is_refused_with_a_message(
    tiny_encoder: SentenceEncoder, tmp_path: Path, modules: object, problem: str
) -> None:
    tiny_encoder.save(tmp_path / "m")
    (tmp_path / "m" / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(ModelLoadError, match=rf"modules.json: .*{problem}"):
        SentenceEncoder.from_pretrained(tmp_path / "m")


def test_pooling_of_the_wrong_dimension_is_refused_at_load(
    tiny_encoder: SentenceEncoder, tmp_path: Path
) -> None:
    tiny_encoder.save(tmp_path / "m")
    config_file = tmp_path / "m" / "1_Pooling" / "config.json"
    config = json.loads(config_file.read_text())
    config["word_embedding_dimension"] = 384  # the transformer's vectors have 32
    config_file.write_text(json.dumps(config))
    with pytest.raises(ModelLoadError, match=r"1_Pooling/config.json: word_embedding_dimension is 384.* 32"):
        SentenceEncoder.from_pretrained(tmp_path / "m")
    del config["word_embedding_dimension"]
    config_file.write_text(json.dumps(config))
    with pytest.raises(ValueError, match=r"1_Pooling/config.json: word_embedding_dimension None is not"):
        SentenceEncoder.from_pretrained(tmp_path / "m")


def test_dense_of_the_wrong_input_size_is_refused_at_load(
    tiny_encoder: SentenceEncoder, tmp_path: Path
) -> None:
    model = SentenceEncoder(tiny_encoder.transformer, tiny_encoder.pooling, [Dense(32, 8), Dense(8, 4)])
    model.save(tmp_path / "m")
    modules = json.loads((tmp_path / "m" / "modules.json").read_text())
    (tmp_path / "m" / "modules.json").write_text(json.dumps([m for m in modules if m["path"] != "2_Dense"]))
    with pytest.raises(
        ModelLoadError, match="a Dense layer takes 8 dimensions, but the layer before it gives 32"
    ):
        SentenceEncoder.from_pretrained(tmp_path / "m")


def test_string_idx_of_digits_is_read(tiny_encoder: SentenceEncoder, tmp_path: Path) -> None:
    tiny_encoder.save(tmp_path / "m")
    modules = json.loads((tmp_path / "m" / "modules.json").read_text())
    for entry in modules:
        entry["idx"] = str(entry["idx"])
    (tmp_path / "m" / "modules.json").write_text(json.dumps(modules))
    assert SentenceEncoder.from_pretrained(tmp_path / "m").pooling.mode == tiny_encoder.pooling.mode


def test_source_is_the_absolute_path_loaded(
    tiny_encoder: SentenceEncoder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tiny_encoder.save(tmp_path / "models" / "mine")
    monkeypatch.chdir(tmp_path)
    loaded = SentenceEncoder.from_pretrained("models/mine")
    assert loaded.source == str((tmp_path / "models" / "mine").resolve())
    assert SentenceEncoder.from_pretrained().source == str(bundled_model_path().resolve())
