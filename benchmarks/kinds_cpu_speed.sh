#!/bin/bash
# Issue 52's and 54's CPU speed checks in one sitting: the dense default against sentence-transformers,
# the cross-encoder's default against theirs, the sparse encoder against theirs (each alternating in
# one process, median of 5), and dense encode() of this checkout against an older one (revisions.py).
# Usage: flock /tmp/sbert-heavy.lock benchmarks/kinds_cpu_speed.sh OLD_CHECKOUT DATA_DIR OUT_DIR
# e.g.  git worktree add /tmp/sbert-old 89f7d61
#       flock /tmp/sbert-heavy.lock benchmarks/kinds_cpu_speed.sh /tmp/sbert-old ../shared/data benchmarks/results
# Writes OUT_DIR/{encode_vs_st_default,cross_encoder_speed_default,sparse_speed_default,revisions}.json,
# each with its date, CPU and load average; the lines printed between sections give the load too.
set -euo pipefail
old=$(realpath "$1") data=$(realpath "$2") out=$(realpath "$3")
python=${PYTHON:-python}
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD/src HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
stamp() { echo "=== $1 $(date -u '+%F %T UTC') load average: $(cut -d' ' -f1-3 /proc/loadavg)"; }
stamp dense
(cd benchmarks && "$python" encode_vs_sentence_transformers.py --data-dir "$data" --repeats 5 \
  --precision auto --backend auto --output "$out/encode_vs_st_default.json")
stamp cross-encoder  # on the AVX2 class the default, its AVX2-class copy and float32 are one plan
(cd benchmarks && "$python" cross_encoder_speed.py --data-dir "$data" --repeats 5 \
  --sides "sbert default" --output "$out/cross_encoder_speed_default.json")
stamp sparse
(cd benchmarks && "$python" sparse_speed.py --data-dir "$data" --repeats 5 --threads 2 \
  --output "$out/sparse_speed_default.json")
stamp revisions
"$python" benchmarks/revisions.py --old "$old" --new . --data-dir "$data" --repeats 5 --passes 1 \
  --output "$out/revisions.json"
stamp end
