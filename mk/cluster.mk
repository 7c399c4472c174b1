# Local testbed: a real Kubernetes cluster as plain processes on this machine (deploy/local-cluster/).
# Included by the top-level Makefile (-include mk/*.mk). Everything here needs root.
LOCAL_CLUSTER := deploy/local-cluster
NODES ?= 2

.PHONY: cluster-deps cluster-build cluster-up cluster-down cluster-status image e2e-smoke e2e-cluster e2e-build

cluster-deps: ## install the Debian packages the local cluster needs (containerd, runc, CNI, buildah, ...)
	@$(LOCAL_CLUSTER)/install-deps.sh

cluster-build: cluster-deps ## build Kubernetes + etcd from the Go module proxy into the cache (reused when present)
	@$(LOCAL_CLUSTER)/build.sh

image: ## build the static musl binary and the project image (buildah, or docker) as an OCI archive
	@$(LOCAL_CLUSTER)/image.sh

cluster-up: ## bring up the local cluster (NODES=2 default; KUBECONFIG_OUT=path to copy the kubeconfig)
	@NODES=$(NODES) $(LOCAL_CLUSTER)/up.sh

cluster-down: ## tear the local cluster down and remove everything it changed
	@$(LOCAL_CLUSTER)/down.sh

cluster-status: ## components, nodes and pods of the local cluster
	@$(LOCAL_CLUSTER)/status.sh

e2e-smoke: ## smoke test on the running two-node local cluster (traffic, drain, egress guard)
	@tests/e2e/smoke.sh

e2e-cluster: ## CI: build if needed, cluster-up, e2e-smoke, always cluster-down; prints phase timings
	@$(LOCAL_CLUSTER)/ci.sh

# Every cluster test binary in one cargo run. The cluster run builds them before its first test
# and then runs the executables directly (CLUSTER_TEST_BINS, scripts/cluster-test.sh), so no
# phase of it waits on cargo's build lock while `make test` beside it holds that lock.
CLUSTER_TESTS := attach_e2e attach_faults k8s_e2e k8s_parallel k8s_faults compare_e2e walkthrough_e2e shards_e2e ingress_e2e ingress_envoy_e2e
CLUSTER_TEST_LIST ?= $(CARGO_TARGET_DIR)/cluster-tests.txt

e2e-build: ## build the cluster tests (CLUSTER_TESTS) and the debug binary they run; list the executables in CLUSTER_TEST_LIST
	set -o pipefail; $(CARGO) test --no-run --message-format=json-render-diagnostics $(addprefix --test ,$(CLUSTER_TESTS)) \
	  | python3 scripts/test-executables.py > $(CLUSTER_TEST_LIST).tmp
	mv $(CLUSTER_TEST_LIST).tmp $(CLUSTER_TEST_LIST)
