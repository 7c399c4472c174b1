# drainwatch: every entry point a human or CI uses. `.ci/run` calls these same targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

# Build caches live outside the repository, keyed by nothing the checkout owns.
DRAINWATCH_CACHE ?= /var/cache/drainwatch
export CARGO_TARGET_DIR ?= $(DRAINWATCH_CACHE)/cargo-target

CARGO ?= cargo
OUT ?= out

.PHONY: help build test lint fmt docs local-demo setup

help: ## list the targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

setup: ## install what the build needs (Debian packages, Rust targets)
	@scripts/setup.sh

build: ## build the drainwatch binary (debug)
	$(CARGO) build

test: ## run every test that needs no cluster (unit, property, loopback, replay, schema)
	$(CARGO) test --all-targets

lint: ## rustfmt check and clippy with warnings as errors
	$(CARGO) fmt --check
	$(CARGO) clippy --all-targets -- -D warnings

fmt: ## format the sources
	$(CARGO) fmt

docs: ## rewrite the generated parts of the docs (threshold table, CLI reference, image size, the pull-request page) from the code
	DRAINWATCH_BLESS=1 $(CARGO) test --test threshold_doc --test cli_doc --test generated_docs

local-demo: setup build ## one drain trial against a local probe process (no cluster)
	$(CARGO_TARGET_DIR)/debug/drainwatch run --platform local --drain-behavior drain --out $(OUT)/local-drain --clean-out

-include mk/*.mk
