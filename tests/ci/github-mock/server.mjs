// A local stand-in for GitHub's REST API, limited to the issue-comment calls drainwatch makes,
// whose every response is checked against GitHub's own OpenAPI description (@octokit/openapi)
// before it is sent. Shapes come from GitHub, not from this file: comment objects start from the
// description's `issue-comment` example, response headers from a recorded api.github.com
// response in @octokit/fixtures (rate-limit headers, `Link` with /repositories/{id}/ URLs as
// GitHub writes them), error bodies from the description's error schemas.
//
// @octokit/fixtures-server replays recorded scenarios, and none of them lists, creates or updates
// issue comments, so it cannot serve these calls; this server is the fallback the issue names.
//
// Actions (for `drainwatch ci baseline`): `GET /repos/{o}/{r}/actions/runs/{run_id}`, the workflow's
// runs (`GET …/actions/workflows/{file or id}/runs` filtered by branch, status and event, newest
// first), a run's artifacts (`GET …/actions/runs/{id}/artifacts?name=`), and the zip
// (`GET …/actions/artifacts/{id}/zip`), which answers 302 with a Location on this server's
// `/__storage/…` path, as GitHub hands out a signed storage URL; 410 for an expired artifact.
// The storage path REJECTS a request that carries Authorization (a token must never travel to
// the storage) and records a problem. Runs and artifacts start from the description's
// `workflow-run` and `artifact` examples and are validated like the comments.
//
// GraphQL (`POST /graphql`, GHES `POST /api/graphql`) answers the one query drainwatch sends,
// `query { viewer { login } }`, in GitHub's GraphQL response shape (`{"data":{"viewer":{"login":…}}}`;
// errors as `{"data":null,"errors":[{"type","path","locations","message"}]}`; a bad token as the
// REST-style 401 body GitHub's GraphQL endpoint sends). The workflow's GITHUB_TOKEN is the viewer
// `github-actions`, and its comments carry user.login `github-actions[bot]` (type Bot); a personal
// token's viewer is its user, whose comments carry that login (type User).
//
// Usage: node server.mjs --node-modules DIR [--port 0] [--token T]
// Prints one JSON line {"port": N} when listening. Test control (not GitHub's API):
//   POST /__control/reset {"repo":"o/r","repo_id":1296269,"issue":2,"seed":250,"marker_at":null,
//                          "marker_body":"…","marker_author":"github-actions[bot]",
//                          "comments":[{"body":"…","author":"login"}],
//                          "viewer":"github-actions","viewer_mode":"ok"|"error"|"forbidden",
//                          "mode":"ok"|"forbidden"|"not-found",
//                          "workflow":{"id":161335,"path":".github/workflows/gate.yml"},
//                          "current_run":{"id":9,"head_branch":"feature"},
//                          "base_runs":[{"id":7,"head_branch":"master","event":"push","conclusion":"success",
//                                        "artifacts":[{"name":"drainwatch-x","expired":false,"zip":"/path/a.zip"}]}],
//                          "actions_mode":"ok"|"forbidden"}
//   `base_runs` are listed newest first as given; an artifact's `zip` is a file served by the storage path.
//   Seeded comments are by octocat (the description's example user) unless `marker_author` (for
//   the marker comment) or `comments[].author` says otherwise.
//   GET  /__control/state -> {"comments":[...],"requests":[...],"problems":[...]}
// `problems` lists every response that failed validation and every request the API does not
// have; a test asserts it is empty.

import http from "node:http";
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const modules = args["node-modules"];
if (!modules) {
  console.error("server.mjs: --node-modules DIR is required");
  process.exit(2);
}
const require = createRequire(path.join(modules, "noop.js"));
const Ajv = require("ajv");
const addFormats = require("ajv-formats");
const TOKEN = args.token ?? "ghs_drainwatch_test_token";

