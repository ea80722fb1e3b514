import pytest
import torch

from sbert.modules import Pooling

TOKENS = torch.tensor([[[1.0, -5.0], [3.0, -1.0], [100.0, 100.0]], [[2.0, 2.0], [0.0, 0.0], [0.0, 0.0]]])
MASK = torch.tensor([[1, 1, 0], [1, 0, 0]])  # padding holds the largest values: it must never count


def test_mean_ignores_padding() -> None:
    assert torch.equal(Pooling(2, "mean")(TOKENS, MASK), torch.tensor([[2.0, -3.0], [2.0, 2.0]]))


def test_max_never_picks_padding() -> None:
    assert torch.equal(Pooling(2, "max")(TOKENS, MASK), torch.tensor([[3.0, -1.0], [2.0, 2.0]]))


def test_cls_takes_first_token() -> None:
    assert torch.equal(Pooling(2, "cls")(TOKENS, MASK), torch.tensor([[1.0, -5.0], [2.0, 2.0]]))


def test_mode_is_case_insensitive() -> None:
    assert Pooling(2, "MEAN").mode == "mean"


def test_unknown_mode_lists_choices() -> None:
    with pytest.raises(ValueError, match="mean, cls, max"):
        Pooling(2, "median")


@pytest.mark.parametrize("mode", ["mean", "cls", "max", "mean_sqrt_len_tokens", "weightedmean", "lasttoken"])
def test_config_round_trip(mode: str) -> None:
    pooling = Pooling.from_config(Pooling(384, mode, include_prompt=False).config())
    assert (pooling.dim, pooling.mode, pooling.include_prompt) == (384, mode, False)


def test_a_config_with_an_unknown_mode_names_the_file_and_the_mode() -> None:
    with pytest.raises(ValueError, match=r"x/config.json: pooling_mode \['median'\]"):
        Pooling.from_config({"word_embedding_dimension": 8, "pooling_mode": "median"}, source="x/config.json")


@pytest.mark.parametrize("config", [{}, {"pooling_mode_mean_tokens": False}, {"pooling_mode": []}])
def test_a_config_with_no_mode_is_refused_naming_the_file_and_key(config: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="x/config.json: no pooling mode: set pooling_mode"):
        Pooling.from_config({"word_embedding_dimension": 8, **config}, source="x/config.json")


def test_several_modes_concatenate_in_the_order_given_and_keep_it_in_the_config() -> None:
    pooling = Pooling(2, ("max", "cls"))
    assert torch.equal(
        pooling(TOKENS, MASK), torch.cat([Pooling(2, "max")(TOKENS, MASK), TOKENS[:, 0]], dim=1)
    )
    assert pooling.output_dim == 4
    assert Pooling.from_config(pooling.config()).modes == ("max", "cls")
    assert "pooling_mode" not in Pooling(2, ("cls", "max")).config()  # the flags' own order suffices


MODES = [
    "cls",
    "max",
    "mean",
    "mean_sqrt_len_tokens",
    "weightedmean",
    "lasttoken",
    ("cls", "mean"),
    ("lasttoken", "max"),
]


@pytest.mark.parametrize("padding", ["right", "left"])
@pytest.mark.parametrize("prompt_length", [0, 2])
@pytest.mark.parametrize("mode", MODES, ids=str)
def test_every_mode_equals_sentence_transformers_pooling(
    mode: str | tuple[str, ...], prompt_length: int, padding: str
) -> None:
    from sentence_transformers.models import Pooling as STPooling

    generator = torch.Generator().manual_seed(0)
    tokens = torch.randn(3, 6, 4, generator=generator)  # (batch, seq, dim)
    lengths = torch.tensor([6, 4, 3])
    positions = torch.arange(6)[None]
    right = (positions < lengths[:, None]).long()
    mask = right if padding == "right" else right.flip(1)
    ours = Pooling(4, mode, include_prompt=False)
    theirs = STPooling(4, pooling_mode=mode, include_prompt=False)
    features = {"token_embeddings": tokens, "attention_mask": mask}
    if prompt_length:
        features["prompt_length"] = torch.tensor([prompt_length])
    expected = theirs(features)["sentence_embedding"]
    torch.testing.assert_close(ours(tokens, mask, prompt_length), expected, rtol=0, atol=1e-6)
