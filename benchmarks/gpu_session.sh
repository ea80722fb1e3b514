#!/usr/bin/env bash
# One lent GPU session's measurements, in two device calls made back to back on the warm machine
# (a session has 15 minutes of device time, the machine's start included; one call runs 10 at most):
#
#   benchmarks/gpu_session.sh encode   # issue 43: benchmarks/gpu.py, then tests/gpu     (≤ 400 s)
#   benchmarks/gpu_session.sh serve-train  # issue 47: gpu_serve.py, then gpu_train.py (≤ 290 s)
#   benchmarks/gpu_session.sh verify   # after a round of fixes, one call of ≤ 330 s: issue 47's
#                                      # done-means phases, then gpu.py but its tokenizing options, then tests/gpu
#
# Both read the ignored folders that the prepare steps fill here (docs/benchmarks.md#gpu):
#   SBERT_DATA=../shared/data PYTHONPATH=src python benchmarks/gpu.py --prepare .gpu-carry
#   SBERT_DATA=../shared/data PYTHONPATH=src python benchmarks/gpu_serve.py --prepare .gpu-carry
#   SBERT_DATA=../shared/data PYTHONPATH=src python benchmarks/gpu_train.py --prepare .gpu-carry --wheels .whl
# and write their JSON and logs under $OUT (the device tool's folder that comes back).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 PYTHONPATH=src
nvidia-smi -L | tee "$OUT/$1.log"

case "$1" in
encode)
    timeout 300 python3 benchmarks/gpu.py --carry .gpu-carry --budget-s 240 --output "$OUT/gpu.json" 2>&1 |
        tee -a "$OUT/$1.log"
    timeout 90 python3 -m pytest tests/gpu -q -m 'not integration' 2>&1 | tee "$OUT/tests.log"
    ;;
serve-train)
    # The serve extra and sentence-transformers' trainer need packages the GPU image lacks: their wheels travel.
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        .gpu-carry/wheels/*.whl .whl/*.whl || exit 1
    export PYTHONPATH=src:/tmp/site
    TOKENIZERS_PARALLELISM=false timeout 110 python3 benchmarks/gpu_serve.py --carry .gpu-carry --budget-s 75 \
        --output "$OUT/gpu_serve.json" 2>&1 | tee -a "$OUT/$1.log"
    timeout 160 python3 benchmarks/gpu_train.py --carry .gpu-carry --budget-s 100 --output "$OUT/gpu_train.json" 2>&1 |
        tee -a "$OUT/$1.log"
    ;;
verify)
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        .gpu-carry/wheels/*.whl .whl/*.whl || exit 1
    export PYTHONPATH=src:/tmp/site TOKENIZERS_PARALLELISM=false
    timeout 80 python3 benchmarks/gpu_train.py --carry .gpu-carry --section speed --batch 256 --repeats 2 \
        --section curves --output "$OUT/gpu_train.json" 2>&1 | grep -v -e Warning -e warmup_ratio | tee -a "$OUT/$1.log"
    timeout 50 python3 benchmarks/gpu_serve.py --carry .gpu-carry --phases 1x1,32x64 --budget-s 35 \
        --output "$OUT/gpu_serve.json" 2>&1 | tee -a "$OUT/$1.log"
    unset TOKENIZERS_PARALLELISM # gpu.py measures the pipeline both ways itself
    timeout 150 python3 benchmarks/gpu.py --carry .gpu-carry --sections oracle,speed,latency_one_query,limits \
        --budget-s 110 --output "$OUT/gpu.json" 2>&1 | tee -a "$OUT/$1.log"
    timeout 50 python3 -m pytest tests/gpu -q -m 'not integration' 2>&1 | tee "$OUT/tests.log"
    ;;
*)
    echo "usage: $0 encode|serve-train|verify" >&2
    exit 2
    ;;
esac
