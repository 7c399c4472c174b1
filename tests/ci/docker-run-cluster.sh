#!/usr/bin/env bash
# `make docker-run-cluster`: docs/other-ci.md's `docker run` snippets and its GitLab job, taken out
# of the doc and run against the local cluster (real trials, --platform kubernetes):
#   1. `docker-run` as the image's own user, uid 65532, a passing policy: exit 0, every report
#      file owned by 65532, verdict pass, JUnit without failures, the copy in ./report;
#   2. `docker-run-user` as a runner user, uid 65533, a failing policy: exit 1, files owned by
#      65533, the JUnit failure names the arm and the threshold;
#   3. `docker-run` with a kubeconfig whose API server does not answer: exit 2, the check named;
#   4. `docker-run`, SIGTERM to `docker run` mid-trial: exit 130, the partial verdict written,
#      the trial's namespace deleted;
#   5. the GitLab job (before_script + script) with the image's binary served as the release from
#      loopback, checksum-verified, run against the cluster: exit 0, report/junit.xml written.
#   6. README's `docker run` as copied, by a user (uid 65533) whose kubeconfig is mode 0600 and
#      whose context's namespace holds deployment/my-service (the good-shutdown example renamed):
#      exit 0 (its two thresholds held), the report in report/, theirs.
#   7. docs/ci.md's arm through a managed ingress (tests/fixtures/ci/policies/
#      cluster-ingress-managed.toml) by the `docker-run-user` snippet, as that user on the same
#      service: exit 0, the ingress logged every request, its Ingress and RoleBinding removed.
# The image is the one the cluster's nodes imported (deploy/local-cluster/up.sh), checked by
# digest against the archive podman loads, so the container's binary and the probe pods agree.
#
# Stand-ins, each for a reason of this machine (the doc's "How this is tested" names them too):
#   docker  Podman with a private store and a containers.conf setting the nofile/nproc ulimits
#           (runc here cannot raise them: no CAP_SYS_RESOURCE);
#   id      answers 65533 in case 2 (this test runs as root; the workspace and kubeconfig are
#           made the runner user's, as they would be);
#   image=  the snippets' release tag is replaced by the image the nodes have.
#
# Needs root, the local cluster (make cluster-up), its image and the example images (make
# example-images); about 3 minutes.
# Usage: tests/ci/docker-run-cluster.sh   (DRAINWATCH_E2E_KUBECONFIG: default the local cluster's)
set -euo pipefail
. "$(dirname "$0")/../../deploy/local-cluster/lib.sh"
need_root
KCFG=${DRAINWATCH_E2E_KUBECONFIG:-$ADMIN_KUBECONFIG}
POLICIES=$REPO_ROOT/tests/fixtures/ci/policies
python3 -c 'import yaml' 2>/dev/null || DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q python3-yaml >/dev/null
PY=python3
for py in "${DRAINWATCH_CACHE:-/var/cache/drainwatch}/ci-venv/bin/python" python3; do
  if "$py" -c 'import yaml' 2>/dev/null; then PY=$py; break; fi
done
fail() { echo "docker-run-cluster: FAIL: $*" >&2; exit 1; }
say() { echo "docker-run-cluster: $*"; }

# --- the cluster and its image --------------------------------------------------------------
[ -r "$KCFG" ] || die "no kubeconfig at $KCFG (make cluster-up)"
"$K8S_BIN/kubectl" --kubeconfig "$KCFG" get nodes >/dev/null || die "the cluster of $KCFG does not answer (make cluster-up)"
IMAGE=$(project_image)
ARCHIVE=$(image_archive)
[ -f "$ARCHIVE" ] || die "no image archive at $ARCHIVE (make image)"
want=$("$PY" - "$ARCHIVE" <<'PY'
import json, sys, tarfile
print(json.load(tarfile.open(sys.argv[1]).extractfile("index.json"))["manifests"][0]["digest"])
PY
)
nodes=0
for n in $(seq 1 "$MAX_NODES"); do
  [ -S "$(node_sock "$n")" ] || continue
  have=$(ctr_node "$n" images ls | awk -v i="$IMAGE" '$1 == i {print $3}')
  [ "$have" = "$want" ] || die "node$n has $IMAGE as ${have:-nothing}, the archive is $want: make cluster-up re-imports it"
  nodes=$((nodes + 1))
done
[ "$nodes" -gt 0 ] || die "no running node of the local cluster"
say "image $IMAGE ($want) on $nodes node(s)"

