# drainwatch on Kubernetes: the demo, the three-arm reproduction, and the end-to-end tests.
# Included by the top-level Makefile (-include mk/*.mk).
#
# Which cluster: KUBECONFIG (and CONTEXT) when given; else kind when a Docker engine and kind
# exist; else the project's local cluster (deploy/local-cluster/, brought up with cluster-up).
LOCAL_KUBECONFIG ?= /var/lib/drainwatch-cluster/admin.kubeconfig
KIND_CLUSTER ?= drainwatch
CONTEXT ?=
DW := $(CARGO_TARGET_DIR)/debug/drainwatch
VERSION := $(shell sed -n '/^\[package\]/,/^\[/{s/^version[[:space:]]*=[[:space:]]*"\([^"]*\)".*/\1/p}' Cargo.toml | head -1)
REPEAT ?= 5
# the <cluster> part of the results directory (default: the context, kind, or local-cluster)
CLUSTER_NAME ?=
IMAGE_ARCHIVE ?= $${DRAINWATCH_K8S_CACHE:-/var/cache/drainwatch-k8s}/images/drainwatch-v$(VERSION).oci.tar
RUN_FLAGS ?=

.PHONY: demo reproduce e2e-k8s e2e-k8s-core e2e-faults k8s-cluster

# Prints the kubeconfig to use, bringing a cluster up when none is given.
k8s-cluster:
	@if [ -n "$${KUBECONFIG:-}" ] || [ -n "$(CONTEXT)" ]; then \
	  echo "using $${KUBECONFIG:-~/.kube/config}$(if $(CONTEXT), context $(CONTEXT))" >&2; \
	elif command -v kind >/dev/null && docker info >/dev/null 2>&1; then \
	  kind get clusters 2>/dev/null | grep -qx '$(KIND_CLUSTER)' || kind create cluster --name '$(KIND_CLUSTER)' --config deploy/kind/kind-config.yaml; \
	  kind export kubeconfig --name '$(KIND_CLUSTER)' --kubeconfig "$(CACHE_KUBECONFIG)" >/dev/null; \
	  [ -f "$(IMAGE_ARCHIVE)" ] || $(MAKE) image; \
	  kind load image-archive --name '$(KIND_CLUSTER)' "$(IMAGE_ARCHIVE)"; \
	else \
	  $(MAKE) --no-print-directory cluster-up >&2; \
	fi

CACHE_KUBECONFIG := $(DRAINWATCH_CACHE)/kind-$(KIND_CLUSTER).kubeconfig
# The kubeconfig flag for the chosen cluster (evaluated in the recipes, after k8s-cluster ran).
KCFG = $$(if [ -n "$${KUBECONFIG:-}" ] || [ -n "$(CONTEXT)" ]; then :; \
  elif [ -f "$(CACHE_KUBECONFIG)" ] && command -v kind >/dev/null && docker info >/dev/null 2>&1; then echo --kubeconfig "$(CACHE_KUBECONFIG)"; \
  else echo --kubeconfig "$(LOCAL_KUBECONFIG)"; fi) $(if $(CONTEXT),--context $(CONTEXT))

# setup first: the image (kind, or the local cluster) is a static musl build, which needs
# musl-tools and the Rust musl target on a fresh machine.
demo: setup build k8s-cluster ## set up, then one drain trial on a cluster (KUBECONFIG, else kind, else the local cluster); prints the table
	$(DW) run $(KCFG) --drain-behavior drain --out $(OUT)/demo --clean-out $(RUN_FLAGS)

