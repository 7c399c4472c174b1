# Fuzzing the parsers with cargo-fuzz (fuzz/, nightly), by hand: CI does not fuzz; `make test`
# replays the committed seeds through the same properties (tests/fuzz_corpora.rs). The tool, the
# build, the grown corpus and the artifacts live under $(DRAINWATCH_CACHE); only small seeds are
# committed.
.PHONY: fuzz-setup fuzz fuzz-smoke

FUZZ_S ?= 600

fuzz-setup: ## install cargo-fuzz (pinned) under the cache; reused when present
	@scripts/fuzz-setup.sh

fuzz: ## run every fuzz target FUZZ_S seconds (default 600), one after another
	FUZZ_S=$(FUZZ_S) scripts/fuzz.sh

fuzz-smoke: ## run every fuzz target 1,000,000 inputs from seed 1, 60 s at most
	FUZZ_S=60 FUZZ_FRESH=1 FUZZ_SEED=1 FUZZ_RUNS=1000000 scripts/fuzz.sh
