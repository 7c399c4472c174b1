# Release artifacts (issue 19): both architectures' static binaries, their sums, the multi-arch
# image as one OCI archive and the SBOM, under DIST_DIR; then the aarch64 binary's trial under
# qemu. Included by the top-level Makefile (-include mk/*.mk). release.yml runs these targets.
DIST_DIR ?= $(DRAINWATCH_CACHE)/dist/$(VERSION)
DIST_TEST_OUT ?= $(DIST_DIR)/qemu-trial
export DIST_DIR

.PHONY: dist-setup dist dist-test

dist-setup: ## install what make dist needs, pinned, outside the repo (rust musl targets, ziglang venv, cargo-zigbuild, cargo-cyclonedx, qemu-user-static)
	@scripts/dist-setup.sh >/dev/null

# The zig-built release has its own cache: sharing cargo-target with image.sh's musl-gcc build
# would make each rebuild the other's (the C compiler's env is in build-script fingerprints).
DIST_TARGET_DIR ?= $(DRAINWATCH_CACHE)/target-release

dist: ## x86_64 + aarch64 static binaries, sha256 sums, a multi-arch OCI image archive and a CycloneDX SBOM in DIST_DIR
	@CARGO_TARGET_DIR=$(DIST_TARGET_DIR) scripts/dist.sh

dist-test: ## the aarch64 binary under qemu: --version and the three arms on loopback, reports checked against the schema (needs make dist)
	@python3 scripts/dist_test.py --bin $(DIST_DIR)/drainwatch-aarch64-linux-musl --out $(DIST_TEST_OUT)
	DRAINWATCH_DIST_TEST_OUT=$(DIST_TEST_OUT) $(CARGO) test --test dist_qemu -- --ignored --nocapture
