#!/usr/bin/env bash
# Builds the offline speech corpus under data/speech (docs/speech.md,
# "Corpus"): installs the voices and text packages it needs, then runs
# scripts/speech/make_corpus.py, which resumes where an earlier run stopped.
#   scripts/prepare-speech.sh [--hours 20] [--valid-hours 0.5] [-j N] [--out data/speech]
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(python3 flite espeak-ng festival festvox-kallpc16k sox libsox-fmt-all pocketsphinx-en-us
          wordnet-base fortunes bible-kjv)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "prepare-speech: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
exec python3 scripts/speech/make_corpus.py "$@"
