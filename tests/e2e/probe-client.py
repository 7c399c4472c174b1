#!/usr/bin/env python3
"""Minimal client for the drainwatch probe's wire contract, used by the shell e2e tests.

  probe-client.py tcp  HOST PORT       read one heartbeat 'hb <seq> <unixnano> <instance>'
  probe-client.py tcp2 HOST PORT       read two heartbeats on one connection (seq must rise)
  probe-client.py udp  HOST PORT       send 'ping <nonce>', expect 'ack <nonce> <instance>'
  probe-client.py http HOST PORT PATH  GET PATH, expect 200
  probe-client.py syn  HOST PORT       send one TCP SYN (connect with a short timeout), expect no answer

Prints the answering instance (or the HTTP status) on stdout; exits 1 with a reason on stderr.
Every operation is bounded by --timeout (default 3 s) and is sent only where it is told.
"""
import os
import re
import socket
import sys
import time
import urllib.request

HB = re.compile(r"^hb (\d+) (\d+) (\S+)$")


def fail(msg):
    print(msg, file=sys.stderr)
    sys.exit(1)


def read_line(f):
    line = f.readline()
    if not line:
        fail("connection closed before a heartbeat line")
    return line.decode("utf-8", "replace").rstrip("\n")


def tcp(host, port, timeout, count):
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.settimeout(timeout)
        f = s.makefile("rb")
        seqs, inst = [], None
        for _ in range(count):
            line = read_line(f)
            m = HB.match(line)
            if not m:
                fail(f"not a heartbeat line: {line!r}")
            seqs.append(int(m.group(1)))
            nanos = int(m.group(2))
            if abs(nanos / 1e9 - time.time()) > 60:
                fail(f"heartbeat timestamp far from now: {line!r}")
            if inst is not None and m.group(3) != inst:
                fail(f"instance changed on one connection: {inst} -> {m.group(3)}")
            inst = m.group(3)
        if seqs != sorted(seqs) or len(set(seqs)) != len(seqs):
            fail(f"heartbeat sequence does not rise: {seqs}")
        print(inst)


def udp(host, port, timeout):
    nonce = os.urandom(4).hex()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout / 3)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:  # UDP may drop; at most 3 tries in the timeout
            s.sendto(f"ping {nonce}".encode(), (host, port))
            try:
                data, _ = s.recvfrom(2048)
            except socket.timeout:
                continue
            parts = data.decode("utf-8", "replace").strip().split()
            if len(parts) >= 3 and parts[0] == "ack" and parts[1] == nonce:
                print(parts[2])
                return
            fail(f"unexpected UDP answer: {data!r}")
        fail("no UDP answer")


def http(host, port, path, timeout):
    try:
        with urllib.request.urlopen(f"http://{host}:{port}{path}", timeout=timeout) as r:
            print(r.status)
            if r.status != 200:
                sys.exit(1)
    except Exception as e:  # noqa: BLE001 - report whatever went wrong
        fail(f"GET {path}: {e}")


def syn(host, port, timeout):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect((host, port))
    except (socket.timeout, OSError) as e:
        print(f"no answer ({e.__class__.__name__})")
        return
    finally:
        s.close()
    fail(f"{host}:{port} answered a SYN")


def main():
    args = sys.argv[1:]
    timeout = 3.0
    if "--timeout" in args:
        i = args.index("--timeout")
        timeout = float(args[i + 1])
        del args[i : i + 2]
    if len(args) < 3:
        fail(__doc__)
    mode, host, port = args[0], args[1], int(args[2])
    if mode == "tcp":
        tcp(host, port, timeout, 1)
    elif mode == "tcp2":
        tcp(host, port, timeout, 2)
    elif mode == "udp":
        udp(host, port, timeout)
    elif mode == "http":
        http(host, port, args[3] if len(args) > 3 else "/readyz", timeout)
    elif mode == "syn":
        syn(host, port, timeout)
    else:
        fail(__doc__)


if __name__ == "__main__":
    main()
