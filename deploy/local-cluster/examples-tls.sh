#!/usr/bin/env bash
# `make examples-apply` (first step): the examples' TLS certificate. Generates once, with
# openssl, a CA and a server certificate signed by it, and applies them as the Secret
# examples-tls in namespace drainwatch-examples (keys tls.crt, tls.key, ca.crt), which ws-good
# (and grpc-good) mount at TLS_DIR=/tls and serve on TLS_PORT=8443. Idempotent: the files are
# kept under $DRAINWATCH_CLUSTER_DIR/examples-tls/ and reused while they cover every name below;
# the Secret is re-applied each time. The CA is also written to
# $DRAINWATCH_CLUSTER_DIR/examples-ca.crt (default /var/lib/drainwatch-cluster/examples-ca.crt),
# the file to pass to `drainwatch run --target … --tls --ca-file`.
#
# SANs: *.drainwatch-examples.svc, *.drainwatch-examples.svc.cluster.local,
# *.drainwatch-examples and the bare Service names (ws-good, grpc-good, …).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

NS=drainwatch-examples
SECRET=examples-tls
DIR=$S/examples-tls
CA_OUT=$S/examples-ca.crt
NAMES=(ws-good ws-bad grpc-good grpc-bad good-shutdown bad-shutdown)
SANS="DNS:*.$NS.svc,DNS:*.$NS.svc.cluster.local,DNS:*.$NS"
for n in "${NAMES[@]}"; do SANS="$SANS,DNS:$n"; done

command -v openssl >/dev/null || die "openssl is needed to generate the examples' certificate (apt-get -o DPkg::Lock::Timeout=600 install openssl)"
[ -f "$ADMIN_KUBECONFIG" ] || die "no $ADMIN_KUBECONFIG: is the local cluster up (make cluster-up)?"

# covers: the server certificate is there, signed by our CA, and names every SAN above.
covers() {
  [ -f "$DIR/ca.crt" ] && [ -f "$DIR/tls.crt" ] && [ -f "$DIR/tls.key" ] || return 1
  openssl verify -CAfile "$DIR/ca.crt" "$DIR/tls.crt" >/dev/null 2>&1 || return 1
  openssl x509 -in "$DIR/tls.crt" -noout -checkend 86400 >/dev/null || return 1
  local have
  have=$(openssl x509 -in "$DIR/tls.crt" -noout -ext subjectAltName 2>/dev/null | tail -n +2 | tr -d ' ')
  [ "$have" = "$SANS" ]
}

mkdir -p "$DIR"
chmod 700 "$DIR"
if covers; then
  log "reusing the examples' certificate in $DIR"
else
  log "generating the examples' CA and server certificate in $DIR"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$tmp/ca.key" 2>/dev/null
  openssl req -x509 -new -key "$tmp/ca.key" -sha256 -days 3650 -subj "/CN=drainwatch examples CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out "$tmp/ca.crt"
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$tmp/tls.key" 2>/dev/null
  openssl req -new -key "$tmp/tls.key" -subj "/CN=ws-good.$NS.svc" -out "$tmp/tls.csr"
  printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=%s\n' \
    "$SANS" >"$tmp/ext.cnf"
  openssl x509 -req -in "$tmp/tls.csr" -CA "$tmp/ca.crt" -CAkey "$tmp/ca.key" -CAcreateserial \
    -days 3650 -sha256 -extfile "$tmp/ext.cnf" -out "$tmp/tls.crt" 2>/dev/null
  install -m 600 "$tmp/ca.key" "$tmp/tls.key" "$DIR/"
  install -m 644 "$tmp/ca.crt" "$tmp/tls.crt" "$DIR/"
  covers || die "the generated certificate does not verify against its CA or lacks a SAN"
fi
install -m 644 "$DIR/ca.crt" "$CA_OUT"

kc apply -f "$REPO_ROOT/examples/k8s/namespace.yaml" >/dev/null
kc -n "$NS" create secret generic "$SECRET" --type kubernetes.io/tls \
  --from-file=tls.crt="$DIR/tls.crt" --from-file=tls.key="$DIR/tls.key" --from-file=ca.crt="$DIR/ca.crt" \
  --dry-run=client -o yaml | kc apply -f - >/dev/null
kc -n "$NS" label secret "$SECRET" --overwrite app.kubernetes.io/part-of=drainwatch-examples >/dev/null
log "secret $NS/$SECRET applied (tls.crt, tls.key, ca.crt); CA for --ca-file: $CA_OUT"