const spec = JSON.parse(fs.readFileSync(path.join(modules, "@octokit/openapi/generated/api.github.com.deref.json"), "utf8"));
const recorded = JSON.parse(
  fs.readFileSync(path.join(modules, "@octokit/fixtures/scenarios/api.github.com/paginate-issues/normalized-fixture.json"), "utf8"),
)[0].headers;
const examples = JSON.parse(fs.readFileSync(path.join(modules, "@octokit/openapi/generated/api.github.com.json"), "utf8"))
  .components.examples;
const exampleComment = examples["issue-comment"].value;
const exampleRun = examples["workflow-run"].value;
const exampleArtifact = examples["artifact"].value;

const ajv = new (Ajv.default ?? Ajv)({ strict: false, allErrors: true, validateFormats: true });
(addFormats.default ?? addFormats)(ajv);

const OPS = {
  list: ["/repos/{owner}/{repo}/issues/{issue_number}/comments", "get"],
  create: ["/repos/{owner}/{repo}/issues/{issue_number}/comments", "post"],
  update: ["/repos/{owner}/{repo}/issues/comments/{comment_id}", "patch"],
  run: ["/repos/{owner}/{repo}/actions/runs/{run_id}", "get"],
  runs: ["/repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs", "get"],
  artifacts: ["/repos/{owner}/{repo}/actions/runs/{run_id}/artifacts", "get"],
  zip: ["/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/{archive_format}", "get"],
};
const validators = {};
function validator(op, status) {
  const key = `${op} ${status}`;
  if (!(key in validators)) {
    const [p, m] = OPS[op];
    const r = spec.paths[p][m].responses[String(status)];
    const schema = r?.content?.["application/json"]?.schema;
    validators[key] = schema ? { fn: ajv.compile(schema), headers: Object.keys(r.headers ?? {}) } : null;
  }
  return validators[key];
}
function requestValidator(op) {
  const key = `${op} request`;
  if (!(key in validators)) {
    const [p, m] = OPS[op];
    const schema = spec.paths[p][m].requestBody?.content?.["application/json"]?.schema;
    validators[key] = schema ? ajv.compile(schema) : null;
  }
  return validators[key];
}

let state;
function reset(cfg = {}) {
  const [owner, repo] = (cfg.repo ?? "Codertocat/Hello-World").split("/");
  state = {
    owner,
    repo,
    repoId: cfg.repo_id ?? 186853002,
    issue: cfg.issue ?? 2,
    mode: cfg.mode ?? "ok",
    viewer: cfg.viewer ?? "github-actions",
    viewerMode: cfg.viewer_mode ?? "ok",
    nextId: 1000,
    comments: [],
    requests: [],
    problems: [],
    used: 0,
    workflow: cfg.workflow ?? { id: 161335, path: ".github/workflows/gate.yml" },
    currentRun: cfg.current_run ?? null,
    baseRuns: cfg.base_runs ?? [],
    actionsMode: cfg.actions_mode ?? "ok",
    artifacts: [],
    downloads: [],
  };
  let artifactId = 5000;
  for (const r of state.baseRuns) {
    r.artifacts = (r.artifacts ?? []).map((a) => ({ ...a, id: artifactId++, run_id: r.id, head_branch: r.head_branch }));
    state.artifacts.push(...r.artifacts);
  }
  const seed = cfg.seed ?? 0;
  for (let i = 0; i < seed; i++) {
    const marked = cfg.marker_at === i;
    const body = marked ? `${cfg.marker_body ?? "<!-- drainwatch:summary key=e2e -->\nold"}` : `comment ${i + 1} from a human`;
    state.comments.push(comment(body, marked ? (cfg.marker_author ?? "github-actions[bot]") : null));
  }
  for (const c of cfg.comments ?? []) state.comments.push(comment(c.body, c.author ?? null));
}

// The login the viewer's comments carry: GITHUB_TOKEN's viewer `github-actions` writes as its bot.
function authorOf(viewer) {
  return viewer === "github-actions" ? "github-actions[bot]" : viewer;
}

