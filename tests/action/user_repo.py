"""A user's repository, for running README.md's "Gate every pull request" workflow as copied.

From README.md, verbatim: the workflow (the section's ```yaml block, written to
.github/workflows/drainwatch.yml) and the policy (its ```toml block, .github/drainwatch.toml, the
path the workflow names). What a user brings, the workflow's assumptions, made here:
  - a Dockerfile at the root (`docker build -t my-service:ci .`): the good-shutdown example's
    image as its base, so the service is a real one that drains correctly;
  - k8s/ (`kubectl apply -f k8s/ && kubectl rollout status deployment/my-service`): the example's
    manifests (examples/k8s/good-shutdown.yaml) renamed my-service, in the kubeconfig's namespace,
    image my-service:ci.

Usage: user_repo.py REPO_ROOT OUT_DIR VERSION
Prints the workflow's path relative to OUT_DIR.
"""

import pathlib
import re
import sys


def readme_gate(repo):
    """README's "Gate every pull request" section's workflow and policy, verbatim."""
    readme = (repo / "README.md").read_text()
    section = readme.split("## Gate every pull request\n", 1)[1].split("\n## ", 1)[0]
    yaml_blocks = re.findall(r"```yaml\n(.*?)```\n", section, re.S)
    toml_blocks = re.findall(r"```toml\n(.*?)```\n", section, re.S)
    if len(yaml_blocks) != 1 or len(toml_blocks) != 1:
        sys.exit(f"user_repo.py: README's gate section has {len(yaml_blocks)} yaml and {len(toml_blocks)} toml blocks, expected one each")
    return yaml_blocks[0], toml_blocks[0]


def main():
    repo, out, version = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
    workflow, policy = readme_gate(repo)
    m = re.search(r"^\s+policy: (\S+)", workflow, re.M)
    if m is None:
        sys.exit("user_repo.py: README's workflow names no policy")
    (out / ".github/workflows").mkdir(parents=True, exist_ok=True)
    (out / "k8s").mkdir(parents=True, exist_ok=True)
    (out / ".github/workflows/drainwatch.yml").write_text(workflow)
    (out / m[1]).write_text(policy)
    (out / "Dockerfile").write_text(
        "# my-service: the good-shutdown example service (drainwatch's examples/good-shutdown.rs)\n"
        f"FROM ghcr.io/drainwatch/example-good-shutdown:{version}\n"
    )
    manifests = (repo / "examples/k8s/good-shutdown.yaml").read_text()
    manifests = re.sub(r"^  namespace: drainwatch-examples\n", "", manifests, flags=re.M)
    manifests = re.sub(r"image: ghcr.io/drainwatch/example-good-shutdown:\S+", "image: my-service:ci", manifests)
    manifests = manifests.replace("good-shutdown", "my-service")
    if "namespace:" in manifests or "my-service:ci" not in manifests:
        sys.exit("user_repo.py: examples/k8s/good-shutdown.yaml no longer has the shape this renames")
    (out / "k8s/my-service.yaml").write_text(manifests)
    print(".github/workflows/drainwatch.yml")


if __name__ == "__main__":
    main()