# --- docker: podman with a private store ----------------------------------------------------
# podman (the docker), busybox (the GitLab job's shell), PyYAML (the snippets): Debian's
command -v podman >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends podman catatonit >/dev/null
command -v busybox >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q busybox >/dev/null
work=$(mktemp -d)
store=${DRAINWATCH_CACHE:-/var/cache/drainwatch}/podman-cluster
# podman keeps a blob-info cache in /var/lib/containers whatever --root says: removed after,
# when this run created it (its other state is under $store: --root, --runroot, --tmpdir), and
# only while nothing else is there: podman's default store, which `make kind-image` beside this
# run builds in on a fresh machine, is in use and not this run's
[ -e /var/lib/containers ] && made_varlib=0 || made_varlib=1
cleanup() {
  "$K8S_BIN/kubectl" --kubeconfig "$KCFG" delete namespace drainwatch-readme --ignore-not-found --wait=false >/dev/null 2>&1 || true
  "$work/bin/docker" rmi -f "$IMAGE" >/dev/null 2>&1 || true
  rm -rf "$work"
  if [ "$made_varlib" = 1 ] && [ -z "$(ls -A /var/lib/containers 2>/dev/null | grep -vx cache)" ]; then
    rm -rf /var/lib/containers
  fi
}
trap cleanup EXIT
mkdir -p "$work/bin" "$work/runner-bin"
cat > "$work/containers.conf" <<'EOF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
EOF
cat > "$work/bin/docker" <<EOF
#!/bin/sh
# docker = podman, private store, ulimits podman may set here; DOCKER_PIDFILE: where to say who runs
[ -z "\${DOCKER_PIDFILE:-}" ] || echo \$\$ > "\$DOCKER_PIDFILE"
export CONTAINERS_CONF=$work/containers.conf
exec podman --root "$store/root" --runroot "$store/runroot" --tmpdir "$store/tmp" --storage-driver vfs --cgroup-manager cgroupfs "\$@"
EOF
printf '#!/bin/sh\n# the runner user of case 2\necho 65533\n' > "$work/runner-bin/id"
chmod +x "$work/bin/docker" "$work/runner-bin/id"
export PATH="$work/bin:$PATH"
loaded=$(docker load -q -i "$ARCHIVE" | sed -n 's/^Loaded image[^:]*: //p' | tail -1)
[ "$loaded" = "$IMAGE" ] || die "the archive loaded as '$loaded', expected $IMAGE"

# snippet NAME -> the doc's block, the release tag replaced by the nodes' image
snippet() {
  "$PY" "$REPO_ROOT/tests/ci/other_ci.py" snippet "$1" > "$work/$1.sh"
  head -1 "$work/$1.sh" | grep -q '^image=' || fail "snippet $1 does not start with image="
  sed -i "1s|^image=.*|image=$IMAGE|" "$work/$1.sh"
  echo "$work/$1.sh"
}
# job DIR POLICY: a job's workspace with the policy as drainwatch.toml
job() { mkdir -p "$1/tmp"; cp "$2" "$1/drainwatch.toml"; }
owned_only_by() { # DIR UID [MIN]: every file under DIR belongs to UID, and there are >= MIN (5)
  local n others min=${3:-5}
  n=$(find "$1" -type f | wc -l); others=$(find "$1" -mindepth 1 -not -uid "$2" | wc -l)
  [ "$n" -ge "$min" ] || fail "$1 has $n files, expected the report's (>= $min)"
  [ "$others" = 0 ] || fail "$others entries under $1 are not owned by uid $2: $(find "$1" -mindepth 1 -not -uid "$2" -printf '%u:%p ')"
}
verdict() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict"])' "$1"; }
junit_counts() { # FILE -> "tests failures"
  "$PY" - "$1" <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
cases = root.findall(".//testcase")
print(len(cases), sum(1 for c in cases if c.find("failure") is not None))
PY
}
run_snippet() { # SCRIPT DIR LOG [ENV...] -> exit code
  local script=$1 dir=$2 log=$3 code=0; shift 3
  (cd "$dir" && env TMPDIR="$dir/tmp" "$@" sh "$script") > "$log" 2>&1 || code=$?
  echo "$code"
}
t_start=$(date +%s)

