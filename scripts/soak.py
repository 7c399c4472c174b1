#!/usr/bin/env python3
"""`make soak N=50` (issue 18): many trials on the running local cluster, in two parts.

Part A: N separate `drainwatch run` processes cycling through behaviours and triggers (probe:
drain, exit-now, ignore x delete, evict, scale; attach: rollout-restart and drain-node on the
example good-shutdown). Before the soak the machine and the cluster are snapshot; after every run
the same snapshot is taken again, repeatedly until it equals the first (the kubelet, kube-proxy
and the namespace controller finish their part asynchronously) or SETTLE_S has passed: then the
differences are leaks, and the soak fails naming them.

Part B: one `drainwatch run --policy` process making N trials (a generated policy whose arms mix
the same combos with `repeat`), its RSS (VmRSS) and open fds (entries of /proc/PID/fd) sampled
when each trial's report.json appears; soak_check.growth decides whether they grew. Then the
same leak check as after each run of part A.

It neither brings the cluster up nor down: without a reachable cluster it stops before any trial
(exit 2). Results: OUT/soak.csv and soak.json (one row per trial), OUT/summary.md, OUT/soak.cmd,
OUT/policy.toml; every trial's run directory under OUT/raw/ (not committed: the figures are).
Exit 0: every trial wrote its report with an expected exit code, nothing left behind, no growth;
1: a leak, growth or a missing report; 2: the soak could not run. Standard library only.
"""

import argparse
import csv
import datetime
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys
import time

import soak_check as sc

CLUSTER_STATE = "/var/lib/drainwatch-cluster"
CLUSTER_RUN = "/run/drainwatch-cluster"
CLUSTER_LOG = "/var/log/drainwatch-cluster"
MARK = "DRAINWATCH_SOAK"
SETTLE_S = 120
POLL_S = 0.05


def die(msg):
    """The soak could not run: exit 2 (a failed soak exits 1)."""
    print(f"soak: {msg}", file=sys.stderr, flush=True)
    sys.exit(2)


