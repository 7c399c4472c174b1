// The upload-artifact stand-in: every file under `path`, uploaded with @actions/artifact to the
// runner's artifact service (act's, from ACTIONS_RUNTIME_TOKEN / ACTIONS_RESULTS_URL), and
// upload-artifact's outputs. URL as upload-artifact forms it.
import fs from "node:fs";
import path from "node:path";
import { DefaultArtifactClient } from "@actions/artifact";

const input = (n) => process.env[`INPUT_${n.toUpperCase()}`] ?? "";
const name = input("name") || "artifact";
const root = input("path");
const missing = input("if-no-files-found") || "warn";

function walk(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? walk(p) : [p];
  });
}

const files = fs.existsSync(root) ? walk(root) : [];
if (files.length === 0) {
  const msg = `No files were found with the provided path: ${root}. No artifacts will be uploaded.`;
  if (missing === "error") {
    console.log(`::error::${msg}`);
    process.exit(1);
  }
  if (missing === "warn") console.log(`::warning::${msg}`);
  process.exit(0);
}
const { id, digest } = await new DefaultArtifactClient().uploadArtifact(name, files, root);
const url = `${process.env.GITHUB_SERVER_URL}/${process.env.GITHUB_REPOSITORY}/actions/runs/${process.env.GITHUB_RUN_ID}/artifacts/${id}`;
console.log(`Artifact ${name} (${files.length} files) uploaded: id ${id}, ${url}`);
fs.appendFileSync(process.env.GITHUB_OUTPUT, `artifact-id=${id}\nartifact-url=${url}\nartifact-digest=${digest ?? ""}\n`);
