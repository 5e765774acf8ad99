#!/usr/bin/env bash
# docker/milvus/compose.yml run for real: Milvus, two thoughtvec replicas on it and nginx in front,
# called through the balancer; one replica killed (kill -9) under load and restarted by Docker.
#
#   sudo docker/ci-smoke.sh docker/ci/balancer-run.sh     (.ci/run does this)
#
# It runs after the smoke test, on its engine and images (docker/ci-smoke.sh, "further scripts"):
# thoughtvec:milvus is built FROM the smoke test's thoughtvec:cpu, the Milvus stand-in on its
# python:3.11-slim stand-in, Debian's nginx on its debootstrapped base. The CI override
# (docker/ci/compose.milvus-ci.yml) puts everything on the host's network, on loopback ports picked
# here; the checks are docker/ci/balancer_client.py's. Everything it starts is removed on exit.
set -euo pipefail
cd "$(dirname "$0")/../.."
START=$SECONDS
: "${DOCKER:?run by docker/ci-smoke.sh}" "${WORK:?}" "${DOCKER_HOST:?}" "${SUITE:?}"
MODELS_DIR=${MODELS_DIR:-}

log() { printf '[balancer %4ds] %s\n' "$((SECONDS - START))" "$*"; }
die() { log "FAILED: $*" >&2; exit 1; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

RUN=$WORK/balancer
mkdir -p "$RUN"
export COMPOSE_PROJECT_NAME=tvbalancer
MILVUS_PORT=$(free_port) MILVUS_HTTP_PORT=$(free_port) REPLICA_A_PORT=$(free_port) REPLICA_B_PORT=$(free_port) BALANCER_PORT=$(free_port)
export MILVUS_PORT MILVUS_HTTP_PORT REPLICA_A_PORT REPLICA_B_PORT BALANCER_PORT NGINX_CONF=$RUN/nginx.conf
FILES=(-f docker/milvus/compose.yml -f docker/ci/compose.milvus-ci.yml)
# The replicas serve two bundles, not all of the image's: the default model (invertible-bijection,
# thoughtvec-build's) and a new index's (all-minilm-l6-v2), so that each start loads two models,
# not nine, and the kill and restart fit CI's time. BALANCER_BUNDLES=all serves the image's own.
BUNDLES=${BALANCER_BUNDLES:-invertible-bijection all-minilm-l6-v2}
if [[ -z $MODELS_DIR && $BUNDLES != all ]]; then
  mkdir -p "$RUN/models"
  for b in $BUNDLES; do
    [[ -f models/$b/bundle.json ]] || die "models/$b has no bundle (set BALANCER_BUNDLES)"
    cp -r "models/$b" "$RUN/models/"
  done
  chmod -R a+rX "$RUN/models"
  MODELS_DIR=$RUN/models
fi
if [[ -n $MODELS_DIR ]]; then  # those bundles, or the smoke test's tiny one where models/ has none
  printf 'services:\n' >"$RUN/compose.models.yml"
  for s in thoughtvec thoughtvec-2 thoughtvec-build; do
    printf '  %s:\n    volumes:\n      - %s:/models:ro\n' "$s" "$MODELS_DIR" >>"$RUN/compose.models.yml"
  done
  FILES+=(-f "$RUN/compose.models.yml")
fi
compose() { "$DOCKER" compose "${FILES[@]}" "$@"; }
within() { local seconds=$1; shift; timeout "$seconds" "$DOCKER" compose "${FILES[@]}" "$@"; }
client() { timeout "$1" python3 docker/ci/balancer_client.py "${@:2}" --port "$BALANCER_PORT" --state "$RUN/state.json"; }

LOAD_PID=""
teardown() {
  local rc=$?
  set +e
  trap - EXIT
  [[ -n $LOAD_PID ]] && kill "$LOAD_PID" 2>/dev/null
  if [[ $rc -ne 0 ]]; then
    log "container logs (last 40 lines each):"
    timeout 60 "$DOCKER" compose "${FILES[@]}" logs --no-color --tail 40 2>&1 | cut -c1-240 | sed 's/^/    /'
  fi
  timeout 120 "$DOCKER" compose "${FILES[@]}" --profile build down --volumes --remove-orphans --timeout 10 >/dev/null 2>&1
  log "removed its containers and volumes (exit $rc)"
  exit "$rc"
}
trap teardown EXIT

# ---- 1. images, on the smoke test's ---------------------------------------------------------
log "building thoughtvec:milvus (FROM thoughtvec:cpu), the Milvus 2.3.5 stand-in and Debian's nginx"
within 900 build --progress=plain standalone thoughtvec balancer >"$RUN/build.log" 2>&1 \
  || { tail -n 40 "$RUN/build.log"; die "compose build"; }
# (the stand-ins build on the smoke test's images: python:3.11-slim, thoughtvec-ci/debian:bookworm)
{ grep -E 'Successfully installed' "$RUN/build.log" || true; } | cut -c1-200 | sed 's/^/    /'

# ---- 2. nginx.conf as users get it, its upstream on this run's loopback ports ----------------
# X-Upstream ($upstream_addr): which replica answered; two addresses when nginx retried.
sed -e "s|^\( *\)server thoughtvec:8000\(.*\)|\1server 127.0.0.1:$REPLICA_A_PORT\2\n\1server 127.0.0.1:$REPLICA_B_PORT\2|" \
  -e "s|^\( *\)listen 80;|\1listen 127.0.0.1:$BALANCER_PORT;\n\1add_header X-Upstream \$upstream_addr always;|" \
  docker/milvus/nginx.conf >"$NGINX_CONF"
[[ $(grep -c "server 127.0.0.1:" "$NGINX_CONF") -eq 2 && $(grep -c "listen 127.0.0.1:$BALANCER_PORT;" "$NGINX_CONF") -eq 1 ]] \
  || { cat "$NGINX_CONF"; die "docker/milvus/nginx.conf: its 'server thoughtvec:8000' or 'listen 80;' line changed"; }
"$DOCKER" run --rm --network host -v "$NGINX_CONF:/etc/nginx/conf.d/default.conf:ro" thoughtvec-ci/nginx:bookworm nginx -t -q \
  || die "nginx -t"
log "nginx.conf valid (nginx -t): 127.0.0.1:$BALANCER_PORT -> replicas 127.0.0.1:$REPLICA_A_PORT, 127.0.0.1:$REPLICA_B_PORT"

# ---- 3. Milvus, the default index (thoughtvec-build, as users run it), replicas, balancer ------
log "compose up standalone (Milvus stand-in on 127.0.0.1:$MILVUS_PORT)"
within 400 up -d --no-build --pull never --wait --wait-timeout 300 standalone || die "Milvus not healthy"
log "compose run thoughtvec-build (the default index into Milvus; 300 sentences here)"
BUILD_ARGS=(--limit 300)
if [[ -n $MODELS_DIR && ! -f $MODELS_DIR/invertible-bijection/bundle.json ]]; then  # the tiny bundle
  first=$(find "$MODELS_DIR" -mindepth 2 -maxdepth 2 -name bundle.json | sort | head -n 1)
  BUILD_ARGS+=(--model "$(basename "$(dirname "$first")")")
fi
within 900 --profile build run --rm --no-deps thoughtvec-build "${BUILD_ARGS[@]}" >"$RUN/index-build.log" 2>&1 \
  || { tail -n 30 "$RUN/index-build.log"; die "thoughtvec-build"; }
tail -n 3 "$RUN/index-build.log" | cut -c1-200 | sed 's/^/    /'
log "compose up balancer (after both replicas are healthy)"
t=$SECONDS
within 900 up -d --no-build --pull never --wait --wait-timeout 800 balancer thoughtvec thoughtvec-2 \
  || die "replicas or balancer not up"
log "two replicas healthy and nginx up in $((SECONDS - t)) s"
compose ps --format 'table {{.Service}}\t{{.Status}}' | sed 's/^/    /'

# ---- 4. through the balancer -------------------------------------------------------------------
log "setup through the balancer: embeddings, the default index, a new index with documents"
client 300 setup || die "setup"

# ---- 5. kill -9 of one replica under load ------------------------------------------------------
A=$(compose ps -q thoughtvec)
restarts=$("$DOCKER" inspect -f '{{.RestartCount}}' "$A")
rm -f "$RUN/killed" "$RUN/healthy"
client 900 load --watch "127.0.0.1:$REPLICA_A_PORT" --kill-mark "$RUN/killed" --healthy-mark "$RUN/healthy" \
  --after 10 --max-seconds 700 >"$RUN/load.log" 2>&1 &
LOAD_PID=$!
sleep 5
PID=$("$DOCKER" inspect -f '{{.State.Pid}}' "$A")
log "kill -9 of replica thoughtvec (127.0.0.1:$REPLICA_A_PORT, server pid $PID) under load"
stamp() { date +%s.%N >"$1.tmp" && mv "$1.tmp" "$1"; }  # whole, as the client may read it any time
stamp "$RUN/killed"
kill -KILL "$PID"
t=$SECONDS
deadline=$((SECONDS + 600))
until [[ $("$DOCKER" inspect -f '{{.RestartCount}} {{.State.Running}}' "$A") == "$((restarts + 1)) true" ]]; do
  ((SECONDS < deadline)) || die "Docker did not restart the killed replica"
  sleep 0.5
done
log "restarted by Docker (restart: unless-stopped) after $((SECONDS - t)) s"
until [[ $("$DOCKER" inspect -f '{{.State.Health.Status}}' "$A") == healthy ]]; do
  ((SECONDS < deadline)) || die "the restarted replica was not healthy in 600 s"
  sleep 0.5
done
stamp "$RUN/healthy"
log "healthy again (/ready 200) $((SECONDS - t)) s after the kill; load runs until it has answered 10 requests"
wait "$LOAD_PID" || { LOAD_PID=""; cat "$RUN/load.log"; die "load"; }
LOAD_PID=""
sed 's/^/    /' "$RUN/load.log"

# ---- 6. nothing acknowledged lost ---------------------------------------------------------------
client 600 verify --replica "$REPLICA_A_PORT" --replica "$REPLICA_B_PORT" || die "verify"
log "PASSED: Milvus + 2 replicas + nginx from docker/milvus/compose.yml; embeddings, the built default index, index create/add/search through the balancer; a replica killed and restarted with no failed read; every acknowledged write found on both replicas"
