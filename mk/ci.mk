# The CI product: the GitHub Action's tests and lint. Included by the top-level Makefile.
.PHONY: ci-tools actionlint test-ci-product docker-run-example e2e-action

ci-tools: ## install the CI-product test tools (chromium, junitparser venv, npm packages, actionlint)
	@.ci/setup-test-tools.sh

actionlint: ## lint the GitHub workflows (and the action's inputs) with actionlint
	@.ci/actionlint.sh

test-ci-product: ## JUnit consumer, Chromium-rendered summary, PR comment and action.yml step tests
	@.ci/test-ci-product.sh

docker-run-example: ## docs/ci.md's docker run usage with podman against the image of `make image`
	@tests/ci/docker-run.sh

e2e-action: ## action.yml step by step against a real cluster (DRAINWATCH_E2E_KUBECONFIG, default the local cluster's)
	DRAINWATCH_E2E_KUBECONFIG=$${DRAINWATCH_E2E_KUBECONFIG:-/var/lib/drainwatch-cluster/admin.kubeconfig} \
	  .ci/test-ci-product.sh -k cluster
