#!/usr/bin/env python3
"""drainwatch benchmark: probe and client as separate processes on loopback (issue 8).

For each scale (N TCP + N UDP flows), behaviour (exit-now: RST, drain: FIN) and repeat:
start a PROBE_BENCH probe and a `client --bench-stats --events-stdout`, wait until every
flow carries data, measure CPU (utime+stime from /proc/<pid>/stat) over a steady window,
end the client's measuring window (SIGUSR2), read peak RSS (VmHWM), close single flows
(SIGUSR1 to the probe, one at a time), then close all of them at once (SIGTERM), and pair
the probe's close lines with the client's terminal lines by the client's local port.

Everything is CLOCK_MONOTONIC on one host, so probe and client times subtract directly.
Only the standard library is used, so `make bench` runs from a fresh clone.
"""

import argparse
import datetime
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")
TCP_TERMINAL = {"flow_eof", "flow_socket_error", "flow_read_timeout"}


def free_port(kind):
    s = socket.socket(socket.AF_INET, kind)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def cpu_seconds(pid):
    """user+sys of the whole process (all threads, living and exited), from the kernel."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def vm_hwm_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def wait_for(pred, limit, step=0.05):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return None


def read_json_lines(path):
    out = []
    with open(path, errors="replace") as f:
        for raw in f:
            raw = raw.strip()
            if raw.startswith("{"):
                try:
                    out.append(json.loads(raw))
                except json.JSONDecodeError:
                    pass
    return out


def file_has(path, needle):
    try:
        with open(path, errors="replace") as f:
            return needle in f.read()
    except FileNotFoundError:
        return False


def pct(values, q):
    if not values:
        return None
    v = sorted(values)
    k = max(0, min(len(v) - 1, int(-(-q * len(v) // 1)) - 1))
    return v[k]


def dist_ms(ns_values):
    ms = [x / 1e6 for x in ns_values]
    return {
        "n": len(ms),
        "p50_ms": pct(ms, 0.50),
        "p99_ms": pct(ms, 0.99),
        "max_ms": max(ms) if ms else None,
    }


def port_of(addr):
    return addr.strip().rsplit(":", 1)[-1]


def pair_closes(probe, client, single_before_ns):
    """(single latencies, burst latencies, burst facts) in ns, paired by client local port."""
    port_to_srv = {}
    closes = {}
    for e in probe:
        ev, fid = e.get("event"), e.get("flow_id")
        if ev == "tcp_accept" and fid and e.get("detail"):
            port_to_srv[port_of(e["detail"].split(" -> ")[0])] = fid
        elif fid and (
            ev == "tcp_flow_reset_forced"
            or (ev == "tcp_flow_closed" and "gracefully" in (e.get("detail") or ""))
        ):
            closes[fid] = e["mono_ns"]
    flow_port, terminal = {}, {}
    for e in client:
        ev, fid = e.get("event"), e.get("flow_id") or ""
        if not fid.startswith("tcp-"):
            continue
        if ev == "flow_connected" and (e.get("detail") or "").startswith("local="):
            flow_port[fid] = port_of(e["detail"][len("local="):])
        elif ev in TCP_TERMINAL and fid not in terminal:
            terminal[fid] = e["at_ns"]
    single, burst, burst_close, burst_term = [], [], [], []
    for fid, port in flow_port.items():
        srv = port_to_srv.get(port)
        if srv not in closes or fid not in terminal:
            continue
        c, t = closes[srv], terminal[fid]
        if c < single_before_ns:
            single.append(t - c)
        else:
            burst.append(t - c)
            burst_close.append(c)
            burst_term.append(t)
    facts = {}
    if burst:
        facts = {
            "absorbed_ms": (max(burst_term) - min(burst_close)) / 1e6,
            "probe_close_spread_ms": (max(burst_close) - min(burst_close)) / 1e6,
        }
    return single, burst, facts


def slices(total, n):
    """(first, count) of n contiguous shares of 1..total, the first shares taking the remainder
    (as `drainwatch run --clients N` splits them)."""
    out, first = [], 1
    for i in range(n):
        c = total // n + (1 if i < total % n else 0)
        out.append((first, c))
        first += c
    return out


def merge_hist(hs):
    """Merged summary of per-client histogram summaries: counts add; each quantile is the worst
    client's, an upper bound of the merged quantile (if every client has at most 1 % of its
    samples above x, so has their union)."""
    m = {"n": sum(h["n"] for h in hs)}
    for k in hs[0]:
        if k != "n":
            m[k] = max(h[k] for h in hs)
    return m


def merge_stats(ss):
    """One bench_stats from the client processes' (exact when there is one)."""
    if len(ss) == 1:
        return ss[0]
    nz = lambda k: [s[k] for s in ss if s[k]]
    return {
        "hb_lateness": merge_hist([s["hb_lateness"] for s in ss]),
        "udp_rtt": merge_hist([s["udp_rtt"] for s in ss]),
        "udp_sent": sum(s["udp_sent"] for s in ss),
        "udp_answered_within_interval": sum(s["udp_answered_within_interval"] for s in ss),
        "started_ns": min(nz("started_ns") or [0]),
        "dialled_ns": max(nz("dialled_ns") or [0]),
        # Every flow carries data once the last client's do.
        "carrying_ns": max(nz("carrying_ns") or [0]) if all(s["carrying_ns"] for s in ss) else 0,
        "opened_ns": min(nz("opened_ns") or [0]),
        "frozen_ns": max(nz("frozen_ns") or [0]),
    }