// `author` null keeps the description's example user (octocat).
function comment(body, author) {
  const id = state.nextId++;
  const c = structuredClone(exampleComment);
  const base = `https://api.github.com/repos/${state.owner}/${state.repo}`;
  Object.assign(c, {
    id,
    node_id: Buffer.from(`IssueComment${id}`).toString("base64"),
    url: `${base}/issues/comments/${id}`,
    html_url: `https://github.com/${state.owner}/${state.repo}/pull/${state.issue}#issuecomment-${id}`,
    issue_url: `${base}/issues/${state.issue}`,
    body,
    created_at: new Date(Date.UTC(2026, 10, 30, 12, 0, 0) + id * 1000).toISOString().replace(".000Z", "Z"),
  });
  c.updated_at = c.created_at;
  if (author === "github-actions[bot]") {
    Object.assign(c.user, {
      login: author,
      id: 41898282,
      node_id: "MDM6Qm90NDE4OTgyODI=",
      type: "Bot",
      url: "https://api.github.com/users/github-actions%5Bbot%5D",
      html_url: "https://github.com/apps/github-actions",
    });
    c.author_association = "NONE";
  } else if (author) {
    const bot = author.endsWith("[bot]");
    Object.assign(c.user, {
      login: author,
      id: 5000000 + [...author].reduce((h, ch) => (h * 31 + ch.charCodeAt(0)) % 1000000, 7),
      type: bot ? "Bot" : "User",
      url: `https://api.github.com/users/${encodeURIComponent(author)}`,
      html_url: bot ? `https://github.com/apps/${author.slice(0, -5)}` : `https://github.com/${author}`,
    });
    c.author_association = bot ? "NONE" : "CONTRIBUTOR";
  }
  return c;
}

// GraphQL: the viewer query only. Anything else is a problem (drainwatch asks nothing else).
function graphql(res, raw) {
  let q = null;
  try {
    q = JSON.parse(raw || "{}").query;
  } catch {
    state.problems.push("graphql: the request body is not JSON");
  }
  if (typeof q !== "string" || !/^\s*(query\s*)?\{\s*viewer\s*\{\s*login\s*\}\s*\}\s*$/.test(q)) {
    state.problems.push(`graphql: unexpected query ${JSON.stringify(q)}: not the viewer query drainwatch should send`);
  }
  const h = { "x-ratelimit-resource": "graphql" };
  if (state.viewerMode === "forbidden") {
    return sendRaw(res, 403, { message: "Resource not accessible by integration", documentation_url: "https://docs.github.com/graphql", status: "403" }, h);
  }
  if (state.viewerMode === "error") {
    return sendRaw(res, 200, {
      data: null,
      errors: [{ type: "FORBIDDEN", path: ["viewer"], extensions: { saml_failure: false }, locations: [{ line: 1, column: 9 }], message: "Resource not accessible by integration" }],
    }, h);
  }
  sendRaw(res, 200, { data: { viewer: { login: state.viewer } } }, h);
}

function sendRaw(res, status, body, extraHeaders = {}) {
  const text = JSON.stringify(body);
  res.writeHead(status, headers({ ...extraHeaders, "content-length": Buffer.byteLength(text) }));
  res.end(text);
}

function headers(extra = {}) {
  state.used += 1;
  const h = {};
  for (const k of ["content-type", "x-github-media-type", "x-ratelimit-limit", "x-ratelimit-resource", "x-accepted-oauth-scopes", "cache-control", "x-content-type-options"]) {
    if (recorded[k] !== undefined) h[k] = String(recorded[k]);
  }
  h["x-ratelimit-used"] = String(state.used);
  h["x-ratelimit-remaining"] = String(Number(recorded["x-ratelimit-limit"]) - state.used);
  h["x-ratelimit-reset"] = String(Math.floor(Date.now() / 1000) + 3600);
  h["x-github-request-id"] = `0000:0000:${state.used}`;
  return { ...h, ...extra };
}

