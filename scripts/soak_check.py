"""The pure half of `make soak` (scripts/soak.py): which trials run, the policy of the long run,
what counts as left behind, and what counts as growth. No I/O here, so tests/ci/test_soak.py
checks every rule without a cluster.

A snapshot is a dict of plain values (lists, dicts, strings) read from the machine and the
cluster by soak.py; `leaks(before, after)` compares two of them and names every difference.
Some state churns for reasons that are not drainwatch's: the example Deployments' pods are
replaced by rollout-restart and drain-node trials (new pod uids, container ids, pod IPs, kube-proxy
endpoint chain hashes, and possibly another node). Those identities are masked before comparing,
so the comparison becomes one of counts per shape: a leaked probe pod, Service, mount or rule
still shows as one line more than before. What is masked is listed in MASKS and in summary.md.
"""

import re
from collections import Counter

# --- what runs --------------------------------------------------------------------------------

# (mode, behaviour, trigger). Probe trials deploy drainwatch's probe in a namespace of their own;
# attach trials measure the example Deployment good-shutdown. Ordered so that any prefix mixes
# behaviours and triggers (a Latin square over the 3x3 probe combos, an attach trial after every
# three), so a short `make soak N=4` already covers each behaviour, each probe trigger and attach.
COMBOS = [
    ("probe", "drain", "delete"),
    ("probe", "exit-now", "evict"),
    ("probe", "ignore", "scale"),
    ("attach", None, "rollout-restart"),
    ("probe", "drain", "evict"),
    ("probe", "exit-now", "scale"),
    ("probe", "ignore", "delete"),
    ("attach", None, "drain-node"),
    ("probe", "drain", "scale"),
    ("probe", "exit-now", "delete"),
    ("probe", "ignore", "evict"),
]

ATTACH_TARGET = "deployment/good-shutdown"
ATTACH_NAMESPACE = "drainwatch-examples"


def combo_name(combo):
    mode, behaviour, trigger = combo
    return f"{behaviour}-{trigger}" if mode == "probe" else f"attach-{trigger}"


def schedule(n):
    """The combos of trials 1..n, cycling deterministically through COMBOS."""
    return [COMBOS[i % len(COMBOS)] for i in range(n)]


def client_placement(index, combo):
    """Where the flow client of separate trial `index` (1-based) runs: probe trials alternate
    between a pod and two `drainwatch client` child processes of the orchestrator on this host
    (so host processes and NodePort rules are checked too); COMBOS has an odd length, so every
    probe combo gets both across two cycles. Attach trials take a pod (a host client is refused)."""
    return "host" if combo[0] == "probe" and index % 2 == 0 else "pod"


def run_flags(index, combo, grace_period):
    """The `drainwatch run` flags of separate trial `index` (1-based) of `combo`."""
    mode, behaviour, trigger = combo
    if mode == "attach":
        return ["--target", ATTACH_TARGET, "--target-namespace", ATTACH_NAMESPACE, "--trigger", trigger]
    client = ["--client", "host", "--clients", "2"] if client_placement(index, combo) == "host" else ["--client", "pod"]
    return ["--drain-behavior", behaviour, "--trigger", trigger, "--grace-period", str(grace_period), *client]


# What each arm of the long run must hold: what the behaviour is known to do on this cluster, so a
# trial that misses it is a real change (the soak accepts exit 1 but reports it).
PROBE_THRESHOLDS = {
    "drain": ["tcp drained-clean-close >= 100%"],
    "exit-now": ["tcp drained-clean-close <= 0"],
    "ignore": ["tcp drained-clean-close <= 0"],
}
ATTACH_THRESHOLDS = ["no-request-failed", "no-new-connection-refused"]


