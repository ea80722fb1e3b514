"""A tiny static model: the tiny BERT's tokenizer with a random token table."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from tokenizers import Tokenizer

from sbert.static import StaticEncoder


@pytest.fixture()
def static_model(tiny_model_dir: Path) -> StaticEncoder:
    tokenizer = Tokenizer.from_file(str(tiny_model_dir / "tokenizer.json"))
    generator = torch.Generator().manual_seed(0)
    table = torch.randn(tokenizer.get_vocab_size(), 8, generator=generator)
    return StaticEncoder(tokenizer, table, name="tiny-static")


@pytest.fixture()
def static_dir(static_model: StaticEncoder, tmp_path: Path) -> Path:
    path = tmp_path / "static"
    static_model.save(path)
    return path