function send(res, op, status, body, extraHeaders = {}) {
  const v = op ? validator(op, status) : null;
  if (op && !v) {
    state.problems.push(`${op}: status ${status} is not documented for ${OPS[op][1].toUpperCase()} ${OPS[op][0]}`);
  } else if (v && !v.fn(body)) {
    state.problems.push(`${op} ${status}: response does not match GitHub's schema: ${ajv.errorsText(v.fn.errors)}`);
  }
  for (const hname of v?.headers ?? []) {
    if (!(hname.toLowerCase() in Object.fromEntries(Object.keys(extraHeaders).map((k) => [k.toLowerCase(), 1])))) {
      if (!(["list", "runs", "artifacts"].includes(op) && hname === "Link")) state.problems.push(`${op} ${status}: documented header ${hname} missing`);
    }
  }
  const text = JSON.stringify(body);
  res.writeHead(status, headers({ ...extraHeaders, "content-length": Buffer.byteLength(text) }));
  res.end(text);
}

function error(res, op, status, message, doc) {
  send(res, op, status, { message, documentation_url: doc, status: String(status) });
}

function readBody(req) {
  return new Promise((resolve) => {
    let data = "";
    req.on("data", (c) => (data += c));
    req.on("end", () => resolve(data));
  });
}

function origin(req) {
  return `http://${req.headers.host}`;
}

function list(req, res, url) {
  const perPage = Math.min(Number(url.searchParams.get("per_page") ?? 30), 100);
  const page = Math.max(Number(url.searchParams.get("page") ?? 1), 1);
  const last = Math.max(Math.ceil(state.comments.length / perPage), 1);
  const items = state.comments.slice((page - 1) * perPage, page * perPage);
  // GitHub's Link URLs name the repository by id, as the recorded fixture shows.
  const link = (p) => `<${origin(req)}${prefix}/repositories/${state.repoId}/issues/${state.issue}/comments?per_page=${perPage}&page=${p}>`;
  const rels = [];
  if (page > 1) rels.push(`${link(page - 1)}; rel="prev"`);
  if (page < last) rels.push(`${link(page + 1)}; rel="next"`, `${link(last)}; rel="last"`);
  if (page > 1) rels.push(`${link(1)}; rel="first"`);
  send(res, "list", 200, items, rels.length ? { link: rels.join(", ") } : {});
}

// A workflow run in GitHub's shape: the description's example with this repository's names.
function workflowRun(r) {
  const run = structuredClone(exampleRun);
  const api = `https://api.github.com/repos/${state.owner}/${state.repo}`;
  Object.assign(run, {
    id: r.id,
    node_id: Buffer.from(`WorkflowRun${r.id}`).toString("base64"),
    head_branch: r.head_branch ?? "master",
    event: r.event ?? "push",
    status: "completed",
    conclusion: r.conclusion ?? "success",
    workflow_id: state.workflow.id,
    path: state.workflow.path,
    run_number: r.id,
    url: `${api}/actions/runs/${r.id}`,
    html_url: `https://github.com/${state.owner}/${state.repo}/actions/runs/${r.id}`,
    artifacts_url: `${api}/actions/runs/${r.id}/artifacts`,
    workflow_url: `${api}/actions/workflows/${state.workflow.id}`,
  });
  return run;
}

function artifact(a) {
  const out = structuredClone(exampleArtifact);
  const api = `https://api.github.com/repos/${state.owner}/${state.repo}`;
  Object.assign(out, {
    id: a.id,
    node_id: Buffer.from(`Artifact${a.id}`).toString("base64"),
    name: a.name,
    size_in_bytes: a.zip && fs.existsSync(a.zip) ? fs.statSync(a.zip).size : 0,
    url: `${api}/actions/artifacts/${a.id}`,
    archive_download_url: `${api}/actions/artifacts/${a.id}/zip`,
    expired: Boolean(a.expired),
  });
  out.workflow_run = { ...out.workflow_run, id: a.run_id, head_branch: a.head_branch };
  return out;
}

