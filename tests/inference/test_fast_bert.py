import torch
import torch.nn.functional as F
from tests.cuda_rules import CudaRules
from torch.utils.flop_counter import FlopCounterMode

from sbert import SentenceEncoder
from sbert.base.weights import parameter_version, weights_version
from sbert.inference import FastBert
from sbert.inference.fast_bert import supports

SENTENCES = [
    "a man plays the guitar",
    "the dog runs in the park",
    "rain",
    "a small red car and a big blue car",
]


def _reference(encoder: SentenceEncoder) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    features = encoder.transformer.collate(encoder.token_ids(SENTENCES).ids)
    with torch.no_grad():
        return features, encoder.transformer(features)


def test_float32_equals_hugging_face(tiny_encoder: SentenceEncoder) -> None:
    features, expected = _reference(tiny_encoder)
    fast = FastBert(tiny_encoder.transformer.model, torch.float32)
    tokens = fast(features["input_ids"], features["attention_mask"])
    real = features["attention_mask"].bool()
    torch.testing.assert_close(tokens[real], expected[real], atol=1e-5, rtol=0)


def test_bfloat16_is_close_to_float32(tiny_encoder: SentenceEncoder) -> None:
    features, expected = _reference(tiny_encoder)
    tokens = FastBert(tiny_encoder.transformer.model, torch.bfloat16)(
        features["input_ids"], features["attention_mask"]
    )
    real = features["attention_mask"].bool()
    assert tokens.dtype == torch.float32
    assert F.cosine_similarity(tokens[real], expected[real], dim=-1).min() > 0.999


def test_version_changes_when_weights_change(tiny_encoder: SentenceEncoder) -> None:
    model = tiny_encoder.transformer.model
    before = parameter_version(model)
    with torch.no_grad():
        next(model.parameters()).add_(1.0)
    assert parameter_version(model) != before


def test_supports_bert_only(tiny_encoder: SentenceEncoder) -> None:
    model = tiny_encoder.transformer.model
    assert supports(model)
    model.config.hidden_act = "relu"
    assert not supports(model)


def test_weights_version_sees_every_kind_of_update_without_reading_a_weight(
    tiny_encoder: SentenceEncoder, cuda_rules: CudaRules
) -> None:
    model = tiny_encoder.transformer.model
    cuda_rules.on_device(model)
    seen = [weights_version(model)]

    def changed() -> bool:
        seen.append(weights_version(model))
        return seen[-1] != seen[-2]

    assert not changed()  # nothing happened: the same key
    with torch.no_grad():
        next(model.parameters()).add_(1.0)
    assert changed()
    for fused in (True, False):  # a fused step bumps no version counter; the step is counted
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=fused)
        model(input_ids=torch.tensor([[2, 7, 3]])).last_hidden_state.sum().backward()
        assert not changed()  # gradients alone change no weight
        optimizer.step()
        assert changed()
        optimizer.zero_grad()
    model.load_state_dict(model.state_dict())
    assert changed()
    model.load_state_dict({k: v.clone() for k, v in model.state_dict().items()}, assign=True)
    assert changed()
    assert cuda_rules.syncs == []  # the key is read on the host: no wait for the device


def test_the_first_token_alone_is_the_whole_passs_first_token_for_less_arithmetic(
    tiny_encoder: SentenceEncoder,
) -> None:
    """What a cross-encoder's classifier reads: the last layer computed for each row's first token."""
    features, _ = _reference(tiny_encoder)
    fast = FastBert(tiny_encoder.transformer.model, torch.float32)
    ids, mask = features["input_ids"], features["attention_mask"]
    with FlopCounterMode(display=False) as whole_counted:
        whole = fast(ids, mask)  # (batch, seq, hidden)
    with FlopCounterMode(display=False) as first_counted:
        first = fast(ids, mask, first_token=True)  # (batch, 1, hidden)
    assert first.shape == (ids.shape[0], 1, whole.shape[-1])
    torch.testing.assert_close(first, whole[:, :1], atol=1e-5, rtol=0)
    config = tiny_encoder.transformer.model.config
    feed_forward = 2 * 2 * config.hidden_size * config.intermediate_size  # FLOPs a token
    saved = whole_counted.get_total_flops() - first_counted.get_total_flops()
    assert saved >= ids.shape[0] * (ids.shape[1] - 1) * feed_forward
