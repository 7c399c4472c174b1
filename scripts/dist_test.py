#!/usr/bin/env python3
"""`make dist-test`: the aarch64 release binary on this amd64 machine, under qemu-user (issue 19).

binfmt_misc is not mounted here, so `drainwatch run --platform local` cannot start its own probe
(it re-executes current_exe(), an aarch64 ELF the kernel refuses). This script therefore plays
the orchestrator's part of the local platform and starts every drainwatch process through
`qemu-aarch64-static` explicitly:

  1. `BIN --version` must name the crate version.
  2. For each arm (drain, exit-now, ignore): `BIN probe` (configured by its env, as the local
     platform does) and `BIN client --out DIR/client` as two qemu processes on loopback. The
     script waits for probe_started and /readyz 200, for the client's flows, settles, sends
     SIGTERM to the probe (qemu delivers it to the guest), SIGKILLs it when the grace period
     expires (as the kubelet would), and waits for the client to see every flow end.
  3. The trial's events.jsonl is assembled as the local platform assembles it: the client's
     header with the arm's probe settings in its config, the probe's stdout lines stamped with
     CLOCK_MONOTONIC at receipt (source probe), the client's lines as written, and the
     orchestrator lines this script is the author of (trigger, sigkill, container exit, window).
  4. `BIN report --events ... --out DIR/ARM` (under qemu too) builds report.json, which must be
     valid against schema/report.schema.json; tests/dist_qemu.rs checks the arms' outcomes.

Ports: the first three free loopback ports from PORT_BASE (default 30100: above the 12000-29999
that tests/common/ports.rs hands to the Rust tests, below the kernel's ephemeral range).
"""
import argparse, json, os, signal, socket, subprocess, sys, threading, time, urllib.request

ARMS = ["drain", "exit-now", "ignore"]
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def mono_ns():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def wall():
    t = time.time_ns()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t // 10**9)) + f".{t % 10**9:09d}Z"


def orch(event, detail, **extra):
    return {"v": 1, "source": "orchestrator", "at_ns": mono_ns(), "wall": wall(), "event": event, "detail": detail, **extra}


def wait_for(pred, timeout, step=0.05):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()


def port_free(port, kind):
    s = socket.socket(socket.AF_INET, kind)
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def free_ports(base):
    """Three consecutive free loopback ports from base on: tcp, udp, ready."""
    for b in range(base, base + 300, 3):
        if port_free(b, socket.SOCK_STREAM) and port_free(b + 1, socket.SOCK_DGRAM) and port_free(b + 2, socket.SOCK_STREAM):
            return b, b + 1, b + 2
    sys.exit(f"dist-test: error: no three free loopback ports in {base}..{base + 300} (PORT_BASE)")


