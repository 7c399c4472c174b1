# The soak (issue 18): N trials as separate runs, each followed by a check that nothing was left
# behind, then N trials in one policy run with the orchestrator's RSS and fds sampled after each.
# Runs against the local cluster that is already up (it never brings one up or down) and stays
# out of .ci/run: about 25 s of cluster time per trial, so N=50 takes ~45 min (CONTRIBUTING.md, "Soak").
# Included by the top-level Makefile (-include mk/*.mk).
N ?= 50
SOAK_PARTS ?= AB
SOAK_OUT ?= results/$(shell date -u +%Y-%m-%d)-soak-N$(N)
SOAK_IMAGE ?= $(ATTACH_IMAGE)
SOAK_ARGS ?=

.PHONY: soak

soak: build ## N=50 trials as separate runs (leak check after each) and in one process (RSS/fds); on the running local cluster
	python3 scripts/soak.py --bin $(DW) --n $(N) --parts $(SOAK_PARTS) \
	  --kubeconfig $${KUBECONFIG:-$(LOCAL_KUBECONFIG)} --kubectl $(LOCAL_CLUSTER_KUBECTL) \
	  --image $(SOAK_IMAGE) --out $(SOAK_OUT) --command "make soak N=$(N)$(if $(filter-out AB,$(SOAK_PARTS)), SOAK_PARTS=$(SOAK_PARTS))$(if $(filter command line,$(origin SOAK_OUT)), SOAK_OUT=$(SOAK_OUT))" $(SOAK_ARGS)
