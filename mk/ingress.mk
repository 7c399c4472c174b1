# Ingress controllers built from the registries for the testbed (deploy/ingress/). Included by
# the top-level Makefile.
INGRESS_DIR := deploy/ingress

.PHONY: traefik traefik-image test-ingress e2e-ingress

traefik: ## build Traefik from the Go module proxy (cached under /var/cache/drainwatch-k8s; ~6 min cold)
	@$(INGRESS_DIR)/traefik-build.sh >/dev/null

test-ingress: ## the attach client through a real Traefik on loopback, each request joined to its upstream, and a retrying Traefik's hidden attempts read from its counters (builds Traefik first)
	@bin=$$($(INGRESS_DIR)/traefik-build.sh) && \
	  DRAINWATCH_TRAEFIK="$$bin" cargo test --test ingress_traefik -- --ignored

traefik-image: ## Traefik as an image (docker.io/library/traefik:VERSION) imported into the local cluster's nodes
	@$(INGRESS_DIR)/traefik-image.sh

e2e-ingress: traefik-image ## a rollout of bad-shutdown through Traefik on the local cluster, each 502 attributed to its pod, Traefik's lag judged, the derived preStop making it pass, the same rollout through its ingress-nginx provider with its hidden retries and its waits on gone pods, then with a sidecar keeping the pods up, and through a Traefik each trial deploys (--ingress-managed), its target finally scaled to zero (503, then 404) (DRAINWATCH_E2E_KUBECONFIG; needs make example-images)
	DRAINWATCH_E2E_KUBECONFIG=$${DRAINWATCH_E2E_KUBECONFIG:-$(LOCAL_KUBECONFIG)} \
	DRAINWATCH_E2E_IMAGE=$${DRAINWATCH_E2E_IMAGE:-$(ATTACH_IMAGE)} \
	  scripts/cluster-test.sh ingress_e2e -- --ignored --test-threads=1 --nocapture
