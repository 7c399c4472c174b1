#!/bin/bash
# 9k+9k on loopback, perf-record the probe (and client) across the exit-now SIGTERM burst only.
set -u
B=/var/cache/drainwatch/cargo-target/release/drainwatch
D=/tmp/prof/burst; rm -rf $D; mkdir -p $D
export DRAIN_BEHAVIOR=exit-now DRAIN_MAX_SECONDS=1 PROBE_TCP_PORT=47001 PROBE_UDP_PORT=47002 PROBE_READY_PORT=47003 POD_NAME=bench PROBE_BENCH=1
setsid $B probe > $D/probe.jsonl 2>&1 &
P=$!
sleep 1
setsid $B client --host 127.0.0.1 --tcp-port 47001 --udp-port 47002 --tcp-flows 9000 --udp-flows 9000 --duration 600s --events-stdout --bench-stats > $D/client.jsonl 2> $D/client.err &
C=$!
for i in $(seq 60); do grep -q "every flow carries data" $D/client.err && break; sleep 1; done
sleep 3
perf record -F 4999 -g -o $D/probe.data -p $P -- sleep 2 > /dev/null 2>&1 &
perf record -F 4999 -g -o $D/client.data -p $C -- sleep 2 > /dev/null 2>&1 &
sleep 0.5
kill -TERM $P
wait $P
sleep 2; kill -INT $C 2>/dev/null; wait
grep -c tcp_flow_reset_forced $D/probe.jsonl
