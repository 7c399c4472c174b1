# Attach: measure your own workload (the two example services) on the local cluster.
# Included by the top-level Makefile (-include mk/*.mk).
ATTACH_IMAGE ?= ghcr.io/drainwatch/drainwatch:$(VERSION)-attach
LOCAL_CLUSTER_KUBECTL ?= /var/cache/drainwatch-k8s/v1.34.4/bin/kubectl

.PHONY: example-images examples-apply e2e-attach e2e-attach-core e2e-attach-cluster-wide e2e-attach-long e2e-compare e2e-walkthrough e2e-shards

example-images: ## build the example services' images and this checkout's drainwatch image ($(ATTACH_IMAGE)); import them into the local cluster
	@DW_IMAGE=$${DW_IMAGE:-$(ATTACH_IMAGE)} $(LOCAL_CLUSTER)/example-images.sh

examples-apply: ## apply the example services (good, bad and stuck Deployments over HTTP/1.1 and h2c, the good StatefulSet, grpc-good and grpc-bad, ws-good and ws-bad; Services, PDBs) to the local cluster, after the examples-tls Secret (CA for --ca-file: /var/lib/drainwatch-cluster/examples-ca.crt)
	@$(LOCAL_CLUSTER)/examples-tls.sh
	$(LOCAL_CLUSTER_KUBECTL) --kubeconfig $(LOCAL_KUBECONFIG) apply -f examples/k8s/namespace.yaml -f examples/k8s/good-shutdown.yaml -f examples/k8s/good-shutdown-sts.yaml -f examples/k8s/bad-shutdown.yaml -f examples/k8s/stuck-shutdown.yaml -f examples/k8s/ws-good.yaml -f examples/k8s/ws-bad.yaml -f examples/k8s/grpc-good.yaml -f examples/k8s/grpc-bad.yaml

e2e-attach: ## attach end-to-end tests on the local cluster (DRAINWATCH_E2E_KUBECONFIG; needs make example-images)
	@$(LOCAL_CLUSTER)/examples-tls.sh  # the examples-tls Secret and its CA on this host (the wss test; grpc-good mounts it)
	DRAINWATCH_E2E_KUBECONFIG=$${DRAINWATCH_E2E_KUBECONFIG:-$(LOCAL_KUBECONFIG)} \
	DRAINWATCH_E2E_IMAGE=$${DRAINWATCH_E2E_IMAGE:-$(ATTACH_IMAGE)} \
	  scripts/cluster-test.sh attach_e2e attach_faults -- --ignored --test-threads=1 --nocapture

# The attach tests that change more than their own example's Deployment (a node's cordon, the
# shared drainwatch-system RBAC objects) run alone in the cluster run (deploy/local-cluster/ci.sh);
# the rest run beside the probe's tests.
ATTACH_CLUSTER_WIDE := earned::a_drain_held_by_a_pdb_terminates_nothing_and_fails_the_gate drain_node_replaces_the_good_example_elsewhere_and_uncordons an_interrupted_run_leaves_the_workload_as_found the_attach_rbac_grants_what_attach_needs

# Attach tests that wait on a long grace period (a pod killed at 240 s): their own namespace, run
# in the walkthrough lane so that the attach lane does not grow by their minutes.
ATTACH_LONG := earned::a_pod_that_ignores_sigterm_is_watched_to_its_sigkill_at_the_grace_boundary

e2e-attach-core: ## the attach end-to-end tests that touch only the example services' own objects
	@$(LOCAL_CLUSTER)/examples-tls.sh
	DRAINWATCH_E2E_KUBECONFIG=$${DRAINWATCH_E2E_KUBECONFIG:-$(LOCAL_KUBECONFIG)} \
	DRAINWATCH_E2E_IMAGE=$${DRAINWATCH_E2E_IMAGE:-$(ATTACH_IMAGE)} \
	  scripts/cluster-test.sh attach_e2e -- --ignored --test-threads=1 --nocapture $(addprefix --skip ,$(ATTACH_CLUSTER_WIDE) $(ATTACH_LONG))