def one_run(a, scale, behavior, rep, workdir):
    tag = f"{scale}-{behavior}-{rep}"
    tcp, udp, ready = free_port(socket.SOCK_STREAM), free_port(socket.SOCK_DGRAM), free_port(
        socket.SOCK_STREAM
    )
    env = dict(
        os.environ,
        DRAIN_BEHAVIOR=behavior,
        DRAIN_MAX_SECONDS="1",
        PROBE_TCP_PORT=str(tcp),
        PROBE_UDP_PORT=str(udp),
        PROBE_READY_PORT=str(ready),
        POD_NAME="bench",
        PROBE_BENCH="1",
    )
    p_out = os.path.join(workdir, f"{tag}.probe.jsonl")
    # One client process, or --clients N of them each holding a contiguous slice of the ids.
    shards = list(zip(slices(scale, a.clients), slices(scale, a.clients)))
    c_outs = [os.path.join(workdir, f"{tag}.client{'' if a.clients == 1 else f'-{i + 1}'}.jsonl") for i in range(a.clients)]
    c_errs = [p[: -len(".jsonl")] + ".err" for p in c_outs]
    load_before = loadavg()
    def prio():
        # Its own session, hence its own scheduler autogroup (sched_autogroup_enabled): the
        # process gets a fair share of the CPU rather than a slice of this shell's group.
        os.setsid()
        if a.nice is not None:
            with open("/proc/self/autogroup", "w") as f:
                f.write(str(a.nice))

    probe = subprocess.Popen([a.bin, "probe"], env=env, preexec_fn=prio, stdout=open(p_out, "w"), stderr=subprocess.STDOUT)
    if not wait_for(lambda: file_has(p_out, '"listening"'), 10):
        probe.kill()
        raise RuntimeError(f"{tag}: probe did not start (see {p_out})")
    clients = [
        subprocess.Popen(
            [a.bin, "client", "--host", "127.0.0.1", "--tcp-port", str(tcp), "--udp-port", str(udp),
             "--tcp-flows", str(nt), "--udp-flows", str(nu),
             "--first-tcp-flow", str(ft), "--first-udp-flow", str(fu), "--duration", "600s",
             "--events-stdout", "--bench-stats"],
            stdout=open(c_out, "w"), stderr=open(c_err, "w"), preexec_fn=prio,
        )
        for ((ft, nt), (fu, nu)), c_out, c_err in zip(shards, c_outs, c_errs)
    ]
    # Summed over the client processes: their CPU and their peak RSS together.
    client_cpu = lambda: sum(cpu_seconds(c.pid) for c in clients)
    try:
        for client, c_err in zip(clients, c_errs):
            if not wait_for(lambda: file_has(c_err, "established") or client.poll() is not None, 60):
                raise RuntimeError(f"{tag}: client did not establish (see {c_err})")
            if client.poll() is not None:
                raise RuntimeError(f"{tag}: client exited early (see {c_err})")
        for c_err in c_errs:
            if not wait_for(lambda: file_has(c_err, "every flow carries data"), 60):
                raise RuntimeError(f"{tag}: not every flow carried data within 60 s (see {c_err})")
        time.sleep(a.warmup)
        for client in clients:
            client.send_signal(signal.SIGUSR2)  # opens the client's measuring window
        t0 = time.monotonic()
        cpu0 = (client_cpu(), cpu_seconds(probe.pid))
        time.sleep(a.window)
        cpu1 = (client_cpu(), cpu_seconds(probe.pid))
        t1 = time.monotonic()
        for client in clients:
            client.send_signal(signal.SIGUSR2)  # closes it
        rss = (sum(vm_hwm_kib(c.pid) for c in clients), vm_hwm_kib(probe.pid))
        for _ in range(a.singles):
            probe.send_signal(signal.SIGUSR1)
            time.sleep(a.single_gap)
        time.sleep(0.5)
        single_before = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        probe.send_signal(signal.SIGTERM)
        probe.wait(timeout=60)
        for client in clients:
            try:
                client.wait(timeout=60)
            except subprocess.TimeoutExpired:
                client.send_signal(signal.SIGINT)
                client.wait(timeout=30)
    finally:
        for proc in [probe, *clients]:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    per_client = []
    for c_err in c_errs:
        stats = None
        with open(c_err, errors="replace") as f:
            for line in f:
                if line.startswith("bench_stats "):
                    stats = json.loads(line[len("bench_stats "):])
        if stats is None:
            raise RuntimeError(f"{tag}: no bench_stats line in {c_err}")
        per_client.append(stats)
    stats = merge_stats(per_client)
    probe_lines = read_json_lines(p_out)
    client_lines = [e for c_out in c_outs for e in read_json_lines(c_out)]
    hb, rtt = stats["hb_lateness"], stats["udp_rtt"]
    single, burst, facts = pair_closes(probe_lines, client_lines, single_before)
    connected = [e["at_ns"] for e in client_lines if e.get("event") == "flow_connected"]
    window = t1 - t0
    # Counted, not nominal: a starved probe skips heartbeats, and those cost nothing.
    kilo_hb = (hb["n"] + rtt["n"]) / 1000.0
    kilo_hb_nominal = 2 * scale * window / a.interval / 1000.0
    measured_s = max(1e-9, (stats["frozen_ns"] - stats["opened_ns"]) / 1e9)
    flows_k = 2 * scale / 1000.0
    run = {
        "scale": scale,
        "clients": a.clients,
        "behavior": behavior,
        "close": "rst" if behavior == "exit-now" else "fin",
        "repeat": rep,
        "loadavg_before": load_before,
        "loadavg_after": loadavg(),
        # The last flow_connected line, not the waiter's wake-up (which coalesces changes).
        "establish_s": (max(connected) - stats["started_ns"]) / 1e9 if connected else None,
        "dialled_all": len(connected) == 2 * scale,
        "all_carrying_s": (stats["carrying_ns"] - stats["started_ns"]) / 1e9 if stats["carrying_ns"] else None,
        "hb_lateness_ms": {k.replace("_ns", "_ms"): (v / 1e6 if k != "n" else v) for k, v in hb.items()},
        "hb_received_per_s": hb["n"] / measured_s,
        "hb_expected_per_s": scale / a.interval,
        "udp_rtt_ms": {k.replace("_ns", "_ms"): (v / 1e6 if k != "n" else v) for k, v in rtt.items()},
        "udp_pings_sent": stats["udp_sent"],
        "udp_answered_within_interval": stats["udp_answered_within_interval"] / max(1, stats["udp_sent"]),
        "cpu_window_s": window,
        "client_cpu_s": cpu1[0] - cpu0[0],
        "probe_cpu_s": cpu1[1] - cpu0[1],
        "flow_heartbeats_k": kilo_hb,
        "flow_heartbeats_k_nominal": kilo_hb_nominal,
        "client_cpu_per_1k_hb": (cpu1[0] - cpu0[0]) / kilo_hb,
        "probe_cpu_per_1k_hb": (cpu1[1] - cpu0[1]) / kilo_hb,
        "client_peak_rss_mib": rss[0] / 1024,
        "probe_peak_rss_mib": rss[1] / 1024,
        "client_rss_mb_per_1k_flows": rss[0] * 1024 / 1e6 / flows_k,
        "probe_rss_mb_per_1k_flows": rss[1] * 1024 / 1e6 / flows_k,
        "single_close": dist_ms(single),
        "burst": dict(dist_ms(burst), **facts),
    }
    print(
        f"{tag}: est {run['establish_s']}s hb p99 {run['hb_lateness_ms']['p99_ms']:.2f}ms "
        f"udp<=int {run['udp_answered_within_interval']*100:.3f}% cpu/1k c {run['client_cpu_per_1k_hb']:.4f} "
        f"p {run['probe_cpu_per_1k_hb']:.4f} rss/1k c {run['client_rss_mb_per_1k_flows']:.2f} "
        f"p {run['probe_rss_mb_per_1k_flows']:.2f} single p99 {run['single_close']['p99_ms']} "
        f"burst n={run['burst']['n']} absorbed {run['burst'].get('absorbed_ms')} load {run['loadavg_after']}",
        flush=True,
    )
    return run


