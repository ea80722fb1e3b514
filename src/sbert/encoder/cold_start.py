"""A cold ``sbert encode`` without building the PyTorch model: the OpenVINO graph the graph cache
already holds for the model's files, run straight from the Rust tokenizer.

Of a cold 3-line ``sbert encode`` (6.8 s on AMD EPYC, 2 cores), 2.1 s was importing transformers'
model classes and 0.2 s building the PyTorch BERT, only to trace a graph already on disk and probe
it. When an earlier command encoded with this model's files, this plan and this machine, it left an
*entry* (:func:`record`) naming the graph it ran and what the run needs besides (the configured
tokenizer, the padding id, whether a Normalize layer follows). A later command finds that entry
(:func:`encode`) and runs the same checksum-verified graph, compiled with the same settings, on the
same batches: the same vectors, without transformers' model classes.

The entry's key is the SHA-256 of every file in the model folder, symbolic links followed (0.14 s
for all-MiniLM-L6-v2's 90 MB; a size and mtime could miss a weight file rewritten in place), the request (precision,
backend, device, batch size, token cap), the CPU's capabilities, the thread count and the library
versions. Any change gives another key, so a stale entry is never found: the full path runs and
records a new one. The probe of the graph against PyTorch is not run again: the entry is written
only after the full path built an engine from these very files, which probed this graph
(:class:`~sbert.inference.openvino.engine.OpenVinoEngine` always does), and the graph's bytes are
checked against their SHA-256 before they are read. torch is still imported (1.1 s): the vectors
are normalized by the very function the full path uses, so they are identical, not merely close.

Only what the full path would do identically is taken: a local model with a transformer, its pooling
and at most a Normalize layer, no prompt, float32 or bf16 on OpenVINO, on the CPU, without a
progress bar. Anything else, or any doubt (an entry unreadable or not matching the SHA-256 written
with it, the graph gone or altered, a vector not finite), runs the full path, which writes the entry
again. ``SBERT_CACHE_DIR=off`` turns this off with the graph cache.
Entries lie in the cache's ``openvino-by-files/`` folder, the :data:`MAX_ENTRIES` most recent kept.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sbert.inference.cpu import this_cpu
from sbert.inference.openvino import graph_cache

if TYPE_CHECKING:
    import torch

    from sbert.encoder.model import SentenceEncoder

logger = logging.getLogger("sbert")

ENTRY_FOLDER = "openvino-by-files"
MAX_ENTRIES = 32
# Hashing runs at about 0.65 GB/s here; past this a cold start gains less than the hash costs.
MAX_HASHED_BYTES = 1 << 30
_PRECISIONS = ("float32", "bfloat16")  # the plain graph's; calibrated ones are not entered
_FORMAT = 2  # 2: entries carry their SHA-256


@dataclass(frozen=True)
class ColdRequest:
    """What a command asked for that decides the plan and the batches (the model as resolved)."""

    model_path: str
    precision: str
    backend: str
    device: str | None
    batch_size: int
    max_tokens: int | None


def files_digest(folder: Path) -> str | None:
    """SHA-256 of every file's relative path and bytes under ``folder``, symbolic links followed
    (a ``1_Pooling/`` linked from elsewhere is part of the model); ``None`` when they are more than
    :data:`MAX_HASHED_BYTES`, cannot be read, or a link leads to a folder met before (a cycle)."""
    digest = hashlib.sha256()
    try:
        files = _files_following_links(folder)
        if files is None:
            return None
        if sum(path.stat().st_size for path in files) > MAX_HASHED_BYTES:
            return None
        for path in files:
            name = json.dumps([str(path.relative_to(folder)), path.stat().st_size])
            digest.update(name.encode("utf-8"))  # with the size: no two folders hash alike
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def _files_following_links(folder: Path) -> list[Path] | None:
    """Every file under ``folder``, sorted, linked folders walked into; ``None`` when a folder is
    reached twice (a link cycle, or one folder linked twice: no shortcut where that is unclear)."""
    seen: set[str] = set()
    files: list[Path] = []
    for root, _, names in os.walk(folder, onerror=_raise, followlinks=True):
        real = os.path.realpath(root)
        if real in seen:
            return None
        seen.add(real)
        files.extend(Path(root, name) for name in names)
    return sorted(files)


def _raise(error: OSError) -> None:
    raise error  # an unreadable sub-folder: no digest, rather than one that leaves it out


def _entry_path(request: ColdRequest, threads: int, existing: bool = False) -> Path | None:
    """The entry's file: ``<request key>-<files key>.json``. ``existing``: ``None`` without hashing
    the model's files when no entry for this request exists (a model that never has one, a static
    or a Router model, pays nothing)."""
    root = graph_cache.cache_dir()
    if root is None:
        return None
    described = {
        "format": _FORMAT,
        "request": asdict(request),
        "cpu": asdict(this_cpu()),
        "threads": threads,
        "versions": graph_cache._versions(),
    }
    prefix = _sha256(json.dumps(described, sort_keys=True))[:32]
    folder = root / ENTRY_FOLDER
    if existing and not any(folder.glob(f"{prefix}-*.json")):
        return None
    digest = files_digest(Path(request.model_path))
    return None if digest is None else folder / f"{prefix}-{_sha256(prefix + digest)}.json"


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def record(model: SentenceEncoder, request: ColdRequest) -> None:
    """After the full path encoded with ``model`` as loaded for ``request``, enter the graph it ran
    (when :func:`encode` can run it identically); a cache that cannot be written is left alone."""
    import torch

    entry = _entry_of(model, request)
    path = None if entry is None else _entry_path(request, torch.get_num_threads())
    if entry is None or path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        staging = path.with_name(f".{path.name}.{os.getpid()}")
        staging.write_text(json.dumps(_sealed(entry)), encoding="utf-8")
        os.replace(staging, path)  # readers see a whole entry or none
        entries = sorted(path.parent.glob("*.json"), key=os.path.getmtime)
        for old in entries[:-MAX_ENTRIES]:
            old.unlink(missing_ok=True)
    except OSError as error:
        logger.debug("cold-start entry not written (%s)", error)


def _entry_of(model: SentenceEncoder, request: ColdRequest) -> dict[str, Any] | None:
    """What :func:`encode` needs to run ``model``'s graph, or ``None`` where it would not run it
    as ``model.encode`` did."""
    from sbert.encoder.model import SentenceEncoder
    from sbert.modules import Normalize, Transformer

    transformer = model.input_module
    if type(model) is not SentenceEncoder or not isinstance(transformer, Transformer):
        return None  # a Router or a static model
    plan = model.plan
    engine = model.runners.openvino.get(plan.precision)
    plain = (
        plan.backend == "openvino"
        and plan.precision in _PRECISIONS
        and model.device.type == "cpu"
        and model.source == request.model_path
        and model.prompts.default_name is None
        and model.truncate_dim is None
        and all(isinstance(layer, Normalize) for layer in model.layers)
        and len(model.layers) <= 1
    )
    if not plain or engine is None or engine.graph_key is None:
        return None
    if not engine.weights.holds(transformer.model):  # weights changed since: not the files'
        return None
    batch_tokenizer = transformer._batch_tokenizer(transformer.max_seq_length)
    if batch_tokenizer is None:
        return None
    return {
        "graph": engine.graph_key,
        "precision": plan.precision,
        "native_bf16": engine.native_bf16,
        "tokenizer": batch_tokenizer.backend.to_str(),
        "split_special_tokens": bool(batch_tokenizer.backend.encode_special_tokens),
        "max_seq_length": transformer.max_seq_length,
        "pad_token_id": transformer.tokenizer.pad_token_id or 0,
        "normalize": len(model.layers) == 1,
        "dim": engine.dim,
    }


def encode(request: ColdRequest, texts: Sequence[str]) -> torch.Tensor | None:
    """The vectors (n, dim) ``model.encode(texts)`` gives for ``request``, from an entry
    :func:`record` left, or ``None`` when there is none to trust (then run the full path)."""
    import torch

    if request.device is None and torch.cuda.is_available():
        return None  # the full path would run on the GPU
    path = _entry_path(request, torch.get_num_threads(), existing=True)
    try:
        stored = None if path is None else json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    entry = _unsealed(stored)
    if entry is None:  # altered since written: the full path runs and writes it again
        logger.debug("cold-start entry %s does not match its SHA-256: not used", path)
        return None
    try:
        return _run_entry(entry, request, texts, torch.get_num_threads())
    except Exception as error:  # any doubt: the full path, which reports real errors itself
        logger.debug("cold start not taken (%s: %s)", type(error).__name__, error)
        return None


def _sealed(entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` with the SHA-256 of its canonical JSON: the tokenizer copy it holds is checked
    before use, as the graph's files are (one flipped bit in it can still be valid JSON)."""
    return {"entry": entry, "sha256": _sha256(json.dumps(entry, sort_keys=True))}


