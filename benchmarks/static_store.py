"""A million sentences into an embedding store with a static model: wall time and peak memory.

The input is made from the local SNLI sentences (``snli_senteval/s1.*``, ``s2.*``, dev and test):
the distinct sentences in order, then again with the last word of another sentence appended, and so
on until ``--rows`` lines, so that no two lines are alike. Then ``sbert encode INPUT --model MODEL
--output STORE/`` runs under ``/usr/bin/time -v`` (wall time, peak resident memory of the process),
the store is opened and checked (rows, dimension), and the figures are printed and, with
``--output``, written as JSON.

    flock /tmp/sbert-heavy.lock python benchmarks/static_store.py --model static-256 --rows 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from encode_speed import cpu_name


def snli_sentences(data: Path) -> list[str]:
    """The distinct SNLI sentences of the shared data, in file order."""
    seen: dict[str, None] = {}
    for part in ("s1.dev", "s2.dev", "s1.test", "s2.test"):
        for line in (data / "snli_senteval" / part).read_text(encoding="utf-8").splitlines():
            if line.strip():
                seen.setdefault(line.strip())
    return list(seen)


def write_input(path: Path, base: list[str], rows: int) -> None:
    """``rows`` distinct lines: pass 0 is ``base``; pass k appends a word of the sentence k places on."""
    with path.open("w", encoding="utf-8") as out:
        for row in range(rows):
            round_, index = divmod(row, len(base))
            text = base[index]
            if round_:
                text = f"{text} {base[(index + round_) % len(base)].split()[-1]}"
            out.write(text + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="static model directory (sbert distill static)")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--data-dir", default=os.environ.get("SBERT_DATA", "../shared/data"))
    parser.add_argument("--workdir", default=None, help="scratch folder (default: a new temporary one)")
    parser.add_argument("--output", default=None, help="also write the figures to this JSON file")
    args = parser.parse_args()

    work = Path(args.workdir or tempfile.mkdtemp(prefix="static-store-"))
    work.mkdir(parents=True, exist_ok=True)
    corpus, store = work / "corpus.txt", work / "store"
    write_input(corpus, snli_sentences(Path(args.data_dir)), args.rows)
    shutil.rmtree(store, ignore_errors=True)
    command = [
        "sbert",
        "encode",
        str(corpus),
        "--model",
        args.model,
        "--output",
        f"{store}/",
        "--no-progress",
    ]
    done = subprocess.run(["/usr/bin/time", "-v", *command], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{done.stderr}")
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", done.stderr)
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    assert wall and peak, done.stderr
    seconds = int(wall[1] or 0) * 3600 + int(wall[2]) * 60 + float(wall[3])

    from sbert.store import EmbeddingStore

    opened = EmbeddingStore.open(store)
    assert len(opened) == args.rows, (len(opened), args.rows)
    size = sum(f.stat().st_size for f in store.iterdir())
    result = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "load_average_1min_after": os.getloadavg()[0],
        "command": " ".join(command),
        "rows": args.rows,
        "dim": opened.dim,
        "seconds": round(seconds, 1),
        "rows_per_second": round(args.rows / seconds),
        "peak_rss_mib": round(int(peak[1]) / 1024),
        "store_mib": round(size / 2**20),
    }
    print(json.dumps(result, indent=2))
    if args.output:
        Path(args.output).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