reproduce: setup build k8s-cluster ## the three arms (drain, exit-now, ignore) x REPEAT=5 into results/<date>-<cluster>-<version>/
	@set -euo pipefail; \
	cluster=$$(if [ -n "$(CLUSTER_NAME)" ]; then echo "$(CLUSTER_NAME)"; elif [ -n "$(CONTEXT)" ]; then echo "$(CONTEXT)"; \
	  elif [ -n "$${KUBECONFIG:-}" ]; then kubectl config current-context 2>/dev/null || echo cluster; \
	  elif [ -f "$(CACHE_KUBECONFIG)" ]; then echo kind; else echo local-cluster; fi); \
	dir=results/$$(date -u +%Y-%m-%d)-$$cluster-v$(VERSION); mkdir -p "$$dir"; \
	echo "writing $$dir" >&2; \
	for arm in drain exit-now ignore; do \
	  cmd="drainwatch run $(KCFG) --drain-behavior $$arm --repeat $(REPEAT) --out $$dir/$$arm $(RUN_FLAGS)"; \
	  echo "$$cmd" > "$$dir/$$arm.cmd"; \
	  $(DW) run $(KCFG) --drain-behavior $$arm --repeat $(REPEAT) --out "$$dir/$$arm" $(RUN_FLAGS) \
	    > "$$dir/$$arm.stdout" 2> "$$dir/$$arm.stderr"; \
	done; \
	: > "$$dir/aggregate.txt"; \
	for arm in drain exit-now ignore; do \
	  echo "=== $$arm ($$(cat $$dir/$$arm.cmd))" >> "$$dir/aggregate.txt"; \
	  sed -n '/^RUN SUMMARY/,$$p' "$$dir/$$arm.stdout" >> "$$dir/aggregate.txt"; echo >> "$$dir/aggregate.txt"; \
	done; \
	cat "$$dir/aggregate.txt"

e2e-k8s: ## end-to-end tests against a real cluster (DRAINWATCH_E2E_KUBECONFIG, default the local cluster's)
	DRAINWATCH_E2E_KUBECONFIG=$${DRAINWATCH_E2E_KUBECONFIG:-$(LOCAL_KUBECONFIG)} \
	  scripts/cluster-test.sh k8s_e2e k8s_parallel k8s_faults -- --ignored --test-threads=1 --nocapture

# The same tests in the two groups the cluster run schedules (deploy/local-cluster/ci.sh):
# `e2e-k8s-core` keeps to namespaces and objects of its own, so it runs beside the attach tests;
# `e2e-faults` restarts the kube-apiserver, stops a kubelet and drains a node, so it runs alone.
# The k8s_faults tests named here stop a part of the cluster; its other tests (SIGKILL then
# cleanup, a client pod deleted) keep to their own namespaces and run in e2e-k8s-core.
K8S_FAULTS_ALONE := a_kube_apiserver_restarted_during_observation_is_a_recorded_gap_and_the_trial_completes the_probe_nodes_kubelet_stopped_before_the_trigger_leaves_the_pod_terminating_and_its_flows_open

e2e-k8s-core: ## the probe's cluster tests that keep to their own objects (k8s_e2e, k8s_parallel, k8s_faults but K8S_FAULTS_ALONE)
	DRAINWATCH_E2E_KUBECONFIG=$${DRAINWATCH_E2E_KUBECONFIG:-$(LOCAL_KUBECONFIG)} \
	  scripts/cluster-test.sh k8s_e2e k8s_parallel k8s_faults -- --ignored --test-threads=1 --nocapture $(addprefix --skip ,$(K8S_FAULTS_ALONE))

e2e-faults: ## faults that stop part of the cluster or drain a node (K8S_FAULTS_ALONE, attach_faults): run them alone (needs make example-images)
	@# every name must still be a test: a renamed one would otherwise drop out of CI unnoticed
	@n=$$(scripts/cluster-test.sh k8s_faults -- --ignored --list --exact $(K8S_FAULTS_ALONE) | grep -c ': test$$'); \
	  [ "$$n" = $(words $(K8S_FAULTS_ALONE)) ] || { echo "e2e-faults: $$n of the $(words $(K8S_FAULTS_ALONE)) tests named in K8S_FAULTS_ALONE exist" >&2; exit 2; }
	DRAINWATCH_E2E_KUBECONFIG=$${DRAINWATCH_E2E_KUBECONFIG:-$(LOCAL_KUBECONFIG)} \
	  scripts/cluster-test.sh k8s_faults -- --ignored --test-threads=1 --nocapture --exact $(K8S_FAULTS_ALONE)
	DRAINWATCH_E2E_KUBECONFIG=$${DRAINWATCH_E2E_KUBECONFIG:-$(LOCAL_KUBECONFIG)} \
	DRAINWATCH_E2E_IMAGE=$${DRAINWATCH_E2E_IMAGE:-$(ATTACH_IMAGE)} \
	  scripts/cluster-test.sh attach_faults -- --ignored --test-threads=1 --nocapture
