#!/usr/bin/env bash
# `make e2e-smoke`: smoke test of the local two-node cluster (deploy/local-cluster/).
#
# 1. host safety: no nameserver of /etc/resolv.conf in a guarded range; the egress guard drops a SYN
#    to an unallocated service address (its counter rises); pods have routes to the cluster ranges only
# 2. deploys two replicas of the project's probe image (Deployment + Service + PDB, one per node,
#    imagePullPolicy Never) and reaches them from the host over ClusterIP, NodePort (both node IPs)
#    and pod IP, with real TCP (heartbeats) and UDP (ping/ack), plus HTTP /readyz
# 3. `kubectl drain node1`, observed through a raw EndpointSlice watch: the evicted endpoint shows
#    ready=false, serving=true, terminating=true, its replacement becomes ready on node2, the old one goes
# 4. tears the cluster down and asserts the machine is clean (KEEP_CLUSTER=1: uncordon, delete the
#    namespace and leave the cluster up instead)
#
# All traffic goes to addresses the cluster created on this machine. Prints 'N passed, N failed'.
set -uo pipefail
E2E_DIR=$(cd "$(dirname "$0")" && pwd)
. "$E2E_DIR/../../deploy/local-cluster/lib.sh"
need_root
NS=${SMOKE_NS:-drainwatch-smoke}
APP=probe
CLIENT="python3 $E2E_DIR/probe-client.py"
PASS=0; FAIL=0; FAILED=()
WORK=$(mktemp -d /tmp/drainwatch-smoke.XXXXXX)
WATCH_PID=""
cleanup() { [ -n "$WATCH_PID" ] && kill "$WATCH_PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

ok()   { PASS=$((PASS + 1)); log "PASS $*"; }
bad()  { FAIL=$((FAIL + 1)); FAILED+=("$*"); log "FAIL $*"; }
# check NAME CMD...: runs CMD, PASS/FAIL by its exit status, shows its output on failure
check() {
  local name=$1 out; shift
  if out=$("$@" 2>&1); then ok "$name${out:+ -> $(echo "$out" | tail -1)}"; else bad "$name: $(echo "$out" | tail -3 | tr '\n' ' ')"; fi
}
# poll TIMEOUT CMD...: retries CMD until it succeeds (readiness of rules/endpoints, not a sleep)
poll() {
  local t=$1 deadline; shift
  deadline=$(( $(date +%s) + t ))
  until "$@"; do [ "$(date +%s)" -lt "$deadline" ] || return 1; sleep 0.3; done
}
finish() {
  echo
  log "smoke: $PASS passed, $FAIL failed"
  for f in "${FAILED[@]}"; do echo "  failed: $f"; done
  echo "$PASS passed, $FAIL failed"
  [ "$FAIL" = 0 ]
  exit $?
}

# ---------------------------------------------------------------------------------------------
# 0. the cluster
[ -f "$S/nodes" ] || { bad "no local cluster running (make cluster-up)"; finish; }
NODES=$(cat "$S/nodes")
[ "$NODES" -ge 2 ] || { bad "the smoke test needs 2 nodes (cluster has $NODES; make cluster-up NODES=2)"; finish; }
IMAGE=$(project_image)
check "cluster reachable and both nodes Ready" bash -c \
  "[ \"\$($K8S_BIN/kubectl --kubeconfig $ADMIN_KUBECONFIG --cache-dir $S/kubectl-cache get nodes node1 node2 -o 'jsonpath={.items[*].status.conditions[?(@.type==\"Ready\")].status}')\" = 'True True' ]"
check "cluster-info.json records the timing knobs" python3 -c "
import json,sys; d=json.load(open('$CLUSTER_INFO')); t=d['timing']
need=['endpointSliceUpdatesBatchPeriod','kubeProxyMinSyncPeriod','nodeStatusUpdateFrequency']
missing=[k for k in need if k not in t]; sys.exit('missing: %s' % missing if missing else 0)"
for n in 1 2; do
  check "node$n has image $IMAGE" bash -c "ctr --address $(node_sock $n) -n k8s.io images ls -q | grep -xF '$IMAGE' >/dev/null"
done

# ---------------------------------------------------------------------------------------------
# 1. host safety
check "no /etc/resolv.conf nameserver inside a guarded range" python3 -c "
import ipaddress,sys
nets=[ipaddress.ip_network(c) for c in '$SERVICE_CIDR $POD_CIDR $NODE_NET'.split()]
ns=[l.split()[1] for l in open('/etc/resolv.conf') if l.split()[:1]==['nameserver']]
bad=[n for n in ns if any(ipaddress.ip_address(n) in c for c in nets if ipaddress.ip_address(n).version==c.version)]
print('nameservers:', ' '.join(ns) or 'none'); sys.exit('guarded: %s' % bad if bad else 0)"
check "egress guard hooked first in mangle POSTROUTING" bash -c \
  "iptables -t mangle -S POSTROUTING | grep -- '^-A POSTROUTING' | head -1 | grep -- '-j DRAINWATCH-EGRESS' >/dev/null"

# an unallocated service address: in the range, not any Service's ClusterIP. With nodes as
# network hosts the host routes the whole service range to node1, so nothing of it can reach the
# default route; a pod-range address outside every node's subnet still would, so that one.
GUARD_RANGE=$SERVICE_CIDR
used=$(kc get svc -A -o jsonpath='{range .items[*]}{.spec.clusterIP}{"\n"}{end}')
PROBE_IP=""
for last in 254 253 252 251 250; do
  cand=${SERVICE_CIDR%.*.*}.255.$last
  grep -qxF "$cand" <<<"$used" || { PROBE_IP=$cand; break; }
done
if netns_mode; then GUARD_RANGE=$POD_CIDR; PROBE_IP=${POD_SUBNET_PREFIX}255.254; fi
guard_count() { # packets dropped by the guard rule for the guarded range
  iptables -t mangle -L DRAINWATCH-EGRESS -nvx | awk -v d="$GUARD_RANGE" '$3=="DROP" && $9==d {print $1; exit}'
}
c0=$(guard_count)
if [ -z "$c0" ]; then bad "egress guard rule for $GUARD_RANGE not found"
else
  $CLIENT syn "$PROBE_IP" 80 --timeout 0.5 >/dev/null 2>&1
  c1=$(guard_count)
  if [ "${c1:-0}" -gt "$c0" ]; then ok "egress guard dropped the SYN to unallocated $PROBE_IP ($c0 -> $c1 packets)"
  else bad "egress guard counter did not rise for $PROBE_IP ($c0 -> ${c1:-?})"; fi
fi
if netns_mode; then
  for n in $(seq 1 "$(cat "$S/nodes")"); do
    check "node$n's own egress guard hooked first in its mangle POSTROUTING" bash -c \
      "nsenter --net=/run/netns/$(node_netns "$n") iptables -t mangle -S POSTROUTING | sed -n 2p | grep -q -- '-j DRAINWATCH-EGRESS'"
  done
fi

# ---------------------------------------------------------------------------------------------
# 2. deploy the probe
if kc get namespace "$NS" >/dev/null 2>&1; then
  kc delete namespace "$NS" --wait=true --timeout=120s >/dev/null
fi
kc uncordon node1 >/dev/null 2>&1
kc create namespace "$NS" >/dev/null
kc -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: $APP, labels: {app: $APP}}
spec:
  replicas: 2
  selector: {matchLabels: {app: $APP}}
  template:
    metadata: {labels: {app: $APP}}
    spec:
      terminationGracePeriodSeconds: 15
      automountServiceAccountToken: false
      topologySpreadConstraints:
      # nodeTaintsPolicy Honor: a cordoned (tainted) node is no spread domain, so the replacement
      # of a drained pod may join its sibling on the other node
      - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, nodeTaintsPolicy: Honor,
         labelSelector: {matchLabels: {app: $APP}}}
      containers:
      - name: probe
        image: $IMAGE
        imagePullPolicy: Never
        args: ["probe"]
        env:
        - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: DRAIN_BEHAVIOR, value: "${SMOKE_DRAIN_BEHAVIOR:-drain}"}
        - {name: DRAIN_MAX_SECONDS, value: "2"}
        ports:
        - {name: hb, containerPort: 7001, protocol: TCP}
        - {name: echo, containerPort: 7002, protocol: UDP}
        - {name: http, containerPort: 7003, protocol: TCP}
        readinessProbe:
          httpGet: {path: /readyz, port: 7003}
          periodSeconds: 1
          failureThreshold: 1
        lifecycle:
          # hold the terminating pod for 3 s so its endpoint is observably serving+terminating
          preStop: {sleep: {seconds: 3}}
