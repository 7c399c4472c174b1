#!/usr/bin/env bash
# The `docker run` usage of docs/ci.md, run with podman (docker's CLI) against the project image
# that `make image` builds: the policy mounted read-only, the report directory mounted and
# written as the calling user, host networking, the exit code as the verdict (0 pass, 1 fail).
#
# The policy runs on `--platform local` (the probe is a child process inside the container), so no
# cluster is needed; the container mechanics are the ones the docs show.
#
# Usage: tests/ci/docker-run.sh [IMAGE_ARCHIVE]   (default: the archive `make image` writes)
# Needs root and Debian's podman (installed when missing).
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
CACHE="${DRAINWATCH_CACHE:-/var/cache/drainwatch}"
archive="${1:-${DRAINWATCH_K8S_CACHE:-/var/cache/drainwatch-k8s}/images/drainwatch-$(sed -n 's/^version = "\(.*\)"/\1/p' "$REPO_ROOT/Cargo.toml" | head -1).oci.tar}"
[ -f "$archive" ] || { echo "docker-run: no image archive at $archive (make image)" >&2; exit 2; }
command -v podman >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q podman >/dev/null

work="$(mktemp -d)"
store="$CACHE/podman"
# podman keeps a blob-info cache in /var/lib/containers whatever --root says: remove it after,
# when this run created it.
[ -e /var/lib/containers ] && made_varlib=0 || made_varlib=1
cleanup() {
  podman "${P[@]}" rmi -f "$image" >/dev/null 2>&1 || true
  rm -rf "$work"
  if [ "$made_varlib" = 1 ]; then rm -rf /var/lib/containers; fi
}
# This machine's runc may not set the rlimits podman asks for (no CAP_SYS_RESOURCE here), so the
# runtime is a wrapper that drops them from the bundle; a normal CI host needs none of this.
cat > "$work/runc" <<'EOF'
#!/usr/bin/env bash
bundle=""
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  if [ "${args[$i]}" = "--bundle" ] || [ "${args[$i]}" = "-b" ]; then bundle="${args[$((i + 1))]}"; fi
done
if [ -n "$bundle" ] && [ -f "$bundle/config.json" ]; then
  python3 - "$bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c.get("process", {}).pop("rlimits", None)
json.dump(c, open(p, "w"))
PY
fi
exec /usr/sbin/runc "$@"
EOF
chmod +x "$work/runc"
P=(--root "$store/root" --runroot "$store/runroot" --storage-driver vfs --cgroup-manager cgroupfs --runtime "$work/runc")
image="$(podman "${P[@]}" load -q -i "$archive" | sed -n 's/^Loaded image[^:]*: //p' | tail -1)"
trap cleanup EXIT
echo "docker-run: image $image"

ports() { # three consecutive free ports
  python3 - <<'PY'
import random, socket
for _ in range(200):
    b = random.randrange(21000, 29000)
    ok = True
    for p in range(b, b + 3):
        for k in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
            s = socket.socket(socket.AF_INET, k)
            try: s.bind(("0.0.0.0", p))
            except OSError: ok = False
            finally: s.close()
    if ok:
        print(b, b + 1, b + 2); break
PY
}

run_policy() { # POLICY REPORT_DIR -> exit code of the container
  local policy=$1 report=$2 tcp udp ready code=0
  read -r tcp udp ready < <(ports)
  mkdir -p "$report"
  podman "${P[@]}" run --rm --network host \
    -v "$policy:/policy.toml:ro" \
    -v "$report:/report" --user "$(id -u):$(id -g)" \
    "$image" \
    run --platform local --policy /policy.toml --out /report \
    --settle-seconds 1 --tcp-port "$tcp" --udp-port "$udp" --ready-port "$ready" \
    > "$report.log" 2>&1 || code=$?
  echo "$code"
}

fail() { echo "docker-run: FAIL: $*" >&2; exit 1; }

code=$(run_policy "$REPO_ROOT/tests/fixtures/ci/policies/local-pass.toml" "$work/pass")
[ "$code" = 0 ] || { cat "$work/pass.log" >&2; fail "passing policy exited $code, expected 0"; }
for f in verdict.json junit.xml summary.md drain/report.json drain/events.jsonl; do
  [ -f "$work/pass/$f" ] || fail "passing policy wrote no $f"
done
[ "$(stat -c %u "$work/pass/verdict.json")" = "$(id -u)" ] || fail "report not owned by the calling user"
grep -q '"verdict": "pass"' "$work/pass/verdict.json" || fail "verdict.json does not say pass"
echo "docker-run: passing policy: exit 0, verdict pass, files owned by uid $(id -u)"

code=$(run_policy "$REPO_ROOT/tests/fixtures/ci/policies/local-fail.toml" "$work/fail")
[ "$code" = 1 ] || { cat "$work/fail.log" >&2; fail "failing policy exited $code, expected 1"; }
grep -q 'name="exit-now"' "$work/fail/junit.xml" || fail "junit.xml has no exit-now suite"
grep -q 'the threshold is ≥ 100%' "$work/fail/junit.xml" || fail "junit.xml failure lacks the threshold"
echo "docker-run: failing policy: exit 1, junit names the arm and the threshold"

code=0
podman "${P[@]}" run --rm "$image" run --policy /nonexistent.toml > "$work/bad.log" 2>&1 || code=$?
[ "$code" = 2 ] || fail "a missing policy exited $code, expected 2"
grep -q "failed to read the policy /nonexistent.toml" "$work/bad.log" || fail "the error does not name the policy"
echo "docker-run: missing policy: exit 2, named"
echo "docker-run: 3 passed, 0 failed"