# --- 1. as uid 65532, passing policy --------------------------------------------------------
s=$(snippet docker-run)
a=$work/a; job "$a" "$POLICIES/cluster-pass.toml"
code=$(run_snippet "$s" "$a" "$a.log" KUBECONFIG="$KCFG")
[ "$code" = 0 ] || { cat "$a.log" >&2; fail "docker-run (uid 65532, passing policy) exited $code, expected 0"; }
dw=$(find "$a/tmp" -mindepth 1 -maxdepth 1 -type d)
[ "$(echo "$dw" | wc -l)" = 1 ] || fail "expected one private directory of the snippet, found: $dw"
[ "$(stat -c %a "$dw")" = 700 ] || fail "the snippet's private directory is mode $(stat -c %a "$dw"), expected 700"
owned_only_by "$dw/report" 65532
for f in verdict.json junit.xml summary.md drain/report.json drain/events.jsonl; do
  [ -f "$a/report/$f" ] || fail "the copied report has no $f"
done
[ "$(verdict "$a/report/verdict.json")" = pass ] || fail "verdict.json says $(verdict "$a/report/verdict.json"), expected pass"
read -r tests failures < <(junit_counts "$a/report/junit.xml")
if [ "$tests" -lt 1 ] || [ "$failures" != 0 ]; then fail "junit.xml: $tests cases, $failures failures; expected >= 1 and 0"; fi
say "1 docker-run as uid 65532: exit 0, $(find "$dw/report" -type f | wc -l) files owned by 65532, verdict pass, junit $tests cases 0 failures ($(( $(date +%s) - t_start ))s)"

# --- 2. as a runner user (uid 65533), failing policy ----------------------------------------
t=$(date +%s)
s=$(snippet docker-run-user)
b=$work/b; job "$b" "$POLICIES/cluster-fail.toml"
mkdir -p "$b/report" "$work/b-home"
install -m 0600 "$KCFG" "$work/b-home/kubeconfig"
chown -R 65533:65533 "$b" "$work/b-home"
code=$(run_snippet "$s" "$b" "$b.log" KUBECONFIG="$work/b-home/kubeconfig" PATH="$work/runner-bin:$PATH")
[ "$code" = 1 ] || { cat "$b.log" >&2; fail "docker-run-user (uid 65533, failing policy) exited $code, expected 1"; }
owned_only_by "$b/report" 65533
[ "$(verdict "$b/report/verdict.json")" = fail ] || fail "verdict.json does not say fail"
read -r tests failures < <(junit_counts "$b/report/junit.xml")
[ "$failures" -ge 1 ] || fail "junit.xml has no failure"
grep -q 'name="exit-now"' "$b/report/junit.xml" || fail "junit.xml has no exit-now suite"
grep -q 'the threshold is ≥ 100%' "$b/report/junit.xml" || fail "the JUnit failure does not name the threshold"
say "2 docker-run-user as uid 65533: exit 1, files owned by 65533, junit failure names exit-now and the threshold ($(( $(date +%s) - t ))s)"

# --- 3. an API server that does not answer --------------------------------------------------
t=$(date +%s)
s=$(snippet docker-run)
c=$work/c; job "$c" "$POLICIES/cluster-pass.toml"
sed 's|^\(\s*server:\).*|\1 https://127.0.0.1:1|' "$KCFG" > "$work/dead.kubeconfig"
code=$(run_snippet "$s" "$c" "$c.log" KUBECONFIG="$work/dead.kubeconfig")
[ "$code" = 2 ] || { cat "$c.log" >&2; fail "an unreachable API server exited $code, expected 2"; }
grep -q 'api-reachable' "$c.log" || { cat "$c.log" >&2; fail "the log does not name api-reachable"; }
say "3 unreachable API server: exit 2, api-reachable named ($(( $(date +%s) - t ))s)"

# --- 4. SIGTERM to docker run mid-trial -----------------------------------------------------
t=$(date +%s)
s=$(snippet docker-run)
d=$work/d; job "$d" "$POLICIES/cluster-pass.toml"
(cd "$d" && exec env TMPDIR="$d/tmp" KUBECONFIG="$KCFG" DOCKER_PIDFILE="$d/docker.pid" sh "$s") > "$d.log" 2>&1 &
job_pid=$!
for _ in $(seq 1 240); do grep -q 'trigger: delete issued' "$d.log" && break; sleep 0.5; done
grep -q 'trigger: delete issued' "$d.log" || { kill -TERM "$(cat "$d/docker.pid")" 2>/dev/null; cat "$d.log" >&2; fail "the trial never reached its trigger"; }
kill -TERM "$(cat "$d/docker.pid")"
code=0; wait "$job_pid" || code=$?
[ "$code" = 130 ] || { cat "$d.log" >&2; fail "SIGTERM to docker run: exit $code, expected 130"; }
[ -f "$d/report/verdict.json" ] || fail "no verdict.json after the interrupt"
ns=$(sed -n 's/^drainwatch: namespace \([^ ]*\) (created for this trial).*/\1/p' "$d.log" | head -1)
[ -n "$ns" ] || fail "the log names no trial namespace"
phase=$("$K8S_BIN/kubectl" --kubeconfig "$KCFG" get ns "$ns" -o jsonpath='{.status.phase}' 2>/dev/null || echo gone)
[ "$phase" = gone ] || [ "$phase" = Terminating ] || fail "namespace $ns is $phase after the interrupt, expected deleted"
say "4 SIGTERM mid-trial: exit 130, verdict $(verdict "$d/report/verdict.json") written, namespace $ns $phase ($(( $(date +%s) - t ))s)"