def spread(values):
    v = [x for x in values if x is not None]
    if not v:
        return None
    return {"median": statistics.median(v), "min": min(v), "max": max(v), "n": len(v)}


METRICS = {
    "establish_s": lambda r: r["establish_s"],
    "hb_lateness_p50_ms": lambda r: r["hb_lateness_ms"]["p50_ms"],
    "hb_lateness_p99_ms": lambda r: r["hb_lateness_ms"]["p99_ms"],
    "hb_lateness_max_ms": lambda r: r["hb_lateness_ms"]["max_ms"],
    "udp_answered_within_interval": lambda r: r["udp_answered_within_interval"],
    "udp_rtt_p99_ms": lambda r: r["udp_rtt_ms"]["p99_ms"],
    "client_cpu_per_1k_hb": lambda r: r["client_cpu_per_1k_hb"],
    "probe_cpu_per_1k_hb": lambda r: r["probe_cpu_per_1k_hb"],
    "client_rss_mb_per_1k_flows": lambda r: r["client_rss_mb_per_1k_flows"],
    "probe_rss_mb_per_1k_flows": lambda r: r["probe_rss_mb_per_1k_flows"],
}
CLOSE_METRICS = {
    "single_p50_ms": lambda r: r["single_close"]["p50_ms"],
    "single_p99_ms": lambda r: r["single_close"]["p99_ms"],
    "burst_p50_ms": lambda r: r["burst"]["p50_ms"],
    "burst_p99_ms": lambda r: r["burst"]["p99_ms"],
    "burst_absorbed_ms": lambda r: r["burst"].get("absorbed_ms"),
    "burst_probe_close_spread_ms": lambda r: r["burst"].get("probe_close_spread_ms"),
    "burst_paired": lambda r: r["burst"]["n"],
}