def log(msg):
    print(f"[soak {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Cluster:
    def __init__(self, kubectl, kubeconfig):
        self.base = [kubectl, "--kubeconfig", kubeconfig, "--request-timeout=20s"]

    def run(self, *args, check=True):
        p = subprocess.run(self.base + list(args), capture_output=True, text=True, timeout=60)
        if check and p.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {p.stderr.strip() or p.stdout.strip()}")
        return p

    def json(self, *args):
        return json.loads(self.run(*args, "-o", "json").stdout)


def preflight(cluster, args):
    """Stops with a clear message when what the soak needs is not there."""
    if not pathlib.Path(args.kubeconfig).is_file():
        die(f"no kubeconfig at {args.kubeconfig}: the local cluster is not up "
                 "(make cluster-up; the soak never brings it up or down itself)")
    if not os.access(args.bin, os.X_OK):
        die(f"no drainwatch binary at {args.bin} (make build)")
    try:
        ready = cluster.run("get", "--raw", "/readyz", check=False)
        if ready.returncode != 0:
            die(f"the cluster of {args.kubeconfig} is not ready: {ready.stderr.strip()}")
        nodes = cluster.json("get", "nodes")["items"]
        dep = cluster.run("get", "-n", sc.ATTACH_NAMESPACE, sc.ATTACH_TARGET, check=False)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        die(f"the cluster of {args.kubeconfig} does not answer: {e}")
    ready_nodes = [n["metadata"]["name"] for n in nodes
                   if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions", []))
                   and not n["spec"].get("unschedulable")]
    if len(ready_nodes) < 2:
        die(f"{len(ready_nodes)} schedulable Ready node(s) ({', '.join(ready_nodes)}); "
                 "drain-node trials need two")
    if dep.returncode != 0:
        die(f"{sc.ATTACH_TARGET} is not in namespace {sc.ATTACH_NAMESPACE} "
                 "(make examples-apply): " + dep.stderr.strip())
    return ready_nodes


# --- the snapshot -----------------------------------------------------------------------------

def ours(pid, exe, cgroup):
    """A process of the soak's runs: it carries the soak's environment mark (the orchestrator's
    host children keep it, orphaned or not), or it is drainwatch running in a pod of the cluster
    (a probe or client container: our binary in the cluster's cgroups)."""
    try:
        env = pathlib.Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        env = b""
    if f"{MARK}=".encode() in env:
        return True
    return os.path.basename(exe).startswith("drainwatch") and "/drainwatch-node" in cgroup


def processes():
    procs, shims = [], []
    me = os.getpid()
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == me:
            continue
        try:
            exe = os.readlink(f"/proc/{d}/exe")
            cmd = pathlib.Path(f"/proc/{d}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            cgroup = pathlib.Path(f"/proc/{d}/cgroup").read_text(errors="replace")
        except OSError:
            continue
        if os.path.basename(exe).startswith("containerd-shim") and CLUSTER_RUN in cmd:
            shims.append("containerd-shim of the cluster")
        elif ours(d, exe, cgroup):
            procs.append(f"pid {d} {cmd[:160]}")
    return procs, shims


def command(*argv):
    p = subprocess.run(list(argv), capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {p.stderr.strip()}")
    return p.stdout


def cluster_mounts():
    """The mounts under the cluster's state, run and log directories and the pods' netns files:
    every mount a pod or container brings. Others on this shared machine (other checkouts'
    loopback tests mount tmpfs as a full --out) are not ours; drainwatch itself mounts nothing."""
    keep = (CLUSTER_STATE, CLUSTER_RUN, CLUSTER_LOG, "/run/netns/")
    return "\n".join(line for line in pathlib.Path("/proc/self/mounts").read_text().splitlines()
                     if len(line.split()) > 2 and line.split()[1].startswith(keep))


def bridge_links():
    """One entry per veth enslaved to a cluster bridge (dwcniN): a pod's network end."""
    out = command("ip", "-o", "link", "show", "type", "veth")
    return ["veth on a cluster bridge" for line in out.splitlines() if re.search(r"master dwcni\d+", line)]


def snapshot(cluster, state_dir):
    nsn = cluster.json("get", "namespaces,nodes")["items"]
    pods = cluster.json("get", "pods", "-A")["items"]
    workloads = cluster.json("get", "deployments,statefulsets", "-n", sc.ATTACH_NAMESPACE)["items"]
    managed = cluster.json("get", "namespaces,pods,deployments,services,poddisruptionbudgets,configmaps",
                           "-A", "-l", "app.kubernetes.io/managed-by=drainwatch")["items"]
    procs, shims = processes()
    jdir = pathlib.Path(state_dir) / "journal"
    return {
        "namespaces": [o["metadata"]["name"] for o in nsn if o["kind"] == "Namespace"],
        "nodes": {o["metadata"]["name"]: "unschedulable={} taints={}".format(
            bool(o["spec"].get("unschedulable")),
            sorted(t["key"] for t in o["spec"].get("taints", [])))
            for o in nsn if o["kind"] == "Node"},
        "managed": [f"{o['kind']} {o['metadata'].get('namespace', '')}/{o['metadata']['name']}" for o in managed],
        "workloads": {f"{o['kind'].lower()}/{o['metadata']['name']}": "replicas={} ready={} updated={}".format(
            o["spec"].get("replicas"), o["status"].get("readyReplicas", 0), o["status"].get("updatedReplicas", 0))
            for o in workloads},
        "deletion_cost": sc.pod_shape(sorted(
            f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in pods
            if "controller.kubernetes.io/pod-deletion-cost" in (p["metadata"].get("annotations") or {}))),
        "processes": procs,
        "shims": shims,
        "iptables": command("iptables-save"),
        "ip6tables": command("ip6tables-save"),
        "mounts": cluster_mounts(),
        "links": bridge_links(),
        "journals": sorted(p.name for p in jdir.iterdir()) if jdir.is_dir() else [],
        "pods": len(pods),
    }


def settle(cluster, state_dir, base):
    """Snapshots until nothing differs from `base` or SETTLE_S passed: (seconds, leaks)."""
    t0 = time.monotonic()
    while True:
        found = sc.leaks(base, snapshot(cluster, state_dir))
        waited = time.monotonic() - t0
        if not found or waited > SETTLE_S:
            return round(waited, 1), found
        time.sleep(2)


# --- the runs ---------------------------------------------------------------------------------

def common_flags(args):
    return ["--kubeconfig", args.kubeconfig, "--image", args.image, "--settle-seconds", str(args.settle),
            "--post-terminal-grace", str(args.post_terminal_grace)]


def environment(args):
    env = dict(os.environ, DRAINWATCH_STATE_DIR=args.state_dir)
    env[MARK] = "1"
    return env


def read_report(path):
    try:
        return json.loads(pathlib.Path(path).read_text())
    except (OSError, ValueError):
        return None


def part_a(cluster, args, base, rows):
    failed = False
    for i, combo in enumerate(sc.schedule(args.n), 1):
        name = sc.combo_name(combo)
        out = pathlib.Path(args.out, "raw", "A", f"{i:03d}-{name}")
        argv = [args.bin, "run", *common_flags(args), *sc.run_flags(i, combo, args.grace), "--out", str(out)]
        log(f"A {i}/{args.n} {name}: {shlex.join(argv[1:])}")
        out.parent.mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        with open(f"{out}.stdout", "w") as so, open(f"{out}.stderr", "w") as se:
            rc = subprocess.run(argv, stdout=so, stderr=se, env=environment(args)).returncode
        wall = time.monotonic() - t0
        report = read_report(out / "report.json")
        waited, found = settle(cluster, args.state_dir, base)
        problems = []
        if report is None:
            problems.append("no report.json")
        if rc != 0:
            problems.append(f"exit {rc} (expected 0: no thresholds)")
        problems += [f"left behind: {x}" for x in found]
        rows.append({
            "part": "A", "index": i, "arm": name, "mode": combo[0], "behavior": combo[1] or "",
            "trigger": combo[2], "client": sc.client_placement(i, combo), "wall_s": round(wall, 1), "exit_code": rc,
            "outcome": sc.outcome_summary(report) if report else "no report",
            "run_id": (report or {}).get("environment", {}).get("run_id", ""),
            "settle_s": waited, "rss_kib": "", "fds": "", "problems": " | ".join(problems),
        })
        log(f"A {i}/{args.n} {name}: exit {rc}, {wall:.1f}s, clean after {waited}s"
            + ("" if not problems else f"; PROBLEMS: {' | '.join(problems)}"))
        failed |= bool(problems)
    return not failed


def status(pid):
    """(VmRSS KiB, open fds) of a live process, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        return rss, len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, StopIteration):
        return None


def report_paths(out, n):
    """Where each trial of the long run writes its report.json, in trial order."""
    paths = []
    for combo, repeat in sc.arm_repeats(n):
        arm = out / sc.combo_name(combo)
        paths += [arm / "report.json"] if repeat == 1 else [arm / f"trial-{t:03d}" / "report.json" for t in range(1, repeat + 1)]
    return paths


def part_b(cluster, args, base, rows):
    policy = pathlib.Path(args.out, "policy.toml")
    policy.write_text(sc.policy_toml(args.n, args.grace))
    out = pathlib.Path(args.out, "raw", "B")
    argv = [args.bin, "run", "--policy", str(policy), *common_flags(args), "--out", str(out)]
    log(f"B: {args.n} trials in one process: {shlex.join(argv[1:])}")
    paths, arms = report_paths(out, args.n), sc.trial_arms(args.n)
    combos = {sc.combo_name(c): c for c, _ in sc.arm_repeats(args.n)}
    samples, seen = [], 0
    t0 = last = time.monotonic()
    with open(f"{out}.stdout", "w") as so, open(f"{out}.stderr", "w") as se:
        proc = subprocess.Popen(argv, stdout=so, stderr=se, env=environment(args))
        lo = hi = None
        while proc.poll() is None:
            s = status(proc.pid)
            if s is not None:
                lo = s if lo is None else (min(lo[0], s[0]), min(lo[1], s[1]))
                hi = s if hi is None else (max(hi[0], s[0]), max(hi[1], s[1]))
            if seen < len(paths) and paths[seen].is_file() and s is not None:
                now = time.monotonic()
                samples.append({"rss_kib": s[0], "fds": s[1], "wall_s": round(now - last, 1),
                                "rss_max_kib": hi[0], "fds_min": lo[1], "fds_max": hi[1]})
                log(f"B {seen + 1}/{args.n} {arms[seen]}: {now - last:.1f}s, RSS {s[0]} KiB, {s[1]} fds")
                seen, last, lo, hi = seen + 1, now, None, None
            time.sleep(POLL_S)
        rc = proc.returncode
    log(f"B: exit {rc} after {time.monotonic() - t0:.0f}s, {seen} of {args.n} trial reports seen")
    waited, found = settle(cluster, args.state_dir, base)
    problems = []
    for i, p in enumerate(paths):
        report = read_report(p)
        smp = samples[i] if i < len(samples) else {}
        combo = combos[arms[i]]
        rows.append({
            "part": "B", "index": i + 1, "arm": arms[i], "mode": combo[0], "behavior": combo[1] or "",
            "trigger": combo[2], "client": "pod", "wall_s": smp.get("wall_s", ""), "exit_code": rc,
            "outcome": sc.outcome_summary(report) if report else "no report",
            "run_id": (report or {}).get("environment", {}).get("run_id", ""),
            "settle_s": waited if i == len(paths) - 1 else "",
            "rss_kib": smp.get("rss_kib", ""), "fds": smp.get("fds", ""),
            "rss_max_kib": smp.get("rss_max_kib", ""), "fds_min": smp.get("fds_min", ""),
            "fds_max": smp.get("fds_max", ""),
            "problems": "" if report else "no report.json",
        })
        if not report:
            problems.append(f"trial {i + 1} ({arms[i]}): no report.json at {p}")
    if rc not in (0, 1):
        problems.append(f"the policy run exited {rc} (0: every threshold held, 1: one was missed)")
    if len(samples) != len(paths):
        problems.append(f"{len(samples)} samples for {len(paths)} trials (a report appeared after the process ended?)")
    ok, verdict = sc.growth([s["rss_kib"] for s in samples], [s["fds"] for s in samples], arms[:len(samples)])
    if not ok:
        problems.append("growth: " + "; ".join(verdict))
    problems += [f"left behind after the long run: {x}" for x in found]
    for p in problems:
        log(f"B PROBLEM: {p}")
    return not problems, {"exit_code": rc, "growth_ok": ok, "growth": verdict, "settle_s": waited,
                          "left_behind": found, "problems": problems}


# --- output -----------------------------------------------------------------------------------

FIELDS = ["part", "index", "arm", "mode", "behavior", "trigger", "client", "wall_s", "exit_code", "outcome",
          "run_id", "settle_s", "rss_kib", "fds", "rss_max_kib", "fds_min", "fds_max", "problems"]


def write_results(args, rows, meta):
    out = pathlib.Path(args.out)
    with open(out / "soak.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    (out / "soak.json").write_text(json.dumps({**meta, "trials": rows}, indent=1) + "\n")
    (out / "summary.md").write_text(summary_md(rows, meta))


def per_combo(rows, part):
    by = {}
    for r in rows:
        if r["part"] == part and r["wall_s"] != "":
            key = f"{r['arm']}, client {r['client']}" if part == "A" else r["arm"]
            by.setdefault(key, []).append(float(r["wall_s"]))
    return [f"| {a} | {len(v)} | {min(v):.1f} | {sorted(v)[len(v) // 2]:.1f} | {max(v):.1f} |"
            for a, v in sorted(by.items())]


def summary_md(rows, meta):
    a = [r for r in rows if r["part"] == "A"]
    b = [r for r in rows if r["part"] == "B"]
    lines = [
        f"# Soak, N={meta['n']}: {'PASSED' if meta['ok'] else 'FAILED'}", "",
        f"Command: `{meta['command']}` (started {meta['started']}, {meta['wall_min']:.1f} min in all; "
        f"drainwatch {meta['drainwatch']}, image {meta['image']}).", "",
        "Trial settings: " + meta["settings"], "",
        "## What was checked", "",
        "Before the soak the machine and the cluster were snapshot; after every run of part A, and after "
        "part B, the snapshot was taken again until it equalled the first (at most "
        f"{SETTLE_S} s: the namespace controller, kubelet and kube-proxy finish asynchronously). Compared:", "",
        "- namespaces (all), and every namespace, pod, Deployment, Service, PDB and ConfigMap labelled "
        "`app.kubernetes.io/managed-by=drainwatch`;",
        f"- processes: any carrying the soak's environment mark `{MARK}` (the orchestrator and any host child), "
        "and `drainwatch` running in the cluster's cgroups (probe and client containers); the count of the "
        "cluster's containerd shims (one per pod sandbox);",
        "- `iptables-save` and `ip6tables-save` (all tables), chain counters dropped;",
        f"- mounts under {CLUSTER_STATE}, {CLUSTER_RUN}, {CLUSTER_LOG} and /run/netns/ (other checkouts' tests "
        "mount elsewhere on this shared machine; drainwatch itself mounts nothing);",
        "- veth links enslaved to the cluster bridges (one per pod);",
        "- every node's `spec.unschedulable` and taint keys (cordons);",
        f"- every Deployment and StatefulSet in {sc.ATTACH_NAMESPACE}: replicas, ready, updated;",
        "- pods carrying `controller.kubernetes.io/pod-deletion-cost`;",
        "- the restore journals in the soak's state dir (`DRAINWATCH_STATE_DIR`): all closed (removed).", "",
        "Masked before comparing, because rollout-restart and drain-node replace the example pods "
        "(new uid, IP, container ids, maybe another node) and that churn is not drainwatch's: "
        + "; ".join(why for _p, _r, why in sc.MASKS) + ". So rules and mounts are compared as counts per "
        "shape: a leaked pod, Service or mount still shows as one more line than before. The "
        "`kubectl.kubernetes.io/restartedAt` template annotation that rollout-restart leaves is intended "
        "(removing it would roll the Deployment again) and not compared.", "",
        f"## Part A: {len(a)} separate runs", "",
        "| combo | trials | min s | median s | max s |", "|---|---|---|---|---|", *per_combo(rows, "A"), "",
        f"Exit codes: {sorted({r['exit_code'] for r in a})}; runs with a problem: "
        f"{sum(1 for r in a if r['problems'])}; settle time to a clean snapshot: "
        + (f"{min(r['settle_s'] for r in a)}..{max(r['settle_s'] for r in a)} s." if a else "-"), "",
    ]
    if b:
        g = meta.get("part_b", {})
        lines += [
            f"## Part B: {len(b)} trials in one process", "",
            f"Exit code {g.get('exit_code')}. Wall time per trial (report to report):", "",
            "| combo | trials | min s | median s | max s |", "|---|---|---|---|---|", *per_combo(rows, "B"), "",
            "RSS and open fds of the orchestrator when each trial's report.json appeared:", "",
            "| trial | arm | RSS KiB | fds | fds min..max during the trial |", "|---|---|---|---|---|",
            *[f"| {r['index']} | {r['arm']} | {r['rss_kib']} | {r['fds']} | {r.get('fds_min', '')}..{r.get('fds_max', '')} |" for r in b],
            "", "Growth verdict (" + ("no growth" if g.get("growth_ok") else "GREW") + "):", "",
            *[f"- {x}" for x in g.get("growth", [])], "",
            f"Left behind after the long run: {g.get('left_behind') or 'nothing'} (clean after {g.get('settle_s')} s).", "",
        ]
    bad = [r for r in rows if r["problems"]] + [{"part": "B", "index": "-", "arm": "-", "problems": p}
                                              for p in meta.get("part_b", {}).get("problems", [])]
    lines += ["## Problems", ""] + ([f"- {r['part']} {r['index']} {r['arm']}: {r['problems']}" for r in bad] or ["none"])
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="the drainwatch binary")
    ap.add_argument("--n", type=int, default=50, help="trials per part")
    ap.add_argument("--parts", default="AB", help="A, B or AB")
    ap.add_argument("--kubeconfig", default=f"{CLUSTER_STATE}/admin.kubeconfig")
    ap.add_argument("--kubectl", default="/var/cache/drainwatch-k8s/v1.34.4/bin/kubectl")
    ap.add_argument("--image", required=True, help="probe and client image (on the cluster's nodes)")
    ap.add_argument("--grace", type=int, default=10, help="probe trials' grace period, seconds")
    ap.add_argument("--settle", type=int, default=3, help="--settle-seconds of every trial")
    ap.add_argument("--post-terminal-grace", type=int, default=2, help="--post-terminal-grace of every trial")
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", default="", help="the command that ran this, for the record")
    args = ap.parse_args()
    if args.n < 1:
        die("N must be at least 1")
    args.out = str(pathlib.Path(args.out).resolve())
    if pathlib.Path(args.out, "soak.json").exists():
        die(f"{args.out} holds an earlier soak; remove it or give another SOAK_OUT")
    args.state_dir = str(pathlib.Path(args.out, "raw", "state"))
    cluster = Cluster(args.kubectl, args.kubeconfig)
    nodes = preflight(cluster, args)
    pathlib.Path(args.state_dir).mkdir(parents=True, exist_ok=True)
    version = subprocess.run([args.bin, "--version"], capture_output=True, text=True).stdout.strip()
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    log(f"{version}; nodes {', '.join(nodes)}; N={args.n}, parts {args.parts}; out {args.out}")
    t0 = time.monotonic()
    base = snapshot(cluster, args.state_dir)
    waited, found = settle(cluster, args.state_dir, base)
    log(f"baseline: {len(base['namespaces'])} namespaces, {base['pods']} pods, {len(base['shims'])} shims, "
        f"{sum(sc.iptables_lines(base['iptables']).values())} iptables lines, "
        f"{sum(sc.mount_lines(base['mounts']).values())} cluster mounts; stable: {not found}")
    if found:
        die(f"the cluster does not hold still before the soak (after {waited}s): {found}")
    rows, ok = [], True
    meta = {"n": args.n, "command": args.command or shlex.join(sys.argv), "started": started,
            "drainwatch": version, "image": args.image, "nodes": nodes,
            "settings": f"probe trials --grace-period {args.grace}; every trial --settle-seconds {args.settle} "
                        f"--post-terminal-grace {args.post_terminal_grace}; "
                        "part A: probe trials alternate the client between a pod and 2 host processes (--client host --clients 2), "
                        "part B: client in a pod (one flag for every arm; attach arms refuse a host client); "
                        "other flags at their defaults (10 TCP + 10 UDP flows); attach trials "
                        f"{sc.ATTACH_TARGET} in {sc.ATTACH_NAMESPACE} with its own grace period."}
    if "A" in args.parts.upper():
        ok &= part_a(cluster, args, base, rows)
    if "B" in args.parts.upper():
        b_ok, meta["part_b"] = part_b(cluster, args, base, rows)
        ok &= b_ok
    meta["ok"] = bool(ok)
    meta["wall_min"] = (time.monotonic() - t0) / 60
    write_results(args, rows, meta)
    log(f"{'PASSED' if ok else 'FAILED'} in {meta['wall_min']:.1f} min: {args.out}/summary.md")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
