drainwatch run   --drain-behavior drain --repeat 5 --out results/2026-11-30-local-cluster-v0.2.0/drain 