def summarize(runs, scales):
    out = {}
    for s in scales:
        rs = [r for r in runs if r["scale"] == s]
        row = {k: spread([f(r) for r in rs]) for k, f in METRICS.items()}
        for close in ("rst", "fin"):
            cs = [r for r in rs if r["close"] == close]
            row[close] = {k: spread([f(r) for r in cs]) for k, f in CLOSE_METRICS.items()}
        out[str(s)] = row
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--scales", default="100,1000,9000")
    ap.add_argument("--behaviors", default="exit-now,drain")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--warmup", type=float, default=3.0)
    ap.add_argument("--window", type=float, default=15.0)
    ap.add_argument("--singles", type=int, default=20)
    ap.add_argument("--single-gap", type=float, default=0.1)
    ap.add_argument("--nice", type=int, default=None,
                    help="nice value of the probe's and the client's autogroups (default: left at 0)")
    ap.add_argument("--interval", type=float, default=0.5, help="the client's ping interval (s)")
    ap.add_argument("--clients", type=int, default=1,
                    help="client processes sharing each scale's flows (contiguous id slices, as run --clients N); "
                         "CPU and RSS are summed over them, lateness quantiles are the worst client's")
    a = ap.parse_args()
    if a.clients < 1:
        ap.error("--clients must be at least 1")
    for s in (int(x) for x in a.scales.split(",")):
        if s < a.clients:
            ap.error(f"--clients {a.clients} is more than the {s} flows per protocol of scale {s}")
    os.makedirs(a.out, exist_ok=True)
    workdir = os.path.join(a.out, "raw")
    os.makedirs(workdir, exist_ok=True)
    scales = [int(x) for x in a.scales.split(",")]
    runs = []
    for s in scales:
        for rep in range(1, a.repeats + 1):
            for b in a.behaviors.split(","):
                runs.append(one_run(a, s, b, rep, workdir))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    doc = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": commit,
        "machine": {"cpus": os.cpu_count(), "kernel": os.uname().release},
        "method": {
            "warmup_s": a.warmup, "cpu_window_s": a.window, "single_closes_per_run": a.singles,
            "single_gap_s": a.single_gap, "interval_s": a.interval, "nice": a.nice,
            "clients": a.clients,
            "flow_heartbeats": "TCP heartbeats received + UDP ping/ack pairs completed in the client's window (SIGUSR2 .. SIGUSR2, which brackets the CPU window)",
            "scheduling": "probe and client each in their own session (own scheduler autogroup)",
            "histograms": "client-side log-linear, 1/16 resolution, quantile = bucket upper bound",
        },
        "summary": summarize(runs, scales),
        "runs": runs,
    }
    path = os.path.join(a.out, "bench.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
