#!/usr/bin/env python3
"""The node image's /kind/manifests, from upstream's own files with the images built here.

  manifests.py cni KUBE_FLANNEL_YML FLANNEL_IMAGE
      flannel's kube-flannel.yml as kind's default CNI: kind renders it as a template with the
      cluster's pod subnet (the marker comment below asks it to), host-gw (kind's nodes share
      one bridge), flanneld started through iptables-mode (the node's iptables backend), CNI
      spec 0.4.0 (the flannel plugin of containernetworking/plugins v0.9.1 knows no later one).
  manifests.py storage KIND_CONST_STORAGE_GO PROVISIONER_IMAGE HELPER_IMAGE
      kind's default storage manifest (local-path-provisioner) from kind's source.

Every substitution must apply exactly as expected: an upstream change fails the build by name
instead of shipping a manifest that half applies.
"""
import re
import sys


def sub(text, old, new, count=None):
    n = text.count(old)
    if n == 0 or (count is not None and n != count):
        sys.exit(f"manifests.py: expected {count or 'some'} of {old!r} in the upstream file, found {n}")
    return text.replace(old, new)


def cni(path, image):
    t = open(path).read()
    t = re.sub(r"ghcr\.io/flannel-io/flannel-cni-plugin:\S+", image, t)
    t = re.sub(r"ghcr\.io/flannel-io/flannel:\S+", image, t)
    if "ghcr.io" in t:
        sys.exit("manifests.py: an image of kube-flannel.yml was not replaced")
    t = sub(t, '"Network": "10.244.0.0/16"', '"Network": "{{ .PodSubnet }}"', 1)
    t = sub(t, '"Type": "vxlan"', '"Type": "host-gw"', 1)
    t = sub(t, '"cniVersion": "1.0.0"', '"cniVersion": "0.4.0"', 1)
    t = sub(t, "        - /opt/bin/flanneld\n",
            "        - /usr/local/bin/iptables-mode\n        - /opt/bin/flanneld\n", 1)
    return "# would you kindly template this file\n" + t


def storage(path, provisioner, helper):
    s = open(path).read()
    m = re.search(r"const defaultStorageManifest = `(.*?)\n`", s, re.S)
    if not m:
        sys.exit("manifests.py: no defaultStorageManifest in " + path)
    t = sub(m.group(1), "` + storageProvisionerImage + `", provisioner)
    t = sub(t, "` + storageHelperImage + `", helper)
    return t + "\n"


if __name__ == "__main__":
    kind, *args = sys.argv[1:]
    if kind == "cni" and len(args) == 2:
        print(cni(*args), end="")
    elif kind == "storage" and len(args) == 3:
        print(storage(*args), end="")
    else:
        sys.exit(__doc__)
