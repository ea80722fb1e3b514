"""Why sbert has no int8 precision on CPUs without AMX: int8 linear layers against bf16 in PyTorch.

One MiniLM feed-forward product (1024 tokens × 384 → 1536), timed as bf16 ``F.linear``, as
``torch._int_mm`` (int8 × int8 → int32) and as ``quantized::linear`` on each quantized engine, with
and without the quantize / dequantize steps a static-int8 layer needs. Medians of alternating repeats.

    flock /tmp/sbert-heavy.lock python benchmarks/int8_matmul.py
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    tokens, hidden, out = 1024, 384, 1536
    x, weight, bias = torch.randn(tokens, hidden), torch.randn(out, hidden), torch.randn(out)
    x16, weight16 = x.bfloat16(), weight.bfloat16()
    x8 = torch.randint(-127, 127, (tokens, hidden), dtype=torch.int8)
    weight8 = torch.randint(-127, 127, (hidden, out), dtype=torch.int8)
    cases: dict[str, Callable[[], object]] = {
        "bf16 F.linear": lambda: F.linear(x16, weight16),
        "torch._int_mm": lambda: torch._int_mm(x8, weight8),
    }
    for engine in torch.backends.quantized.supported_engines:
        if engine == "qnnpack":
            continue
        torch.backends.quantized.engine = engine
        scales = weight.abs().amax(1) / 127
        qweight = torch.quantize_per_channel(
            weight, scales, torch.zeros(out, dtype=torch.long), 0, torch.qint8
        )
        packed = torch.ops.quantized.linear_prepack(qweight, bias)
        qx = torch.quantize_per_tensor(x, 0.05, 128, torch.quint8)
        cases[f"quantized::linear ({engine})"] = _engine(
            engine, lambda p=packed, q=qx: torch.ops.quantized.linear(q, p, 0.1, 128)
        )
        cases[f"quantize + quantized::linear + dequantize ({engine})"] = _engine(
            engine,
            lambda p=packed: torch.ops.quantized.linear(
                torch.quantize_per_tensor(x, 0.05, 128, torch.quint8), p, 0.1, 128
            ).dequantize(),
        )
    times: dict[str, list[float]] = {name: [] for name in cases}
    for run in cases.values():
        run()
    for _ in range(args.repeats):
        for name, run in cases.items():
            start = time.perf_counter()
            for _ in range(10):
                run()
            times[name].append((time.perf_counter() - start) / 10 * 1e3)
    reference = statistics.median(times["bf16 F.linear"])
    print(f"{tokens}×{hidden} → {out}, {args.threads} threads, median of {args.repeats}")
    for name, values in times.items():
        print(
            f"  {name:<55} {statistics.median(values):7.2f} ms  ({statistics.median(values) / reference:.2f}× bf16)"
        )


def _engine(engine: str, run: Callable[[], object]) -> Callable[[], object]:
    def with_engine() -> object:
        torch.backends.quantized.engine = engine
        return run()

    return with_engine


if __name__ == "__main__":
    main()
