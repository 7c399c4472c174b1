#!/usr/bin/env python3
"""`cargo test --no-run --message-format=json` on stdin; prints `NAME PATH` for each test
executable built (what scripts/cluster-test.sh runs under CLUSTER_TEST_BINS). Fails when none
was, so that an empty list is never taken for a built one."""
import json
import sys

found = 0
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") != "compiler-artifact" or not m.get("executable"):
        continue
    if "test" not in m["target"]["kind"]:
        continue
    print(m["target"]["name"], m["executable"])
    found += 1
if found == 0:
    sys.exit("test-executables.py: cargo reported no test executable")