---
apiVersion: v1
kind: Service
metadata: {name: $APP}
spec:
  type: NodePort
  selector: {app: $APP}
  ports:
  - {name: hb, port: 7001, targetPort: 7001, protocol: TCP}
  - {name: echo, port: 7002, targetPort: 7002, protocol: UDP}
  - {name: http, port: 7003, targetPort: 7003, protocol: TCP}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: $APP}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: $APP}}
EOF
if kc -n "$NS" rollout status deployment/$APP --timeout=90s >"$WORK/rollout" 2>&1; then
  ok "deployment rolled out (2 replicas Ready)"
else
  bad "deployment did not become ready: $(tail -2 "$WORK/rollout" | tr '\n' ' ')"
  kc -n "$NS" get pods -o wide
  kc -n "$NS" describe pods | tail -40
  for n in 1 2; do echo "--- kubelet-node$n log"; tail -n 15 "$L/kubelet-node$n.log"; done
  finish
fi
pods_json() { kc -n "$NS" get pods -l app=$APP -o json; }
pod_field() { # pod jsonpath
  kc -n "$NS" get pod "$1" -o "jsonpath=$2"
}
mapfile -t PODS < <(kc -n "$NS" get pods -l app=$APP --field-selector=status.phase=Running -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
declare -A POD_NODE POD_IP
for p in "${PODS[@]}"; do POD_NODE[$p]=$(pod_field "$p" '{.spec.nodeName}'); POD_IP[$p]=$(pod_field "$p" '{.status.podIP}'); done
nodes_used=$(for p in "${PODS[@]}"; do echo "${POD_NODE[$p]}"; done | sort -u | tr '\n' ' ')
if [ "${#PODS[@]}" = 2 ] && [ "$nodes_used" = "node1 node2 " ]; then ok "one replica per node: $(for p in "${PODS[@]}"; do echo -n "$p@${POD_NODE[$p]}(${POD_IP[$p]}) "; done)"
else bad "expected one pod on each of node1/node2, got: $(for p in "${PODS[@]}"; do echo -n "$p@${POD_NODE[$p]} "; done)"; fi

CIP=$(kc -n "$NS" get svc $APP -o jsonpath='{.spec.clusterIP}')
NP_TCP=$(kc -n "$NS" get svc $APP -o jsonpath='{.spec.ports[?(@.name=="hb")].nodePort}')
NP_UDP=$(kc -n "$NS" get svc $APP -o jsonpath='{.spec.ports[?(@.name=="echo")].nodePort}')
log "service $APP: ClusterIP $CIP, NodePorts tcp $NP_TCP udp $NP_UDP"

# kube-proxy programs the rules asynchronously (minSyncPeriod): wait until the ClusterIP answers
poll 20 $CLIENT tcp "$CIP" 7001 >/dev/null 2>&1

# pod IPs (both bridges), TCP + UDP + HTTP; the instance must be the pod's own name
for p in "${PODS[@]}"; do
  ip=${POD_IP[$p]}
  check "pod IP $ip ($p, ${POD_NODE[$p]}) TCP heartbeats" bash -c "[ \"\$($CLIENT tcp2 $ip 7001)\" = $p ]"
  check "pod IP $ip ($p) UDP ping/ack" bash -c "[ \"\$($CLIENT udp $ip 7002)\" = $p ]"
  check "pod IP $ip ($p) HTTP /readyz" $CLIENT http "$ip" 7003 /readyz
done
# ClusterIP: TCP until both instances answered, and UDP
seen_all() { # proto host port: both pods answer within 30 tries
  local proto=$1 host=$2 port=$3 i inst seen=""
  for i in $(seq 1 30); do
    inst=$($CLIENT "$proto" "$host" "$port" 2>/dev/null) || continue
    grep -qxF "$inst" <<<"$seen" || seen="$seen$inst"$'\n'
    [ "$(grep -c . <<<"$seen")" -ge 2 ] && { echo "$(echo $seen)"; return 0; }
  done
  echo "only saw: $(echo $seen)"; return 1
}
check "ClusterIP $CIP:7001 TCP reaches both replicas" seen_all tcp "$CIP" 7001
check "ClusterIP $CIP:7002 UDP ping/ack" $CLIENT udp "$CIP" 7002
check "ClusterIP $CIP:7003 HTTP /readyz" $CLIENT http "$CIP" 7003 /readyz
for n in 1 2; do
  nip=$(node_ip $n)
  check "NodePort $nip:$NP_TCP TCP heartbeats" $CLIENT tcp2 "$nip" "$NP_TCP"
  check "NodePort $nip:$NP_UDP UDP ping/ack" $CLIENT udp "$nip" "$NP_UDP"
done

# pods: routes only to the cluster ranges (no default route), and no nameserver
routes_ok=1
for p in "${PODS[@]}"; do
  ip=${POD_IP[$p]}
  netns=""
  for ns in $(ip netns list | awk '{print $1}' | grep '^cni-'); do
    ip -n "$ns" -4 addr show 2>/dev/null | grep "inet $ip/" >/dev/null && { netns=$ns; break; }
  done
  if [ -z "$netns" ]; then bad "netns of pod $p ($ip) not found"; routes_ok=0; continue; fi
  r=$(ip -n "$netns" -4 route show | awk '{print $1}' | sort | tr '\n' ' ')
  want=$(printf '%s\n' "$SERVICE_CIDR" "$POD_CIDR" "$NODE_NET" "$(node_subnet "${POD_NODE[$p]#node}")" | sort | tr '\n' ' ')
  if [ "$r" != "$want" ]; then bad "pod $p routes: '$r' (want '$want')"; routes_ok=0; fi
done
[ "$routes_ok" = 1 ] && ok "pods route only the cluster ranges ($SERVICE_CIDR $POD_CIDR $NODE_NET + own subnet), no default route"
# (with no resolver the runtime writes 'nameserver 127.0.0.1': the pod's own loopback, which is fine)
resolv_bad=$(find "$S" "$R" -path '*sandboxes*' -name resolv.conf -exec grep -HE '^nameserver' {} + 2>/dev/null \
  | grep -vE ':nameserver[[:space:]]+(127\.[0-9.]+|::1)[[:space:]]*$')
nres=$(find "$S" "$R" -path '*sandboxes*' -name resolv.conf 2>/dev/null | wc -l)
if [ -z "$resolv_bad" ] && [ "$nres" -gt 0 ]; then ok "pod sandboxes' resolv.conf ($nres) name no resolver outside the pod"
else bad "pod resolv.conf with a reachable nameserver (or none found: $nres): $resolv_bad"; fi

# ---------------------------------------------------------------------------------------------
# 3. drain node1, watched through the EndpointSlice API
OLD=""; for p in "${PODS[@]}"; do [ "${POD_NODE[$p]}" = node1 ] && OLD=$p; done
RV=$(kc get --raw "/apis/discovery.k8s.io/v1/namespaces/$NS/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3D$APP" \
     | python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["resourceVersion"])')
# a raw watch (not `get -w -o jsonpath`, which stops when .endpoints becomes null); one JSON event
# per line, each stamped with the host's receive time
"$K8S_BIN/kubectl" --kubeconfig "$ADMIN_KUBECONFIG" --cache-dir "$S/kubectl-cache" get --raw \
  "/apis/discovery.k8s.io/v1/namespaces/$NS/endpointslices?watch=1&allowWatchBookmarks=false&resourceVersion=$RV&timeoutSeconds=180&labelSelector=kubernetes.io%2Fservice-name%3D$APP" \
  2>"$WORK/watch.err" | while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N)" "$line"; done > "$WORK/watch" &
WATCH_PID=$!
T_DRAIN=$(date +%s.%N)
log "draining node1 (evicts $OLD)"
# --pod-selector: only our pods are evicted (others may share this cluster)
if kc drain node1 --pod-selector="app=$APP" --ignore-daemonsets --delete-emptydir-data --timeout=120s >"$WORK/drain" 2>&1; then
  ok "kubectl drain node1 completed in $(awk -v a="$T_DRAIN" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')s"
else bad "kubectl drain node1 failed: $(tail -3 "$WORK/drain" | tr '\n' ' ')"; fi

analyze() { # reads the watch log; prints a summary; exit 0 when every expectation was seen
  python3 - "$WORK/watch" "$OLD" "$T_DRAIN" "${PODS[@]}" <<'PY'
import json, sys
path, old, t0 = sys.argv[1], sys.argv[2], float(sys.argv[3])
terminating = replacement = gone = None
before = set(sys.argv[4:])  # the pods that existed before the drain started
final = {}
for line in open(path):
    ts, _, js = line.partition(" ")
    try:
        ev = json.loads(js)
    except ValueError:
        continue
    t = float(ts) - t0
    obj = ev.get("object", {})
    final[obj.get("metadata", {}).get("name")] = obj.get("endpoints") or []
    for ep in obj.get("endpoints") or []:
        name = (ep.get("targetRef") or {}).get("name")
        c = ep.get("conditions") or {}
        if (name == old and terminating is None and c.get("ready") is False
                and c.get("serving") is True and c.get("terminating") is True):
            terminating = t
        if (replacement is None and name != old and name not in before and ep.get("nodeName") == "node2"
                and c.get("ready") is True):
            replacement = (t, name)
    names = {(ep.get("targetRef") or {}).get("name") for eps in final.values() for ep in eps}
    if terminating is not None and gone is None and old not in names:
        gone = t
def fmt(x):
    return "not seen" if x is None else f"+{x:.2f}s"
print(f"old endpoint {old} ready=false serving=true terminating=true: {fmt(terminating)}; "
      f"replacement ready on node2: {fmt(replacement[0]) + ' (' + replacement[1] + ')' if replacement else 'not seen'}; "
      f"old endpoint removed: {fmt(gone)}")
sys.exit(0 if terminating is not None and replacement and gone is not None else 1)
PY
}
if poll 60 analyze >/dev/null 2>&1; then ok "EndpointSlice watch: $(analyze)"
else
  bad "EndpointSlice watch: $(analyze)"
  echo "--- watch events (conditions only):"
  python3 -c '
import json,sys
for l in open(sys.argv[1]):
    ts,_,js=l.partition(" ")
    try: e=json.loads(js)
    except ValueError: print("  (unparsable)", js[:200]); continue
    print(" ", ts, e.get("type"), [( (x.get("targetRef") or {}).get("name"), x.get("nodeName"), x.get("conditions")) for x in (e.get("object",{}).get("endpoints") or [])])
' "$WORK/watch"
  cat "$WORK/watch.err"
fi
kill "$WATCH_PID" 2>/dev/null; WATCH_PID=""

NEW=$(kc -n "$NS" get pods -l app=$APP -o jsonpath='{range .items[?(@.spec.nodeName=="node2")]}{.metadata.name}{" "}{end}')
check "both replicas now on node2 ($NEW)" bash -c "[ \$(wc -w <<<'$NEW') = 2 ]"
check "ClusterIP $CIP:7001 still serves after the drain" $CLIENT tcp "$CIP" 7001

# ---------------------------------------------------------------------------------------------
# 4. teardown and a clean machine (or leave the cluster up)
if [ "${KEEP_CLUSTER:-0}" = 1 ]; then
  kc uncordon node1 >/dev/null
  kc delete namespace "$NS" --wait=false >/dev/null
  log "KEEP_CLUSTER=1: node1 uncordoned, namespace $NS deleting; cluster left up"
else
  cp "$S/sysctl-before.txt" "$WORK/sysctl-before.txt" 2>/dev/null
  t=$(date +%s.%N)
  if "$LC_DIR/down.sh" > "$WORK/down" 2>&1; then
    ok "cluster-down in $(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')s"
  else bad "cluster-down failed: $(tail -3 "$WORK/down" | tr '\n' ' ')"; fi
  if out=$("$E2E_DIR/assert-clean.sh" "$WORK/sysctl-before.txt" 2>&1); then ok "machine clean after teardown"
  else bad "machine not clean after teardown:"$'\n'"$out"; fi
fi
finish