# --- 5. the GitLab job: the release binary from loopback, checksum-verified ------------------
t=$(date +%s)
g=$work/g; job "$g" "$POLICIES/cluster-pass.toml"
cid=$(docker create "$IMAGE")
docker cp "$cid:/drainwatch" "$work/release-binary" >/dev/null
docker rm "$cid" >/dev/null
code=0
"$PY" "$REPO_ROOT/tests/ci/other_ci.py" gitlab --binary "$work/release-binary" --workdir "$g" \
  --kubeconfig "$KCFG" --image "$IMAGE" > "$g.log" 2>&1 || code=$?
[ "$code" = 0 ] || { cat "$g.log" >&2; fail "the GitLab job exited $code, expected 0"; }
grep -q 'drainwatch-x86_64-linux-musl: OK' "$g.log" || fail "the GitLab job's log shows no checksum verification"
[ -f "$g/report/junit.xml" ] || fail "no report/junit.xml where artifacts:reports:junit looks"
[ "$(verdict "$g/report/verdict.json")" = pass ] || fail "the GitLab job's verdict is not pass"
say "5 GitLab job: binary checksum OK, exit 0, verdict pass, report/junit.xml present ($(( $(date +%s) - t ))s)"

# --- 6. README's docker run as copied: a user's service, their own 0600 kubeconfig -----------
t=$(date +%s)
readme_ns=drainwatch-readme
example=$(grep -o 'ghcr.io/drainwatch/example-good-shutdown:[^[:space:]]*' "$REPO_ROOT/examples/k8s/good-shutdown.yaml" | head -1)
for n in $(seq 1 "$MAX_NODES"); do
  [ -S "$(node_sock "$n")" ] || continue
  # The listing itself may fail while the node's containerd is busy (a lane importing or
  # starting pods beside this one): that is said as such and asked again, not taken as absence.
  listed="" err=""
  for _ in 1 2 3; do
    listed=$(ctr_node "$n" images ls -q 2>"$work/ctr.err") && break
    err=$(cat "$work/ctr.err"); listed=""; sleep 1
  done
  [ -n "$listed" ] || die "node$n's containerd did not list its images: $err"
  grep -qxF "$example" <<<"$listed" || die "node$n has no $example (make example-images); it lists: $(tr '\n' ' ' <<<"$listed")"
done
s=$work/readme.sh
"$PY" "$REPO_ROOT/tests/ci/other_ci.py" snippet docker-run --doc "$REPO_ROOT/README.md" > "$s"
grep -q 'ghcr.io/drainwatch/drainwatch:v[0-9.]*' "$s" || fail "README's docker run names no release image"
sed -i "s|ghcr.io/drainwatch/drainwatch:v[0-9.]*|$IMAGE|g" "$s"
# my-service: the good-shutdown example renamed, in the kubeconfig context's namespace
"$K8S_BIN/kubectl" --kubeconfig "$KCFG" create namespace "$readme_ns" >/dev/null
sed -e '/^  namespace: drainwatch-examples$/d' -e '/image:/!s/good-shutdown/my-service/g' \
  "$REPO_ROOT/examples/k8s/good-shutdown.yaml" > "$work/my-service.yaml"
"$K8S_BIN/kubectl" --kubeconfig "$KCFG" -n "$readme_ns" apply -f "$work/my-service.yaml" >/dev/null
"$K8S_BIN/kubectl" --kubeconfig "$KCFG" -n "$readme_ns" rollout status deployment/my-service --timeout=180s >/dev/null \
  || fail "deployment/my-service did not become ready"
