drainwatch run   --drain-behavior ignore --repeat 5 --out results/2026-11-30-local-cluster-v0.2.0/ignore 