def readyz(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as r:
            return r.status == 200
    except Exception:
        return False


def trial(a, arm, out):
    tcp, udp, ready = free_ports(a.port_base)
    os.makedirs(out, exist_ok=True)
    trial_id = "trial-001"  # the schema's trial-NNN; each arm has its own directory
    env = dict(os.environ, DRAIN_BEHAVIOR=arm, DRAIN_MAX_SECONDS=str(a.drain_max), EXIT_NOW_FORCE_RST="true",
               PROBE_TCP_PORT=str(tcp), PROBE_UDP_PORT=str(udp), PROBE_READY_PORT=str(ready),
               POD_NAME=f"drainwatch-probe-local-{trial_id}")
    lines, started = [], threading.Event()

    probe = subprocess.Popen([*a.run, a.bin, "probe"], env=env, stdout=subprocess.PIPE,
                             stderr=open(f"{out}/probe.stderr", "w"), text=True)

    def read_probe():  # as src/platform/local/probe_io.rs: stamp at receipt, source probe
        for text in probe.stdout:
            at = mono_ns()
            try:
                line = json.loads(text)
            except ValueError:
                continue
            if not isinstance(line, dict) or "event" not in line:
                continue
            line["source"], line["at_ns"] = "probe", at
            lines.append(line)
            if line["event"] == "probe_started":
                started.set()

    reader = threading.Thread(target=read_probe, daemon=True)
    reader.start()
    ours = [orch("workload_applied", f"local probe pid={probe.pid} instance={env['POD_NAME']} behavior={arm} (under {os.path.basename(a.qemu)})")]
    client = None
    try:
        if not started.wait(a.ready_timeout) or not wait_for(lambda: readyz(ready), a.ready_timeout):
            sys.exit(f"dist-test: error: {arm}: the probe did not start and answer /readyz (see {out}/probe.stderr)")
        c_err = f"{out}/client.stderr"
        client = subprocess.Popen(
            [*a.run, a.bin, "client", "--host", "127.0.0.1", "--tcp-port", str(tcp), "--udp-port", str(udp),
             "--tcp-flows", str(a.flows), "--udp-flows", str(a.flows), "--duration", f"{a.grace + 30}s",
             "--out", f"{out}/client"],
            stdout=open(f"{out}/client.stdout", "w"), stderr=open(c_err, "w"))
        if not wait_for(lambda: "established" in open(c_err).read() or client.poll() is not None, 60):
            sys.exit(f"dist-test: error: {arm}: the client did not establish its flows (see {c_err})")
        if client.poll() is not None:
            sys.exit(f"dist-test: error: {arm}: the client exited early (see {c_err})")
        ours.append(orch("preflight_passed", f"{a.flows} tcp flows and {a.flows} udp flows established; probe ready and its events delivering"))
        time.sleep(a.settle)
        ours.append(orch("settle_complete", f"held {a.flows} tcp and {a.flows} udp flows for {a.settle}s"))
        ours.append(orch("trigger_issued", f"trigger=sigterm target={trial_id}"))
        probe.send_signal(signal.SIGTERM)
        ours.append(orch("trigger_api_returned", f"SIGTERM delivered to pid {probe.pid}"))
        try:
            code = probe.wait(timeout=a.grace)
        except subprocess.TimeoutExpired:
            ours.append(orch("sigkill_sent", f"grace period of {a.grace}s expired; SIGKILL to pid {probe.pid} as the kubelet would"))
            probe.kill()
            code = probe.wait()
        sig = -code if code < 0 else None
        exit_code = 128 + sig if sig else code
        ours.append(orch("container_terminated", f"probe exitCode={exit_code} reason={'Completed' if exit_code == 0 else 'Error'} signal={sig or 0}",
                         exit_code=exit_code, **({"signal": sig} if sig else {})))
        client.wait(timeout=a.grace + 40)
        ours.append(orch("all_flows_terminal", "the client saw every flow reach a terminal event and stopped"))
        ours.append(orch("observation_window_closed", f"window={a.grace + 30}s"))
    finally:
        for p in [probe, client]:
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
        reader.join(timeout=10)

    client_lines = [json.loads(l) for l in open(f"{out}/client/events.jsonl")]
    if not client_lines or client_lines[0].get("event") != "trial_started":
        sys.exit(f"dist-test: error: {arm}: the client's events.jsonl does not start with its header")
    header = client_lines[0]
    h = header["header"]
    h["trial_id"] = trial_id
    h["config"].update(platform="local", drain_behavior=arm, drain_max_seconds=a.drain_max, exit_now_force_rst=True,
                       trigger="sigterm", workload="local-process (qemu-aarch64-static)", grace_period_seconds=a.grace,
                       settle_seconds=a.settle, target_host="127.0.0.1", tcp_port=tcp, udp_port=udp)
    rest = sorted(client_lines[1:] + lines + ours, key=lambda l: l["at_ns"])
    with open(f"{out}/events.jsonl", "w") as f:
        for l in [header, *rest]:
            f.write(json.dumps(l, separators=(",", ":")) + "\n")
    rep = subprocess.run([*a.run, a.bin, "report", "--events", f"{out}/events.jsonl", "--out", out],
                         capture_output=True, text=True)
    open(f"{out}/report.stdout", "w").write(rep.stdout)
    if rep.returncode != 0:
        sys.exit(f"dist-test: error: {arm}: drainwatch report exited {rep.returncode}: {rep.stderr.strip()}")
    return json.load(open(f"{out}/report.json"))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--qemu", default="qemu-aarch64-static", help="the qemu-user binary; none: run --bin directly")
    p.add_argument("--flows", type=int, default=5)
    p.add_argument("--grace", type=int, default=10)
    p.add_argument("--settle", type=int, default=3)
    p.add_argument("--drain-max", type=int, default=5)
    p.add_argument("--ready-timeout", type=float, default=60)
    p.add_argument("--port-base", type=int, default=int(os.environ.get("PORT_BASE", "30100")))
    a = p.parse_args()
    import jsonschema  # Debian's python3-jsonschema; imported here so --help needs nothing

    # --qemu none runs the binary directly: a check of this harness with a host binary.
    a.run = [] if a.qemu == "none" else [a.qemu]
    desc = subprocess.run(["file", "-b", a.bin], capture_output=True, text=True).stdout.strip()
    if a.run and "ARM aarch64" not in desc:
        sys.exit(f"dist-test: error: {a.bin} is not an aarch64 binary: {desc}")
    version = subprocess.run([*a.run, a.bin, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    crate = next(l.split('"')[1] for l in open(f"{REPO}/Cargo.toml") if l.startswith("version"))
    if crate not in version:
        sys.exit(f"dist-test: error: --version says '{version}', the crate is {crate}")
    os.makedirs(a.out, exist_ok=True)
    schema = json.load(open(f"{REPO}/schema/report.schema.json"))
    summary = {"binary": a.bin, "file": desc, "version": version, "qemu": subprocess.run(
        [a.qemu, "--version"], capture_output=True, text=True).stdout.splitlines()[0] if a.run else "none", "arms": {}}
    print(f"dist-test: {version} ({desc.split(',')[0]}) under {summary['qemu']}")
    for arm in ARMS:
        t0 = time.monotonic()
        r = trial(a, arm, f"{a.out}/{arm}")
        jsonschema.validate(r, schema)  # raises, naming the path, on an invalid report
        s = r["trial"]["summary"]
        summary["arms"][arm] = {"status": r["trial"]["status"], "arch": r["environment"]["arch"],
                                "tcp": s["tcp"], "udp": s["udp"], "mechanisms": s["mechanisms"],
                                "container_exit_code": s["container_exit_code"],
                                "sigterm_to_last_flow_terminal_ms": s["sigterm_to_last_flow_terminal_ms"],
                                "seconds": round(time.monotonic() - t0, 1), "schema_valid": True}
        print(f"dist-test: {arm}: {json.dumps(summary['arms'][arm])}")
    json.dump(summary, open(f"{a.out}/summary.json", "w"), indent=2)
    print(f"dist-test: 3 arms, reports valid against schema/report.schema.json: {a.out}")


if __name__ == "__main__":
    main()