def _unsealed(stored: Any) -> dict[str, Any] | None:
    """The entry :func:`_sealed` wrapped, or ``None`` when it is not that or its SHA-256 differs.

    Examples:
        >>> _unsealed(_sealed({"dim": 8}))
        {'dim': 8}
        >>> _unsealed({"entry": {"dim": 9}, "sha256": _sealed({"dim": 8})["sha256"]}) is None
        True
    """
    if not isinstance(stored, dict) or not isinstance(stored.get("entry"), dict):
        return None
    entry: dict[str, Any] = stored["entry"]
    return entry if stored.get("sha256") == _sha256(json.dumps(entry, sort_keys=True)) else None


def _run_entry(
    entry: dict[str, Any], request: ColdRequest, texts: Sequence[str], threads: int
) -> torch.Tensor | None:
    import torch
    from tokenizers import Tokenizer

    from sbert.base.batching import length_sorted_batches
    from sbert.inference.openvino.runtime import compile_config, import_openvino, keep_signal_stack

    ov = import_openvino()  # before the graph cache imports it: telemetry stays off
    with keep_signal_stack():
        graph = graph_cache.read_stored(str(entry["graph"]))
        if graph is None:
            return None
        config = compile_config(entry["precision"], bool(entry["native_bf16"]), threads)
        compiled = ov.Core().compile_model(graph, "CPU", config)
        requests = [
            compiled.create_infer_request()
            for _ in range(int(compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")))
        ]
        ids, truncated = _token_ids(Tokenizer.from_str(entry["tokenizer"]), entry, texts)
        lengths = [len(row) for row in ids]
        batches = length_sorted_batches(lengths, request.batch_size, request.max_tokens, None)
        pooled = _run(requests, ids, batches, int(entry["pad_token_id"]), int(entry["dim"]))
    if not np.isfinite(pooled).all():
        return None  # the full path says which plan gave what
    if truncated:  # the full path's warning, word for word
        logger.warning(
            "%d of %d inputs were longer than max_seq_length=%d tokens and were truncated",
            truncated,
            len(texts),
            entry["max_seq_length"],
        )
    embeddings = torch.from_numpy(pooled)
    if entry["normalize"]:  # the Normalize layer's own function: the same bits as the full path
        with torch.inference_mode():
            embeddings = torch.nn.functional.normalize(embeddings, p=2, dim=1)
    return embeddings.float().cpu()


def _token_ids(tokenizer: Any, entry: dict[str, Any], texts: Sequence[str]) -> tuple[list[list[int]], int]:
    """Ids as :class:`~sbert.modules.batch_tokenizer.BatchTokenizer` gives them: the entry's copy
    is that tokenizer's backend, truncation included."""
    from sbert.base.inputs import tokenized

    tokenizer.encode_special_tokens = bool(entry["split_special_tokens"])
    # do_lower_case: the copy's own normalizer lowers, as the model's does
    encode_batch = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)
    # lone surrogates replaced, as SentenceEncoder.token_ids replaces them
    encodings = tokenized(lambda batch: encode_batch(batch, add_special_tokens=True), texts)
    return [encoding.ids for encoding in encodings], sum(1 for e in encodings if e.overflowing)


def _run(
    requests: list[Any], ids: list[list[int]], batches: Sequence[np.ndarray], pad: int, dim: int
) -> np.ndarray:
    """Pooled vectors (n, dim) of padded batches, one in flight per request (a batch's vectors do
    not depend on which request runs it)."""
    out = np.empty((len(ids), dim), dtype=np.float32)
    running: list[Any] = [None] * len(requests)
    for number, batch in enumerate(batches):
        slot = number % len(requests)
        _collect(requests[slot], running[slot], out)
        requests[slot].start_async(_feeds([ids[i] for i in batch], pad))
        running[slot] = batch
    for request, rows in zip(requests, running):
        _collect(request, rows, out)
    return out


def _collect(request: Any, rows: Any, out: np.ndarray) -> None:
    if rows is not None:
        request.wait()
        out[rows] = request.get_output_tensor(0).data


def _feeds(batch_ids: Sequence[Sequence[int]], pad: int) -> dict[str, np.ndarray]:
    """``input_ids`` and ``attention_mask`` (batch, longest), as Transformer.collate pads them."""
    lengths = np.fromiter(map(len, batch_ids), dtype=np.int64, count=len(batch_ids))
    mask = np.arange(lengths.max()) < lengths[:, None]
    input_ids = np.full(mask.shape, pad, dtype=np.int64)
    input_ids[mask] = np.concatenate([np.asarray(row, dtype=np.int64) for row in batch_ids])
    return {"input_ids": input_ids, "attention_mask": mask.astype(np.int64)}