e2e-attach-long: ## the attach end-to-end tests that wait out a long grace period, in namespaces of their own (~5 min)
	@n=$$(scripts/cluster-test.sh attach_e2e -- --ignored --list --exact $(ATTACH_LONG) | grep -c ': test$$'); \
	  [ "$$n" = $(words $(ATTACH_LONG)) ] || { echo "e2e-attach-long: $$n of the $(words $(ATTACH_LONG)) tests named in ATTACH_LONG exist" >&2; exit 2; }
	DRAINWATCH_E2E_KUBECONFIG=$${DRAINWATCH_E2E_KUBECONFIG:-$(LOCAL_KUBECONFIG)} \
	DRAINWATCH_E2E_IMAGE=$${DRAINWATCH_E2E_IMAGE:-$(ATTACH_IMAGE)} \
	  scripts/cluster-test.sh attach_e2e -- --ignored --test-threads=1 --nocapture --exact $(ATTACH_LONG)

e2e-attach-cluster-wide: ## the attach end-to-end tests that cordon a node or change the shared RBAC objects (run alone)
	@$(LOCAL_CLUSTER)/examples-tls.sh
	@# every name must still be a test: a renamed one would otherwise drop out of CI unnoticed
	@n=$$(scripts/cluster-test.sh attach_e2e -- --ignored --list --exact $(ATTACH_CLUSTER_WIDE) | grep -c ': test$$'); \
	  [ "$$n" = $(words $(ATTACH_CLUSTER_WIDE)) ] || { echo "e2e-attach-cluster-wide: $$n of the $(words $(ATTACH_CLUSTER_WIDE)) tests named in ATTACH_CLUSTER_WIDE exist" >&2; exit 2; }
	DRAINWATCH_E2E_KUBECONFIG=$${DRAINWATCH_E2E_KUBECONFIG:-$(LOCAL_KUBECONFIG)} \
	DRAINWATCH_E2E_IMAGE=$${DRAINWATCH_E2E_IMAGE:-$(ATTACH_IMAGE)} \
	  scripts/cluster-test.sh attach_e2e -- --ignored --test-threads=1 --nocapture --exact $(ATTACH_CLUSTER_WIDE)

e2e-compare: ## drainwatch compare on fresh cluster runs: 1 good-shutdown trial against 1 bad-shutdown exits 1 naming the regression, good against good 0 (DRAINWATCH_E2E_KUBECONFIG; needs make example-images)
	DRAINWATCH_E2E_KUBECONFIG=$${DRAINWATCH_E2E_KUBECONFIG:-$(LOCAL_KUBECONFIG)} \
	DRAINWATCH_E2E_IMAGE=$${DRAINWATCH_E2E_IMAGE:-$(ATTACH_IMAGE)} \
	  scripts/cluster-test.sh compare_e2e -- --ignored --test-threads=1 --nocapture

e2e-walkthrough: ## run docs/gate-your-service.md's walk-through blocks in order on the local cluster (tests/walkthrough_e2e.rs; WALKTHROUGH_LOG=FILE keeps the output)
	DRAINWATCH_E2E_KUBECONFIG=$${DRAINWATCH_E2E_KUBECONFIG:-$(LOCAL_KUBECONFIG)} \
	DRAINWATCH_E2E_IMAGE=$${DRAINWATCH_E2E_IMAGE:-$(ATTACH_IMAGE)} \
	DRAINWATCH_WALKTHROUGH_LOG=$(WALKTHROUGH_LOG) \
	  scripts/cluster-test.sh walkthrough_e2e -- --ignored --test-threads=1 --nocapture

e2e-shards: ## --clients 2 as client pods, one per node: an attach rollout restart, the probe, a shard pod lost mid-trial (tests/shards_e2e.rs; needs make example-images)
	DRAINWATCH_E2E_KUBECONFIG=$${DRAINWATCH_E2E_KUBECONFIG:-$(LOCAL_KUBECONFIG)} \
	DRAINWATCH_E2E_IMAGE=$${DRAINWATCH_E2E_IMAGE:-$(ATTACH_IMAGE)} \
	  scripts/cluster-test.sh shards_e2e -- --ignored --test-threads=1 --nocapture
