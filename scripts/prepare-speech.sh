#!/usr/bin/env bash
# Builds the offline speech corpus under data/speech (docs/speech.md,
# "Corpus") and the real recordings' manifests beside it (real*.tsv,
# scripts/speech/real_speech.py): installs the voices, text and recordings
# it needs, then runs scripts/speech/make_corpus.py, which resumes where an
# earlier run stopped.
#   scripts/prepare-speech.sh [--hours 20] [--valid-hours 0.5] [-j N] [--out data/speech]
set -euo pipefail
cd "$(dirname "$0")/.."
# The voices, text and tools, with lt's own build dependencies (setup.sh
# installs only what is missing).
scripts/setup.sh python3 flite espeak-ng festival festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts sox libsox-fmt-all pocketsphinx pocketsphinx-en-us pocketsphinx-testdata \
  asterisk-core-sounds-en asterisk-core-sounds-en-wav asterisk-core-sounds-en-g722 ffmpeg klettres-data \
  wordnet-base fortunes bible-kjv
exec python3 scripts/speech/make_corpus.py "$@"
