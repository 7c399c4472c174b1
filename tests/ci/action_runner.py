"""Runs a composite action.yml the way the GitHub Actions runner does, step by step, on this
machine: `${{ }}` expressions in `if:`, `env:` and `with:`, `shell: bash` steps as
`bash --noprofile --norc -eo pipefail FILE`, a fresh $GITHUB_OUTPUT per step whose lines (and
`name<<DELIM` blocks) become `steps.<id>.outputs`, and step status functions.

Only what cannot run here is replaced: `uses:` steps go to stand-ins the caller supplies (kind,
artifact upload), and `docker`/`kind` commands resolve to stand-in scripts on PATH. Everything
else, including every `drainwatch ci …` call, runs for real.
"""

import os
import pathlib
import re
import subprocess

import yaml

# --- expressions ---------------------------------------------------------------------------

TOKEN_RE = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>\d+(?:\.\d+)?)|(?P<op>==|!=|&&|\|\||!|\(|\)|,)"
    r"|(?P<ident>[A-Za-z_][A-Za-z0-9_\-]*(?:\.[A-Za-z0-9_\-*]+)*))"
)


def _tokens(expr):
    pos, out = 0, []
    while pos < len(expr):
        if expr[pos:].strip() == "":
            break
        m = TOKEN_RE.match(expr, pos)
        if not m or m.end() == pos:
            raise ValueError(f"cannot parse expression {expr!r} at {pos}")
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


class _Parser:
    """The subset of the Actions expression language that action.yml uses."""

    def __init__(self, expr, ctx):
        self.toks = _tokens(expr)
        self.i = 0
        self.ctx = ctx

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None)

    def take(self, value=None):
        tok = self.peek()
        if value is not None and tok[1] != value:
            raise ValueError(f"expected {value!r}, got {tok!r}")
        self.i += 1
        return tok

    def parse(self):
        v = self.or_()
        if self.i != len(self.toks):
            raise ValueError(f"trailing tokens in expression: {self.toks[self.i:]}")
        return v

    def or_(self):
        v = self.and_()
        while self.peek()[1] == "||":
            self.take()
            r = self.and_()
            v = v if _truthy(v) else r
        return v

    def and_(self):
        v = self.cmp()
        while self.peek()[1] == "&&":
            self.take()
            r = self.cmp()
            v = r if _truthy(v) else v
        return v

    def cmp(self):
        v = self.unary()
        while self.peek()[1] in ("==", "!="):
            op = self.take()[1]
            r = self.unary()
            eq = _loose_eq(v, r)
            v = eq if op == "==" else not eq
        return v

    def unary(self):
        if self.peek()[1] == "!":
            self.take()
            return not _truthy(self.unary())
        return self.primary()

    def primary(self):
        kind, val = self.take()
        if kind == "str":
            return val[1:-1].replace("''", "'")
        if kind == "num":
            return float(val)
        if val == "(":
            v = self.or_()
            self.take(")")
            return v
        if kind == "ident":
            if self.peek()[1] == "(":
                self.take("(")
                args = []
                while self.peek()[1] != ")":
                    args.append(self.or_())
                    if self.peek()[1] == ",":
                        self.take()
                self.take(")")
                return self.ctx["functions"][val](*args)
            if val in ("true", "false"):
                return val == "true"
            if val == "null":
                return None
            return _lookup(self.ctx, val)
        raise ValueError(f"unexpected token {val!r}")


def _truthy(v):
    return v not in (None, False, "", 0)


def _loose_eq(a, b):
    if isinstance(a, str) and isinstance(b, str):
        return a.lower() == b.lower()
    return a == b


def _lookup(ctx, path):
    cur = ctx
    for part in path.split("."):
        if isinstance(cur, dict):
            cur = cur.get(part, "")
        else:
            return ""
    return cur


def evaluate(expr, ctx):
    return _Parser(expr, ctx).parse()


def interpolate(text, ctx):
    """Replaces every `${{ expr }}` in a string."""
    if not isinstance(text, str):
        return text

    def sub(m):
        v = evaluate(m.group(1), ctx)
        if v is None:
            return ""
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, float) and v.is_integer():
            return str(int(v))
        return str(v)

    return re.sub(r"\$\{\{(.*?)\}\}", sub, text)


def condition(text, ctx):
    if text is None:
        return ctx["functions"]["success"]()
    text = str(text).strip()
    if text.startswith("${{") and text.endswith("}}"):
        text = text[3:-2]
    return _truthy(evaluate(text, ctx))


# --- files the runner gives a step ----------------------------------------------------------

def read_outputs(path):
    """Parses $GITHUB_OUTPUT: `name=value` lines and `name<<DELIMITER` blocks."""
    out = {}
    lines = pathlib.Path(path).read_text().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delim = line.split("<<", 1)
            value = []
            i += 1
            while lines[i] != delim:
                value.append(lines[i])
                i += 1
            out[name] = "\n".join(value)
        elif "=" in line:
            name, value = line.split("=", 1)
            out[name] = value
        i += 1
    return out


