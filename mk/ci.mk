# The CI product: the GitHub Action's tests and lint. Included by the top-level Makefile.
.PHONY: ci-tools actionlint test-ci-product docker-run-cluster test-action test-action-kind

ci-tools: ## install the CI-product test tools (chromium, junitparser venv, npm packages, actionlint)
	@.ci/setup-test-tools.sh

actionlint: ## lint the GitHub workflows (and the action's inputs) with actionlint
	@.ci/actionlint.sh

test-ci-product: ## JUnit consumer, Chromium-rendered summary, PR comment, the actions' static checks
	@.ci/test-ci-product.sh

docker-run-cluster: ## docs/other-ci.md's docker run and GitLab job, and README's docker run, against the local cluster, podman as docker (needs make example-images; ~3 min)
	DRAINWATCH_E2E_KUBECONFIG=$${DRAINWATCH_E2E_KUBECONFIG:-/var/lib/drainwatch-cluster/admin.kubeconfig} \
	  tests/ci/docker-run-cluster.sh

test-action: ## the documented gate workflow (examples/workflows/gate.yml) under nektos/act against the local cluster (tests/action/run.sh)
	@tests/action/run.sh

test-action-kind: ## the same workflow on the Action's own kind path: real kind v0.33.0 on podman, the node image `make kind-image` builds (tests/action/run.sh, DW_ACTION_KIND=real)
	@DW_ACTION_KIND=real tests/action/run.sh
