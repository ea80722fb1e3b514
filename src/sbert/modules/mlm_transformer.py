"""MLM transformer: text → tokens → a score for every vocabulary word at every token (SPLADE's input).

A SPLADE model is a masked-language model (``BertForMaskedLM``...) whose head's logits
:class:`~sbert.modules.SpladePooling` turns into one weight per vocabulary word. sentence-transformers
6 saves it as its ``Transformer`` with ``"transformer_task": "fill-mask"`` in
``sentence_bert_config.json`` (5.x: the type ``sentence_transformers.sparse_encoder.models.MLMTransformer``);
sbert reads both and writes the first. The body (the encoder) and the head (hidden state → vocabulary
logits) are reachable apart, so that an engine can run the body on every token and the head over
real tokens only: ``head(body(...))`` is exactly the model's logits.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from torch import Tensor, nn
from transformers import AutoModelForMaskedLM, PretrainedConfig, PreTrainedModel

from sbert.base.errors import ModelLoadError
from sbert.modules.checks import check_loading_info
from sbert.modules.module import write_json
from sbert.modules.transformer import _MODEL_INPUTS, Transformer, quiet_transformers

# What sentence-transformers 6 writes beside max_seq_length for a fill-mask Transformer.
FILL_MASK_SETTINGS: dict[str, Any] = {
    "transformer_task": "fill-mask",
    "modality_config": {"text": {"method": "forward", "method_output_name": "logits"}},
    "module_output_name": "token_embeddings",
}


class MLMTransformer(Transformer):
    """A Hugging Face masked-language model with its tokenizer; :meth:`forward` gives token logits.

    Args:
        model: A ``*ForMaskedLM`` model of a family whose head sbert knows (BERT, RoBERTa,
            XLM-RoBERTa, CamemBERT, DistilBERT).
        tokenizer: Its fast tokenizer.
        max_seq_length: Longer inputs are truncated to this many tokens (special tokens included).
        do_lower_case: Lower-case text before tokenizing.

    Examples:
        >>> import torch
        >>> from transformers import BertConfig, BertForMaskedLM, PreTrainedTokenizerFast
        >>> from tokenizers import Tokenizer, models
        >>> vocab = {"[PAD]": 0, "[UNK]": 1, "rain": 2}
        >>> tokenizer = PreTrainedTokenizerFast(
        ...     tokenizer_object=Tokenizer(models.WordLevel(vocab, unk_token="[UNK]")), pad_token="[PAD]")
        >>> config = BertConfig(vocab_size=3, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
        ...                     intermediate_size=16)
        >>> mlm = MLMTransformer(BertForMaskedLM(config), tokenizer, max_seq_length=8)
        >>> features = mlm.collate([[2, 2]])
        >>> mlm(features).shape, mlm.dim                  # (batch, seq, vocab)
        (torch.Size([1, 2, 3]), 3)
    """

    st_type = "sentence_transformers.sparse_encoder.models.MLMTransformer"  # 5.x's type, still read
    written_type = "sentence_transformers.base.modules.transformer.Transformer"
    transformer_task = "fill-mask"

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: Any,
        max_seq_length: int | None = None,
        do_lower_case: bool = False,
    ) -> None:
        if _head_kind(model) is None:
            raise ModelLoadError(
                f"the masked-language model {type(model).__name__} has a head sbert does not run "
                f"(it runs those of {', '.join(sorted(_HEADS))})"
            )
        super().__init__(model, tokenizer, max_seq_length=max_seq_length, do_lower_case=do_lower_case)

    @classmethod
    def auto_class(cls, config: PretrainedConfig) -> Any:
        return AutoModelForMaskedLM

    @classmethod
    def build_model(cls, config: PretrainedConfig) -> PreTrainedModel:
        return AutoModelForMaskedLM.from_config(config)  # type: ignore[no-any-return]

    @classmethod
    def check_weights(cls, weights: Path, info: Mapping[str, Any], model: PreTrainedModel) -> None:
        """Refuse a file without the MLM head first: transformers would fill the head with random
        numbers (a folder saved from ``AutoModel`` holds the encoder alone), and every weight of
        every vector would be noise."""
        body = f"{model.base_model_prefix}."
        head = sorted(name for name in info.get("missing_keys", ()) if not name.startswith(body))
        if head:
            shown = ", ".join(head[:5]) + (f" and {len(head) - 5} more" if len(head) > 5 else "")
            raise ModelLoadError(
                f"{weights}: the masked-language-model head is not in the file ({shown}); transformers "
                "would fill it with random numbers. A SPLADE model needs the weights of its "
                "*ForMaskedLM head: this folder holds the encoder alone (saved from AutoModel?)."
            )
        check_loading_info(weights, info)

    @property
    def dim(self) -> int:
        """The width of the logits: the vocabulary size."""
        return int(self.model.config.vocab_size)

    @property
    def hidden_dim(self) -> int:
        """The width of the body's token vectors."""
        return int(self.model.config.hidden_size)

    @property
    def body(self) -> nn.Module:
        """The encoder without its head: ``body(input_ids, attention_mask, ...)`` gives
        ``last_hidden_state`` (batch, seq, hidden)."""
        return self.model.base_model

    @property
    def head(self) -> nn.Module:
        """The MLM head: token vectors (..., hidden) → vocabulary logits (..., vocab)."""
        kind = _head_kind(self.model)
        if kind == "distilbert":
            return _DistilBertHead(self.model)
        return getattr(self.model, str(kind))  # type: ignore[no-any-return]

    def forward(self, features: dict[str, Tensor]) -> Tensor:
        """Vocabulary logits of every token, (batch, seq, vocab): the head over the body's vectors."""
        inputs = {key: value for key, value in features.items() if key in _MODEL_INPUTS}
        hidden = self.body(**inputs, return_dict=True).last_hidden_state  # (batch, seq, hidden)
        return self.head(hidden)  # type: ignore[no-any-return]

    def config(self) -> dict[str, Any]:
        return {**FILL_MASK_SETTINGS, **super().config()}

    def save(self, folder: Path) -> None:
        """The ``*ForMaskedLM`` model (safetensors), its tokenizer and ``sentence_bert_config.json``
        with ``transformer_task: fill-mask`` (sentence-transformers 6's layout)."""
        with quiet_transformers():
            self.model.save_pretrained(folder, safe_serialization=True)
        self.tokenizer.save_pretrained(folder)
        write_json(folder / self.config_file_name, self.config())


# The attribute holding each family's head (DistilBERT's is four modules, wrapped).
_HEADS = {"cls": "BERT", "lm_head": "RoBERTa, XLM-RoBERTa, CamemBERT", "vocab_projector": "DistilBERT"}


def _head_kind(model: nn.Module) -> str | None:
    if isinstance(getattr(model, "cls", None), nn.Module):
        return "cls"
    if isinstance(getattr(model, "lm_head", None), nn.Module):
        return "lm_head"
    if all(hasattr(model, name) for name in ("vocab_transform", "vocab_layer_norm", "vocab_projector")):
        return "distilbert"
    return None


class _DistilBertHead(nn.Module):
    """DistilBERT's head as one module, as ``DistilBertForMaskedLM.forward`` runs it."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        names = ("vocab_transform", "activation", "vocab_layer_norm", "vocab_projector")
        self.parts: list[nn.Module] = [getattr(model, name) for name in names]

    def forward(self, hidden: Tensor) -> Tensor:
        for part in self.parts:
            hidden = part(hidden)
        return hidden