// The Actions calls `drainwatch ci baseline` makes; true when handled.
function actions(req, res, url, repoPath) {
  if (req.method !== "GET" || !url.pathname.startsWith(`${repoPath}/actions/`)) return false;
  const doc = "https://docs.github.com/rest/actions";
  const rest = url.pathname.slice(repoPath.length);
  if (state.actionsMode === "forbidden") {
    error(res, null, 403, "Resource not accessible by integration", doc);
    return true;
  }
  let m = rest.match(/^\/actions\/runs\/(\d+)$/);
  if (m) {
    const id = Number(m[1]);
    const r = state.currentRun?.id === id ? state.currentRun : state.baseRuns.find((x) => x.id === id);
    if (!r) error(res, null, 404, "Not Found", `${doc}/workflow-runs#get-a-workflow-run`);
    else send(res, "run", 200, workflowRun(r));
    return true;
  }
  m = rest.match(/^\/actions\/workflows\/([^/]+)\/runs$/);
  if (m) {
    const wf = decodeURIComponent(m[1]);
    if (wf !== String(state.workflow.id) && wf !== path.basename(state.workflow.path)) {
      error(res, null, 404, "Not Found", `${doc}/workflow-runs#list-workflow-runs-for-a-workflow`);
      return true;
    }
    const q = url.searchParams;
    const runs = state.baseRuns.filter(
      (r) =>
        (!q.get("branch") || (r.head_branch ?? "master") === q.get("branch")) &&
        (!q.get("event") || (r.event ?? "push") === q.get("event")) &&
        (!q.get("status") || (r.conclusion ?? "success") === q.get("status") || q.get("status") === "completed"),
    );
    const perPage = Math.min(Number(q.get("per_page") ?? 30), 100);
    send(res, "runs", 200, { total_count: runs.length, workflow_runs: runs.slice(0, perPage).map(workflowRun) });
    return true;
  }
  m = rest.match(/^\/actions\/runs\/(\d+)\/artifacts$/);
  if (m) {
    const id = Number(m[1]);
    const name = url.searchParams.get("name");
    const list = state.artifacts.filter((a) => a.run_id === id && (!name || a.name === name));
    send(res, "artifacts", 200, { total_count: list.length, artifacts: list.map(artifact) });
    return true;
  }
  m = rest.match(/^\/actions\/artifacts\/(\d+)\/zip$/);
  if (m) {
    const a = state.artifacts.find((x) => x.id === Number(m[1]));
    if (!a) error(res, null, 404, "Not Found", `${doc}/artifacts#download-an-artifact`);
    else if (a.expired) send(res, "zip", 410, { message: "Artifact has expired", documentation_url: `${doc}/artifacts#download-an-artifact`, status: "410" });
    else {
      // GitHub's storage URL is signed and short-lived; the token is not part of it.
      const location = `${origin(req)}/__storage/artifacts/${a.id}.zip?sig=stand-in&se=${Date.now() + 60_000}`;
      res.writeHead(302, headers({ location, "content-length": 0 }));
      res.end();
    }
    return true;
  }
  return false;
}

// The artifact storage: not GitHub's API. A request with Authorization is refused, as the
// storage refuses a bearer token it did not issue.
function storage(req, res, url) {
  const m = url.pathname.match(/^\/__storage\/artifacts\/(\d+)\.zip$/);
  const a = m && state.artifacts.find((x) => x.id === Number(m[1]));
  state.downloads.push({ path: req.url, authorization: Boolean(req.headers.authorization) });
  if (req.headers.authorization) {
    state.problems.push(`storage: ${req.url} was requested with an Authorization header: the token left GitHub's API`);
    res.writeHead(400, { "content-type": "application/xml" });
    return res.end("<Error><Code>InvalidAuthenticationInfo</Code></Error>");
  }
  if (!a || !a.zip || !fs.existsSync(a.zip)) {
    res.writeHead(404, { "content-type": "application/xml" });
    return res.end("<Error><Code>BlobNotFound</Code></Error>");
  }
  const data = fs.readFileSync(a.zip);
  res.writeHead(200, { "content-type": "application/zip", "content-length": data.length });
  res.end(data);
}