# --- the runner ----------------------------------------------------------------------------

class StepResult:
    def __init__(self, step, outcome, returncode=0, stdout="", stderr=""):
        self.step, self.outcome, self.returncode = step, outcome, returncode
        self.stdout, self.stderr = stdout, stderr

    @property
    def name(self):
        return self.step.get("name") or self.step.get("id") or self.step.get("uses")


class ActionRun:
    def __init__(self, results, outputs, env):
        self.results = results
        self.outputs = outputs
        self.env = env

    @property
    def failed(self):
        return [r for r in self.results if r.outcome == "failure"]

    @property
    def exit_code(self):
        """What the job's exit would be: the first failing step's exit code, else 0."""
        return self.failed[0].returncode if self.failed else 0

    def step(self, name):
        return next(r for r in self.results if r.name == name)

    def ran(self):
        return [r.name for r in self.results if r.outcome != "skipped"]


def run_action(action_path, inputs, env, stand_ins, workdir, github=None, timeout=300):
    """Runs the composite action at `action_path`. `inputs` are the `with:` values, `env` the
    runner environment (GITHUB_*), `github` the `github` context (token, event_name),
    `stand_ins` maps an action name (`owner/repo`) to a function `(with_values, env) -> outputs`."""
    action = yaml.safe_load(pathlib.Path(action_path).read_text())
    assert action["runs"]["using"] == "composite"
    steps_ctx = {}
    ctx = {
        "inputs": {},
        "github": dict(github or {}),
        "runner": {"temp": env["RUNNER_TEMP"], "os": "Linux"},
        "steps": steps_ctx,
        "env": {},
    }
    status = {"failed": False}
    ctx["functions"] = {
        "always": lambda: True,
        "success": lambda: not status["failed"],
        "failure": lambda: status["failed"],
        "cancelled": lambda: False,
    }
    for name, spec in (action.get("inputs") or {}).items():
        default = spec.get("default", "")
        ctx["inputs"][name] = str(inputs[name]) if name in inputs else interpolate(str(default), ctx)
    unknown = set(inputs) - set(ctx["inputs"])
    assert not unknown, f"inputs the action does not declare: {unknown}"

    results = []
    for n, step in enumerate(action["runs"]["steps"]):
        sid = step.get("id", f"__step{n}")
        if not condition(step.get("if"), ctx):
            steps_ctx[sid] = {"outputs": {}, "outcome": "skipped", "conclusion": "skipped"}
            results.append(StepResult(step, "skipped"))
            continue
        step_env = dict(env)
        for k, v in (step.get("env") or {}).items():
            step_env[k] = interpolate(str(v), ctx)
        output_file = pathlib.Path(workdir) / f"output-{n}"
        output_file.write_text("")
        step_env["GITHUB_OUTPUT"] = str(output_file)
        if "uses" in step:
            name = step["uses"].split("@")[0]
            with_values = {k: interpolate(str(v), ctx) for k, v in (step.get("with") or {}).items()}
            outputs = stand_ins[name](with_values, step_env)
            steps_ctx[sid] = {"outputs": outputs, "outcome": "success", "conclusion": "success"}
            results.append(StepResult(step, "success"))
            continue
        assert step.get("shell") == "bash", f"step {step.get('name')} must say shell: bash"
        script = pathlib.Path(workdir) / f"step-{n}.sh"
        script.write_text(step["run"])
        p = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            env=step_env,
            cwd=env.get("GITHUB_WORKSPACE", workdir),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        outcome = "success" if p.returncode == 0 else "failure"
        if outcome == "failure":
            status["failed"] = True
        steps_ctx[sid] = {"outputs": read_outputs(output_file), "outcome": outcome, "conclusion": outcome}
        results.append(StepResult(step, outcome, p.returncode, p.stdout, p.stderr))
    outputs = {k: interpolate(str(v["value"]), ctx) for k, v in (action.get("outputs") or {}).items()}
    return ActionRun(results, outputs, env)


def stand_in_bin(dirpath, drainwatch, log):
    """`docker` and `kind` stand-ins that record their arguments; `docker cp` of the image's
    /drainwatch copies the binary under test, as the real image would provide it."""
    d = pathlib.Path(dirpath)
    d.mkdir(parents=True, exist_ok=True)
    (d / "docker").write_text(
        f"""#!/bin/bash
echo "docker $*" >> {log}
case "$1" in
  create) echo 0123456789ab ;;
  cp) cp {drainwatch} "$3" ;;
  rm) ;;
  *) echo "docker stand-in: unexpected $1" >&2; exit 1 ;;
esac
"""
    )
    (d / "kind").write_text(f"#!/bin/bash\necho \"kind $*\" >> {log}\n")
    for f in ("docker", "kind"):
        os.chmod(d / f, 0o755)
    return d
