#!/bin/bash
# the fault tests on the merged tree (integ2), under the cluster lock
cd /work/integ2
export CARGO_TARGET_DIR=/var/cache/drainwatch/target-faults DRAINWATCH_E2E_KUBECONFIG=/var/lib/drainwatch-cluster/admin.kubeconfig
R=/work/logs/final-faults
mkdir -p $R
date -u > $R/start
/usr/bin/time -f 'wall %e s' cargo test --test k8s_faults -- --ignored --test-threads=1 --nocapture > $R/k8s_faults.log 2>&1; echo "rc=$?" >> $R/k8s_faults.log
DRAINWATCH_E2E_IMAGE=ghcr.io/drainwatch/drainwatch:0.2.0-attach /usr/bin/time -f 'wall %e s' cargo test --test attach_faults -- --ignored --test-threads=1 --nocapture > $R/attach_faults.log 2>&1; echo "rc=$?" >> $R/attach_faults.log
date -u > $R/end
echo FAULTS-DONE