def arm_repeats(n):
    """(combo, repeat) per arm of the long run: one arm per combo in COMBOS order, repeats as
    equal as they can be and summing to n; combos beyond n are left out."""
    k = min(n, len(COMBOS))
    return [(COMBOS[i], n // k + (1 if i < n % k else 0)) for i in range(k)]


def trial_arms(n):
    """The arm name of each trial of the long run, in the order the run makes them."""
    return [combo_name(c) for c, r in arm_repeats(n) for _ in range(r)]


def policy_toml(n, grace_period):
    """The policy of the long run: the arms of arm_repeats(n), `repeat` on each."""
    out = [
        "# Written by scripts/soak.py: the long run of `make soak`, one process, N trials.",
        "version = 1",
        f'description = "soak: {n} trials mixing behaviours and triggers in one process"',
    ]
    for combo, repeat in arm_repeats(n):
        mode, behaviour, trigger = combo
        out += ["", "[[arm]]", f'name = "{combo_name(combo)}"']
        if mode == "attach":
            out += [
                f'target = "{ATTACH_TARGET}"',
                f'target-namespace = "{ATTACH_NAMESPACE}"',
                f'trigger = "{trigger}"',
                f"repeat = {repeat}",
                "thresholds = [" + ", ".join(f'"{t}"' for t in ATTACH_THRESHOLDS) + "]",
            ]
        else:
            out += [
                f'behavior = "{behaviour}"',
                f'trigger = "{trigger}"',
                f"grace-period-seconds = {grace_period}",
                f"repeat = {repeat}",
                "thresholds = [" + ", ".join(f'"{t}"' for t in PROBE_THRESHOLDS[behaviour]) + "]",
            ]
    return "\n".join(out) + "\n"


def outcome_summary(report):
    """One short line of what a trial's report.json says happened."""
    t = report.get("trial", {})
    status = t.get("status", "?")
    a = t.get("attach")
    if a:
        req, con = a.get("requests", {}), a.get("connections", {})
        return (
            f"{status}; requests {req.get('ok')}/{req.get('total')} ok, "
            f"connections severed {con.get('severed')}/{con.get('total')}"
        )
    s = t.get("summary", {})
    parts = [status]
    for proto in ("tcp", "udp"):
        p = s.get(proto) or {}
        if p.get("total"):
            parts.append(
                f"{proto} {p.get('drained')} drained, {p.get('severed')} severed, "
                f"{p.get('survived_window')} survived, {p.get('not_measured')} not-measured of {p.get('total')}"
            )
    return "; ".join(parts)


# --- what is left behind ----------------------------------------------------------------------

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"

# (pattern, replacement, why): identities that change when the example pods are replaced.
MASKS = [
    (re.compile(r"\b10\.244\.\d+\.\d+"), "POD-IP", "pod IPs (the pod CIDR 10.244.0.0/16)"),
    (re.compile(r"\bKUBE-(SEP|SVC|FW|EXT|XLB|SVL)-[A-Z0-9]{16}\b"), r"KUBE-\1-HASH",
     "kube-proxy chain names (hashes of service port and endpoint)"),
    (re.compile(r"\bCNI-[0-9a-f]{24}\b"), "CNI-HASH", "the CNI bridge plugin's per-pod chain names"),
    (re.compile(r'id: "[0-9a-f]{64}"'), 'id: "CONTAINER"', "container ids in CNI rule comments"),
    (re.compile(UUID), "UUID", "pod uids and netns names"),
    (re.compile(r"\b[0-9a-f]{64}\b"), "CONTAINER", "container and sandbox ids"),
    (re.compile(r"\bnode\d+\b"), "nodeN",
     "which node (its kubelet and containerd dirs, its CNI network name): pods move between nodes"),
    (re.compile(r"/snapshots/\d+/"), "/snapshots/N/", "containerd snapshot numbers"),
]


def mask(line):
    for pattern, repl, _why in MASKS:
        line = pattern.sub(repl, line)
    return line


def iptables_lines(save_output):
    """The rules and chains of `iptables-save` output as a multiset of masked lines: comments,
    table headers' COMMIT and chain counters dropped (counters change with every packet)."""
    out = Counter()
    for raw in save_output.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or line == "COMMIT":
            continue
        if line.startswith(":"):
            line = re.sub(r"\s*\[\d+:\d+\]$", "", line)
        out[mask(line)] += 1
    return out


def mount_lines(proc_mounts):
    """The mounts of /proc/mounts as a multiset of masked "fstype mountpoint" (device and options
    carry overlay layer paths and sizes, which are not ours to compare)."""
    out = Counter()
    for raw in proc_mounts.splitlines():
        f = raw.split()
        if len(f) >= 3:
            out[mask(f"{f[2]} {f[1]}")] += 1
    return out


def multiset_diff(what, before, after, shown=4):
    """Lines naming what `after` has more and less of than `before`."""
    b, a = Counter(before), Counter(after)
    more, less = a - b, b - a
    out = []
    for label, d in (("more", more), ("fewer", less)):
        if d:
            items = sorted(d.items())
            sample = "; ".join(f"{k!r} x{v}" if v > 1 else repr(k) for k, v in items[:shown])
            rest = f" (and {len(items) - shown} more)" if len(items) > shown else ""
            out.append(f"{what}: {sum(d.values())} {label} than before: {sample}{rest}")
    return out


def set_diff(what, before, after):
    b, a = set(before), set(after)
    out = []
    if a - b:
        out.append(f"{what} left behind: {', '.join(sorted(a - b))}")
    if b - a:
        out.append(f"{what} gone that were there before: {', '.join(sorted(b - a))}")
    return out


def leaks(before, after):
    """Every way `after` differs from `before` (empty: nothing left behind). Both are snapshots
    as soak.py takes them; see its `snapshot` for the keys."""
    out = []
    out += set_diff("namespace", before["namespaces"], after["namespaces"])
    out += set_diff("object labelled managed-by=drainwatch", before["managed"], after["managed"])
    out += set_diff("drainwatch process", before["processes"], after["processes"])
    out += multiset_diff("containerd shims", before["shims"], after["shims"])
    out += multiset_diff("iptables", iptables_lines(before["iptables"]), iptables_lines(after["iptables"]))
    out += multiset_diff("ip6tables", iptables_lines(before["ip6tables"]), iptables_lines(after["ip6tables"]))
    out += multiset_diff("mounts", mount_lines(before["mounts"]), mount_lines(after["mounts"]))
    out += multiset_diff("network links", before["links"], after["links"])
    for node in sorted(set(before["nodes"]) | set(after["nodes"])):
        b, a = before["nodes"].get(node), after["nodes"].get(node)
        if b != a:
            out.append(f"node {node}: {b} before, {a} now")
    for w in sorted(set(before["workloads"]) | set(after["workloads"])):
        b, a = before["workloads"].get(w), after["workloads"].get(w)
        if b != a:
            out.append(f"{w}: {b} before, {a} now")
    out += multiset_diff("pods with a deletion-cost annotation", before["deletion_cost"], after["deletion_cost"])
    out += set_diff("restore journal", before["journals"], after["journals"])
    return out


def pod_shape(pod_names):
    """Masks the generated suffixes of pod names, so a replaced replica is the same shape."""
    return [re.sub(r"-[a-z0-9]{5}$", "-POD", re.sub(r"-[a-z0-9]{8,10}-[a-z0-9]{5}$", "-RS-POD", n)) for n in pod_names]


# --- growth -----------------------------------------------------------------------------------

# The long run's growth rule. Its arms run one after another (all trials of the first arm, then
# the next), and what the orchestrator holds between trials depends on the arm (an attach trial
# watches more objects than a probe trial, so its kube client may pool more connections). So:
# - fds, exact: within every arm of at least 3 trials, the count after its last trial is at most
#   the higher of the counts after its first two (the second, so that the run's very first trial,
#   before any pool is warm, is not the reference; a leak of one fd per trial shows as
#   repeat - 2 more); and after the run's last trial at most the highest of those references
#   over all arms (no level above what each kind of trial needs once).
# - RSS: after the last trial at most the highest of the first WARMUP_TRIALS plus RSS_SLACK_KIB
#   (allocator arenas grow in steps), and the least-squares slope over the second half of the
#   trials at most RSS_SLOPE_KIB per trial (a steady leak inside the slack still fails).
WARMUP_TRIALS = 3
RSS_SLACK_KIB = 8 * 1024
RSS_SLOPE_KIB = 64


def slope(ys):
    """Least-squares slope of ys against 0, 1, 2, ... (None below two points)."""
    n = len(ys)
    if n < 2:
        return None
    mx, my = (n - 1) / 2, sum(ys) / n
    num = sum((i - mx) * (y - my) for i, y in enumerate(ys))
    den = sum((i - mx) ** 2 for i in range(n))
    return num / den


def growth(rss_kib, fds, arms):
    """(ok, lines): whether the samples taken after each trial (in trial order; `arms` names each
    trial's arm) show growth, and the figures that decided it."""
    lines, ok = [], True
    if not rss_kib or not fds:
        return False, ["no samples: the run ended before its first trial's report"]
    per_arm = {}
    for arm, fd in zip(arms, fds):
        per_arm.setdefault(arm, []).append(fd)
    refs = {arm: max(v[:2]) for arm, v in per_arm.items()}
    for arm, v in per_arm.items():
        if len(v) < 3:
            lines.append(f"fds of arm {arm}: {v}, not judged alone ({len(v)} trials, 3 needed)")
            continue
        arm_ok = v[-1] <= refs[arm]
        ok &= arm_ok
        lines.append(f"fds of arm {arm}: {v[0]}, {v[1]} after its first two trials, {v[-1]} after its last "
                     f"({len(v)}): {'ok' if arm_ok else 'GREW'}")
    fd_ref, fd_last = max(refs.values()), fds[-1]
    fd_ok = fd_last <= fd_ref
    ok &= fd_ok
    lines.append(
        f"fds: {fd_last} after the last trial, at most {fd_ref} (the most after any arm's first two trials) "
        f"allowed (range {min(fds)}..{max(fds)}): {'ok' if fd_ok else 'GREW'}"
    )
    w = min(WARMUP_TRIALS, len(rss_kib))
    rss_ref, rss_last = max(rss_kib[:w]), rss_kib[-1]
    rss_ok = rss_last <= rss_ref + RSS_SLACK_KIB
    ok &= rss_ok
    lines.append(
        f"RSS: {rss_last} KiB after the last trial, at most {rss_ref} + {RSS_SLACK_KIB} KiB allowed "
        f"(range {min(rss_kib)}..{max(rss_kib)} KiB): {'ok' if rss_ok else 'GREW'}"
    )
    half = rss_kib[len(rss_kib) // 2:]
    s = slope(half)
    if s is None or len(half) < 4:
        lines.append(f"RSS slope: not judged ({len(half)} samples in the second half, 4 needed)")
    else:
        s_ok = s <= RSS_SLOPE_KIB
        ok &= s_ok
        lines.append(
            f"RSS slope over the last {len(half)} trials: {s:.1f} KiB/trial, at most {RSS_SLOPE_KIB} allowed: "
            f"{'ok' if s_ok else 'GREW'}"
        )
    return ok, lines