// GitHub Enterprise Server serves the same API under /api/v3 (GITHUB_API_URL says so).
const GHES_PREFIX = "/api/v3";
let prefix = "";

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, origin(req));
  prefix = url.pathname.startsWith(`${GHES_PREFIX}/`) ? GHES_PREFIX : "";
  url.pathname = url.pathname.slice(prefix.length);
  const raw = await readBody(req);
  if (url.pathname.startsWith("/__control/")) {
    if (url.pathname === "/__control/reset") {
      reset(raw ? JSON.parse(raw) : {});
      res.writeHead(204).end();
    } else {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(state));
    }
    return;
  }
  if (url.pathname.startsWith("/__storage/")) return storage(req, res, url);
  const auth = req.headers.authorization ?? "";
  state.requests.push({ method: req.method, path: req.url, authorized: auth === `Bearer ${TOKEN}` || auth === `token ${TOKEN}`, body: raw });
  const isGraphql = req.method === "POST" && (url.pathname === "/graphql" || (prefix === "" && url.pathname === "/api/graphql"));
  if (!state.requests.at(-1).authorized) {
    return error(res, null, 401, "Bad credentials", isGraphql ? "https://docs.github.com/graphql" : "https://docs.github.com/rest");
  }
  if (isGraphql) {
    if (url.pathname === "/graphql" && req.url.startsWith(GHES_PREFIX)) {
      state.problems.push("graphql: GHES serves GraphQL at /api/graphql, not under /api/v3");
    }
    return graphql(res, raw);
  }
  const repoPath = `/repos/${state.owner}/${state.repo}`;
  if (actions(req, res, url, repoPath)) return;
  const issuePaths = [`${repoPath}/issues/${state.issue}/comments`, `/repositories/${state.repoId}/issues/${state.issue}/comments`];
  const doc = "https://docs.github.com/rest/issues/comments";
  if (state.mode === "not-found") {
    const op = req.method === "GET" ? "list" : req.method === "POST" ? "create" : null;
    return error(res, op, 404, "Not Found", `${doc}#list-issue-comments`);
  }
  if (req.method === "GET" && issuePaths.includes(url.pathname)) return list(req, res, url);
  if (req.method === "POST" && url.pathname === issuePaths[0]) {
    const body = JSON.parse(raw || "{}");
    const rv = requestValidator("create");
    if (rv && !rv(body)) state.problems.push(`create: request body does not match GitHub's schema: ${ajv.errorsText(rv.errors)}`);
    if (state.mode === "forbidden") {
      return error(res, "create", 403, "Resource not accessible by integration", `${doc}#create-an-issue-comment`);
    }
    const c = comment(body.body, authorOf(state.viewer));
    state.comments.push(c);
    return send(res, "create", 201, c, { location: c.url });
  }
  const m = url.pathname.match(new RegExp(`^${repoPath}/issues/comments/(\\d+)$`));
  if (m && req.method === "PATCH") {
    const body = JSON.parse(raw || "{}");
    const rv = requestValidator("update");
    if (rv && !rv(body)) state.problems.push(`update: request body does not match GitHub's schema: ${ajv.errorsText(rv.errors)}`);
    const c = state.comments.find((x) => x.id === Number(m[1]));
    if (!c) return error(res, "update", 404, "Not Found", `${doc}#update-an-issue-comment`);
    if (c.user.login !== authorOf(state.viewer)) {
      // GitHub refuses the workflow token an edit of another author's comment.
      state.problems.push(`update: comment ${c.id} by ${c.user.login} edited with the token of ${state.viewer}`);
      return error(res, "update", 403, "Resource not accessible by integration", `${doc}#update-an-issue-comment`);
    }
    c.body = body.body;
    c.updated_at = new Date(Date.parse(c.updated_at) + 60_000).toISOString().replace(".000Z", "Z");
    return send(res, "update", 200, c);
  }
  state.problems.push(`unexpected request ${req.method} ${url.pathname}: not an API call drainwatch should make`);
  error(res, null, 404, "Not Found", "https://docs.github.com/rest");
});

reset();
server.listen(Number(args.port ?? 0), "127.0.0.1", () => {
  console.log(JSON.stringify({ port: server.address().port }));
});
// Stop with the parent: a test that dies must not leave a server behind.
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
