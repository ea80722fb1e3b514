"""SparseStaticEmbedding: text → tokens → one stored weight per distinct token. No transformer runs.

The query side of an inference-free SPLADE model (sentence-transformers' ``SparseStaticEmbedding``):
a query's vector holds, for each vocabulary word it contains, that word's weight (an IDF-like
number learned or computed once), so queries cost a tokenizer call. The document side, a
:class:`~sbert.modules.MLMTransformer` with :class:`~sbert.modules.SpladePooling`, sits in the
other route of a :class:`~sbert.modules.Router`. The folder is sentence-transformers': the
tokenizer files, ``model.safetensors`` (``weight``, (vocab,)) and ``config.json`` (``frozen``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from torch import Tensor, nn

from sbert.base.errors import ModelLoadError
from sbert.base.files import read_json
from sbert.modules.module import Module, write_json
from sbert.modules.transformer import Tokenized, load_fast_tokenizer


class SparseStaticEmbedding(Module):
    """A tokenizer and a weight per vocabulary word; a text's vector is the weights of its words.

    Tokenized as sentence-transformers does: no special tokens, cut at the tokenizer's
    ``model_max_length``. A word counts once however often it occurs.

    Args:
        tokenizer: A fast Hugging Face tokenizer.
        weight: One weight per token id, shape (vocab,); ``None``: ones.
        frozen: Whether training leaves the weights as they are (saved, as sentence-transformers).

    Examples:
        >>> import torch
        >>> from tokenizers import Tokenizer, models, pre_tokenizers
        >>> from transformers import PreTrainedTokenizerFast
        >>> backend = Tokenizer(models.WordLevel({"[PAD]": 0, "[UNK]": 1, "rain": 2, "snow": 3}, unk_token="[UNK]"))
        >>> backend.pre_tokenizer = pre_tokenizers.Whitespace()
        >>> tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="[PAD]")
        >>> module = SparseStaticEmbedding(tokenizer, torch.tensor([0.0, 0.0, 2.0, 3.0]))
        >>> module(module.collate(module.tokenize(["rain rain snow"]).ids)).tolist()
        [[0.0, 0.0, 2.0, 3.0]]
    """

    st_type = "sentence_transformers.sparse_encoder.modules.sparse_static_embedding.SparseStaticEmbedding"
    config_keys = ("frozen",)
    pools = True  # one vector per text: no pooling after it

    def __init__(self, tokenizer: Any, weight: Tensor | None = None, frozen: bool = False) -> None:
        super().__init__()
        self.tokenizer = tokenizer
        if weight is None:
            weight = torch.ones(len(tokenizer.get_vocab()))
        weight = torch.as_tensor(weight, dtype=torch.float32)
        if weight.ndim != 1:
            raise ValueError(
                f"SparseStaticEmbedding needs one weight per token, shape (vocab,), got {tuple(weight.shape)}"
            )
        self.weight = nn.Parameter(weight, requires_grad=not frozen)
        self.frozen = frozen

    @property
    def dim(self) -> int:
        """The vocabulary size: the width of the vectors."""
        return int(self.weight.shape[0])

    @property
    def max_seq_length(self) -> int:
        """Texts are cut to this many tokens (the tokenizer's ``model_max_length``, as
        sentence-transformers)."""
        return int(min(self.tokenizer.model_max_length, 2**31 - 1))

    @max_seq_length.setter
    def max_seq_length(self, value: int) -> None:
        self.tokenizer.model_max_length = int(value)

    @classmethod
    def load(cls, folder: Path, **options: Any) -> SparseStaticEmbedding:
        """Read the tokenizer, ``model.safetensors`` (``weight``) and ``config.json`` (``frozen``).

        Raises:
            ModelLoadError: naming the file: no weights, no ``weight`` tensor, or fewer weights
                than the tokenizer has tokens.
        """
        tokenizer = load_fast_tokenizer(folder)
        weights_file = folder / "model.safetensors"
        if not weights_file.is_file():
            raise ModelLoadError(f"{weights_file}: missing; a SparseStaticEmbedding keeps its weights there")
        tensors = load_file(str(weights_file))
        if "weight" not in tensors:
            raise ModelLoadError(
                f"{weights_file}: no 'weight' tensor (found {', '.join(sorted(tensors)) or 'none'})"
            )
        weight = tensors["weight"].float()
        vocab = len(tokenizer.get_vocab())
        if weight.ndim != 1 or weight.shape[0] < vocab:
            raise ModelLoadError(
                f"{weights_file}: 'weight' has shape {tuple(weight.shape)}, expected ({vocab},): one weight per token"
            )
        config_file = folder / cls.config_file_name
        config = read_json(config_file) if config_file.is_file() else {}
        frozen = config.get("frozen", False)
        if not isinstance(frozen, bool):
            raise ModelLoadError(f"{config_file}: frozen is {frozen!r}; write true or false (JSON booleans)")
        return cls(tokenizer, weight, frozen=frozen)

    def save(self, folder: Path) -> None:
        """The tokenizer, ``model.safetensors`` and ``config.json`` (sentence-transformers' layout)."""
        self.tokenizer.save_pretrained(folder)
        save_file({"weight": self.weight.detach().cpu().contiguous()}, str(folder / "model.safetensors"))
        write_json(folder / self.config_file_name, self.config())

    def tokenize(self, texts: Sequence[str]) -> Tokenized:
        """Token ids without special tokens, cut at :attr:`max_seq_length`."""
        encoded = self.tokenizer(
            list(texts),
            add_special_tokens=False,
            truncation=True,
            max_length=self.max_seq_length,
            return_attention_mask=False,
            return_token_type_ids=False,
        )
        truncated = sum(1 for encoding in encoded.encodings if encoding.overflowing)
        return Tokenized(ids=encoded["input_ids"], truncated=truncated)

    def collate(self, batch_ids: Sequence[Sequence[int]]) -> dict[str, Tensor]:
        """``input_ids`` and ``attention_mask``, (batch, longest): each row padded to the longest."""
        longest = max((len(ids) for ids in batch_ids), default=0)
        input_ids = np.zeros((len(batch_ids), longest), dtype=np.int64)
        mask = np.zeros((len(batch_ids), longest), dtype=np.int64)
        for row, ids in enumerate(batch_ids):
            input_ids[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1
        return {"input_ids": torch.from_numpy(input_ids), "attention_mask": torch.from_numpy(mask)}

    def forward(self, features: dict[str, Tensor]) -> Tensor:
        """Vectors (batch, vocab): each present token's weight, others 0."""
        input_ids, mask = features["input_ids"], features["attention_mask"]  # (batch, seq) each
        present = torch.zeros(input_ids.shape[0], self.dim, dtype=torch.int64, device=input_ids.device)
        # amax over duplicates: a token counts once, and padding (mask 0) never switches one on
        present.scatter_reduce_(1, input_ids, mask.to(torch.int64), reduce="amax")
        return present * self.weight  # (batch, vocab)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, frozen={self.frozen}"
