# kind on this machine: podman as its engine, a node image built from the registries
# (deploy/kind/). Included by the top-level Makefile. Everything here needs root.
KIND_DIR := deploy/kind

.PHONY: kind-deps kind-image kind-up kind-down

kind-deps: ## install what kind needs here (podman, mmdebstrap, the dnsname CNI plugin) and build kind itself
	@$(KIND_DIR)/install-deps.sh

kind-image: kind-deps cluster-build ## build the kind node image from the registries (cached; rebuilt when an input changes)
	@$(LOCAL_CLUSTER)/mkpause.sh
	@$(KIND_DIR)/build-node-image.sh

kind-up: cluster-deps ## a kind cluster (1 control plane + 1 worker, flannel) from the node image built here; prints its kubeconfig
	@$(KIND_DIR)/up.sh

kind-down: ## delete the kind cluster (the node image and caches stay)
	@$(KIND_DIR)/down.sh
