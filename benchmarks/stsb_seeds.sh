#!/usr/bin/env bash
# Fine-tune the bundled all-MiniLM-L6-v2 on STSb with the paper's hyper-parameters (regression
# objective, 4 epochs, batch 16, lr 2e-5, 10% warm-up) for several seeds, then print the STSb test
# Spearman mean ± std. Each run holds the shared heavy-job lock.
#
#   SBERT_DATA=../shared/data bash benchmarks/stsb_seeds.sh OUT_DIR [SEED ...] [-- extra train args]
#   e.g. bash benchmarks/stsb_seeds.sh /tmp/stsb-seeds 1 2 3 -- --bf16
# SBERT_LOCK= (empty) runs without taking the lock, for a caller that already holds it.
set -euo pipefail
lock=${SBERT_LOCK-flock /tmp/sbert-heavy.lock}
out=${1:?usage: stsb_seeds.sh OUT_DIR [SEED ...] [-- extra args]}
shift
seeds=()
while [[ $# -gt 0 && $1 != "--" ]]; do seeds+=("$1"); shift; done
[[ $# -gt 0 ]] && shift
[[ ${#seeds[@]} -eq 0 ]] && seeds=(1 2 3)
for seed in "${seeds[@]}"; do
    $lock env PYTHONPATH="${PYTHONPATH:-src}" python -m sbert train stsb \
        --output "$out/seed-$seed" --seed "$seed" --eval-steps 0 --no-progress "$@"
done
python - "$out" "${seeds[@]}" <<'PY'
import json, statistics, sys
out, seeds = sys.argv[1], sys.argv[2:]
scores = [json.load(open(f"{out}/seed-{s}/results.json"))["stsb_test_spearman_cosine"] for s in seeds]
std = statistics.stdev(scores) if len(scores) > 1 else 0.0
print(f"STSb test Spearman x100 over seeds {seeds}: {statistics.mean(scores):.2f} ± {std:.2f} ({', '.join(f'{s:.2f}' for s in scores)})")
PY
