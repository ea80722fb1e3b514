#!/bin/bash
# A cold `sbert encode` of the 3-line corpus of startup.py, two source trees alternating on the same
# machine load (a before/after comparison): each line is "<cpu> <src> <wall s> <user s> <sys s>".
# Usage: benchmarks/startup_ab.sh BEFORE_SRC AFTER_SRC [RUNS]  (run under flock /tmp/sbert-heavy.lock)
# Runs natively, then as an AVX2-only CPU (SBERT_SIMULATE_CPU=avx2: the float32 plan); each tree
# encodes once first, so its graph cache and cold-start entry are filled.
set -euo pipefail
before=$1 after=$2 runs=${3:-5}
python=${PYTHON:-python}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
corpus=$(mktemp --suffix .txt)
printf 'A man is playing a guitar.\nThe rocket launched the satellite.\nSomeone plays an instrument.\n' > "$corpus"
for cpu in "" avx2; do
  for src in "$before" "$after"; do
    SBERT_SIMULATE_CPU=$cpu PYTHONPATH=$src "$python" -m sbert encode "$corpus" -o "$corpus.npy" 2>/dev/null
  done
  for _ in $(seq "$runs"); do
    for src in "$before" "$after"; do
      SBERT_SIMULATE_CPU=$cpu PYTHONPATH=$src /usr/bin/time -f "${cpu:-native} $src %e %U %S" \
        "$python" -m sbert encode "$corpus" -o "$corpus.npy" 2>&1 | grep -v '^wrote'
    done
  done
done
uptime
rm -f "$corpus" "$corpus.npy"
