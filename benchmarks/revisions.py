"""Encoding speed of two checkouts of sbert in one run: did a change keep today's figures?

Each repeat starts one process per checkout, in alternating order; a process loads the bundled
all-MiniLM-L6-v2 at the default precision and backend, warms up, then times ``encode()`` of the STSb
test sentences (``--passes`` times), all in one call or, with ``--call-size N``, N a call (1: one
query a call, where a call's fixed costs show; ``--sentences`` then keeps the timing short). The
figure is sentences per second; the ratio NEW/OLD is taken per
repeat and its median reported, so a machine whose speed drifts hits both sides alike.

    git worktree add /tmp/sbert-old <old commit>
    flock /tmp/sbert-heavy.lock python benchmarks/revisions.py --old /tmp/sbert-old --new . \\
        --data-dir ../shared/data --repeats 5 --output benchmarks/results/revisions.json
    flock /tmp/sbert-heavy.lock python benchmarks/revisions.py --old /tmp/sbert-old --new . \
        --data-dir ../shared/data --call-size 1 --sentences 400 --output benchmarks/results/revisions_query.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from encode_speed import cpu_name

# Run inside each checkout's process: print {"rate": sentences per second, "plan": what ran}.
PROBE = """
import json, sys, time
from sbert import SentenceEncoder
from sbert.data import read_stsb
sentences = sorted({text for pair in read_stsb("test", sys.argv[1]) for text in (pair.sentence1, pair.sentence2)})
sentences = sentences[: int(sys.argv[4]) or None]
size = int(sys.argv[3]) or len(sentences)
calls = [sentences[i : i + size] for i in range(0, len(sentences), size)]
model = SentenceEncoder.from_pretrained()
model.encode(sentences[:256], show_progress_bar=False)
for call in calls[:20]:
    model.encode(call, show_progress_bar=False)
start = time.perf_counter()
for _ in range(int(sys.argv[2])):
    for call in calls:
        model.encode(call, show_progress_bar=False)
rate = int(sys.argv[2]) * len(sentences) / (time.perf_counter() - start)
print(json.dumps({"rate": rate, "plan": f"{model.precision} on {model.backend}"}))
"""


def measure(
    checkout: Path, data_dir: str, passes: int, call_size: int = 0, sentences: int = 0
) -> dict[str, object]:
    environment = os.environ | {
        "PYTHONPATH": str(checkout.resolve() / "src"),
        "TOKENIZERS_PARALLELISM": "false",
    }
    done = subprocess.run(
        [sys.executable, "-c", PROBE, data_dir, str(passes), str(call_size), str(sentences)],
        capture_output=True,
        text=True,
        env=environment,
        check=True,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def commit_of(checkout: Path) -> str:
    """The commit a checkout stands at (with ``+changes`` where its tracked files differ), or ``?``."""

    def git(*words: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", "-C", str(checkout), *words], capture_output=True, text=True)

    head = git("rev-parse", "--short", "HEAD")
    if head.returncode:
        return "?"
    dirty = git("diff", "--quiet", "HEAD", "--", "src").returncode
    return head.stdout.strip() + ("+changes" if dirty else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--old", type=Path, required=True, help="checkout before the change")
    parser.add_argument("--new", type=Path, default=Path("."), help="checkout after it (default: this one)")
    parser.add_argument("--data-dir", default=os.environ.get("SBERT_DATA", "../shared/data"))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--passes", type=int, default=2, help="encodes of the set per process")
    parser.add_argument("--call-size", type=int, default=0, help="sentences an encode() call (0: all)")
    parser.add_argument("--sentences", type=int, default=0, help="only the first N sentences (0: all)")
    parser.add_argument("--output", default=None, help="also write the figures to this JSON file")
    args = parser.parse_args()
    started, load_before = datetime.now(timezone.utc), os.getloadavg()
    rates: dict[str, list[float]] = {"old": [], "new": []}
    plans: dict[str, object] = {}
    for repeat in range(args.repeats):
        order = ("old", "new") if repeat % 2 == 0 else ("new", "old")
        for side in order:
            found = measure(getattr(args, side), args.data_dir, args.passes, args.call_size, args.sentences)
            rates[side].append(float(found["rate"]))  # type: ignore[arg-type]
            plans[side] = found["plan"]
    ratios = [new / old for new, old in zip(rates["new"], rates["old"])]
    print(f"CPU: {cpu_name()}; {args.repeats} repeats, alternating")
    for side in ("old", "new"):
        print(
            f"{side}: {statistics.median(rates[side]):.0f} sentences/s ({plans[side]}; {args.__dict__[side]})"
        )
    print(f"new/old: median {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})")
    if args.output:
        result = {
            "date": started.strftime("%Y-%m-%d %H:%M UTC"),
            "cpu": cpu_name(),
            "load_average_before_after": [load_before[0], os.getloadavg()[0]],
            "checkouts": {side: commit_of(getattr(args, side)) for side in ("old", "new")},
            "plans": plans,
            "passes": args.passes,
            "call_size": args.call_size or "all",
            "sentences": args.sentences or "all",
            "sentences_per_second": {side: statistics.median(values) for side, values in rates.items()},
            "rates": rates,
            "ratio_median": statistics.median(ratios),
            "ratios": ratios,
        }
        with open(args.output, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=2)


if __name__ == "__main__":
    main()
