# Benchmarks (issue 8): probe and client as separate processes on loopback, at 100, 1,000 and
# 9,000 TCP + as many UDP flows, 3 repeats each. A measurement, not a test: run it on an
# otherwise idle machine (bench.json records the load average before and after every run).
BENCH_DATE ?= $(shell date -u +%Y-%m-%d)
BENCH_OUT ?= results/bench/$(BENCH_DATE)
BENCH_ARGS ?=
# Client processes sharing each scale's flows: past one process's open-file limit (18k+18k
# here needs 2), `make bench BENCH_SCALES=18000 BENCH_CLIENTS=2`.
BENCH_CLIENTS ?= 1
BENCH_SCALES ?= 100,1000,9000

.PHONY: bench bench-quick

bench: ## benchmark flows, precision and cost at 100/1k/9k flows (results/bench/<date>/)
	$(CARGO) build --release
	python3 scripts/bench.py --bin $(CARGO_TARGET_DIR)/release/drainwatch --out $(BENCH_OUT) --clients $(BENCH_CLIENTS) --scales $(BENCH_SCALES) $(BENCH_ARGS)
	python3 scripts/bench_chart.py $(BENCH_OUT)/bench.json $(BENCH_OUT)/bench.svg

bench-quick: ## one short run per scale, to check the harness (not for the record)
	$(MAKE) bench BENCH_OUT=out/bench-quick BENCH_SCALES=100,1000 BENCH_ARGS="--repeats 1 --window 5"