# the snippet's `mkdir -p report`, as the user would run it: theirs (this shell is root)
e=$work/e; mkdir -p "$e/tmp" "$e/report" "$work/e-home"
install -m 0600 "$KCFG" "$work/e-home/kubeconfig"
"$K8S_BIN/kubectl" --kubeconfig "$work/e-home/kubeconfig" config set-context --current --namespace "$readme_ns" >/dev/null
chown -R 65533:65533 "$e" "$work/e-home"
code=$(run_snippet "$s" "$e" "$e.log" KUBECONFIG="$work/e-home/kubeconfig" PATH="$work/runner-bin:$PATH")
[ "$code" = 0 ] || { cat "$e.log" >&2; fail "README's docker run (uid 65533, kubeconfig mode 0600) exited $code, expected 0"; }
# one trial, no policy: report.json, events.jsonl, report.html, summary.json
owned_only_by "$e/report" 65533 4
for f in report.json events.jsonl report.html summary.json; do
  [ -f "$e/report/$f" ] || fail "README's docker run wrote no report/$f: $(ls "$e/report")"
done
grep -q 'my-service' "$e/report/report.json" || fail "report.json does not name the target my-service"
say "6 README's docker run as uid 65533 with a 0600 kubeconfig: exit 0 (both thresholds held), report/ owned by 65533 ($(( $(date +%s) - t ))s)"

# --- 7. docs/ci.md's arm through a managed ingress, by docker run ---------------------------
# The same user and service; the policy's arm has drainwatch deploy Traefik beside my-service for
# the trial. As the docs ask: the ClusterRole the controller is bound to (deploy/rbac-attach.yaml's
# drainwatch-ingress-traefik, applied by an admin; shared, so left in place), and the Traefik
# image on the nodes (make traefik-image; a kind user runs `kind load docker-image`).
t=$(date +%s)
make -C "$REPO_ROOT" --no-print-directory traefik-image >"$work/traefik-image.log" 2>&1 || { cat "$work/traefik-image.log" >&2; fail "make traefik-image failed"; }
"$PY" - "$REPO_ROOT/deploy/rbac-attach.yaml" > "$work/traefik-role.yaml" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
role = [d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "drainwatch-ingress-traefik"]
assert len(role) == 1, [d["metadata"]["name"] for d in docs]
print(yaml.safe_dump(role[0]))
PY
"$K8S_BIN/kubectl" --kubeconfig "$KCFG" apply -f "$work/traefik-role.yaml" >/dev/null
s=$(snippet docker-run-user)
m=$work/m; job "$m" "$POLICIES/cluster-ingress-managed.toml"
mkdir -p "$m/report"
chown -R 65533:65533 "$m"
code=$(run_snippet "$s" "$m" "$m.log" KUBECONFIG="$work/e-home/kubeconfig" PATH="$work/runner-bin:$PATH")
[ "$code" = 0 ] || { cat "$m.log" >&2; fail "docker-run-user through a managed ingress exited $code, expected 0"; }
owned_only_by "$m/report" 65533
[ "$(verdict "$m/report/verdict.json")" = pass ] || fail "verdict.json does not say pass"
"$PY" - "$m/report/rollout-through-traefik/report.json" <<'PY' || fail "the arm's report does not show the managed ingress"
import json, sys
r = json.load(open(sys.argv[1]))
t = r["trial"]
ing = t["config"]["kubernetes"]["attach"]["ingress"]
assert ing["managed"]["provider"] == "kubernetes-ingress" and ing["namespace"] is None, ing
a = t["attach"]["ingress"]
assert a["logged"] > 50 and a["not_logged"] == 0, {k: a[k] for k in ("logged", "not_logged")}
assert t["attach"]["requests"]["failed"] == 0 and t["attach"]["dials"]["failed"] == 0, t["attach"]["requests"]
PY
# What the trial created beside the target (the Ingress, the RoleBinding) is gone with it.
left=$("$K8S_BIN/kubectl" --kubeconfig "$KCFG" -n "$readme_ns" get ingress,rolebinding -l app.kubernetes.io/managed-by=drainwatch -o name)
[ -z "$left" ] || fail "the managed ingress left $left in $readme_ns"
"$K8S_BIN/kubectl" --kubeconfig "$KCFG" delete namespace "$readme_ns" --wait=false >/dev/null
say "7 docker-run-user through a managed Traefik: exit 0 (both thresholds held), every request logged by the ingress, nothing left beside my-service ($(( $(date +%s) - t ))s)"

say "7 passed, 0 failed in $(( $(date +%s) - t_start ))s"
