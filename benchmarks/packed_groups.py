"""Prototype: sentences packed into rows without padding, for a server's small merged batches.

Not used by sbert yet. Several sentences share one row: position ids restart at each sentence, and a
block-diagonal 4D attention mask (transformers takes a 4D mask as it is) keeps every sentence to
itself, so each vector is the one ``encode()`` gives (checked: max abs difference printed first).
The packed graph is converted to OpenVINO float32 like the encoder's own; sentences go longest
first to the row with the fewest tokens, one row per inference stream. It then encodes 1,024 STSb
test sentences in groups of 16, 32 and 64 (what ``sbert serve`` merges at that concurrency) against
one ``encode()`` of all 1,024, alternating, median of 3; compare with the padded groups of
``benchmarks/batch_cost.py``.

    flock /tmp/sbert-heavy.lock python benchmarks/packed_groups.py --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import statistics
import warnings

import numpy as np
import torch
from torch import nn

from alternating import alternating_rates
from sbert import SentenceEncoder
from sbert.data import read_stsb
from sbert.inference.openvino_runtime import import_openvino


class Packed(nn.Module):
    """(rows, T) token ids, position ids and segment ids → (rows, T, hidden) token vectors."""

    def __init__(self, bert: nn.Module) -> None:
        super().__init__()
        self.bert = bert

    def forward(
        self, input_ids: torch.Tensor, position_ids: torch.Tensor, segment_ids: torch.Tensor
    ) -> torch.Tensor:
        same = segment_ids[:, :, None] == segment_ids[:, None, :]  # (rows, T, T)
        mask = torch.where(same, 0.0, torch.finfo(torch.float32).min)[:, None]  # (rows, 1, T, T)
        out = self.bert(
            input_ids=input_ids,
            attention_mask=mask,
            position_ids=position_ids,
            token_type_ids=torch.zeros_like(input_ids),
        )
        return out.last_hidden_state


def compile_packed(model: SentenceEncoder) -> list:
    from openvino.frontend.pytorch.ts_decoder import TorchScriptPythonDecoder

    ov = import_openvino()
    example = {
        "input_ids": torch.tensor([[101, 2000, 102, 101, 102]]),
        "position_ids": torch.tensor([[0, 1, 2, 0, 1]]),
        "segment_ids": torch.tensor([[1, 1, 1, 2, 2]]),
    }
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        decoder = TorchScriptPythonDecoder(
            Packed(model.transformer.model).eval(), example_input=example, trace_kwargs={"check_trace": False}
        )
        graph = ov.convert_model(decoder, input=[(name, [-1, -1], ov.Type.i64) for name in example])
    config = {"INFERENCE_NUM_THREADS": 2, "PERFORMANCE_HINT": "THROUGHPUT", "INFERENCE_PRECISION_HINT": "f32"}
    compiled = ov.Core().compile_model(graph, "CPU", config)
    return [
        compiled.create_infer_request()
        for _ in range(int(compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")))
    ]


def packed_encode(model: SentenceEncoder, requests: list, texts: list[str]) -> np.ndarray:
    """Unit vectors of mean-pooled texts (the bundled model's pipeline), one packed row per request."""
    ids = model.tokenize(texts).ids
    rows: list[list[int]] = [[] for _ in requests]
    load = [0] * len(requests)
    for i in sorted(range(len(ids)), key=lambda i: -len(ids[i])):
        row = load.index(min(load))
        rows[row].append(i)
        load[row] += len(ids[i])
    out = np.empty((len(ids), model.dim), np.float32)
    for request, members, length in zip(requests, rows, load):
        if members:
            feeds = {
                name: np.zeros((1, length), np.int64) for name in ("input_ids", "position_ids", "segment_ids")
            }
            at = 0
            for segment, i in enumerate(members, start=1):
                n = len(ids[i])
                feeds["input_ids"][0, at : at + n] = ids[i]
                feeds["position_ids"][0, at : at + n] = np.arange(n)
                feeds["segment_ids"][0, at : at + n] = segment
                at += n
            request.start_async(feeds)
    for request, members in zip(requests, rows):
        if members:
            request.wait()
            tokens, at = request.get_output_tensor(0).data[0], 0  # (T, hidden)
            for i in members:
                out[i] = tokens[at : at + len(ids[i])].mean(0)
                at += len(ids[i])
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="data directory (default: $SBERT_DATA)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    model = SentenceEncoder.from_pretrained()
    pairs = read_stsb("test", args.data_dir)
    sentences = ([p.sentence1 for p in pairs] + [p.sentence2 for p in pairs])[:1024]
    requests = compile_packed(model)
    difference = np.abs(packed_encode(model, requests, sentences[:64]) - model.encode(sentences[:64])).max()
    print(f"max abs difference, packed vs encode(): {difference:.1e}")

    def in_groups(group: int) -> None:
        for start in range(0, len(sentences), group):
            packed_encode(model, requests, sentences[start : start + group])

    runners = {"encode(1024)": lambda: model.encode(sentences, show_progress_bar=False)}
    runners.update({f"packed groups of {g}": (lambda g=g: in_groups(g)) for g in (16, 32, 64)})
    rates = alternating_rates(runners, args.repeats, len(sentences))
    direct = statistics.median(rates["encode(1024)"])
    for name, values in rates.items():
        print(
            f"{name}: {statistics.median(values):.0f} sentences/s, {statistics.median(values) / direct:.2f}×"
        )


if __name__ == "__main__":
    main()
