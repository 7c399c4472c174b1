//! The default probe image, the tag the release workflow pushes and the name the local
//! cluster's image is built and imported under are one name: `ghcr.io/drainwatch/drainwatch:
//! v<version>`. A run with the default `--image` on the local cluster then finds the imported
//! image, and on any cluster the released one.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

use std::path::Path;

use drainwatch::k8s::DEFAULT_IMAGE;

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)).unwrap()
}

#[test]
fn the_default_image_is_the_release_tag() {
    assert_eq!(
        DEFAULT_IMAGE,
        format!(
            "ghcr.io/drainwatch/drainwatch:v{}",
            env!("CARGO_PKG_VERSION")
        )
    );
    let release = read(".github/workflows/release.yml");
    // The workflow runs on tags v*.*.* and pushes the image under each tag the tag rules name
    // (scripts/release-tag.sh: the exact tag always, tests/release_tags.rs).
    assert!(
        release.contains(r#"tags: ["v*.*.*"]"#),
        "release trigger changed"
    );
    assert!(
        release.contains(r#""docker://$IMAGE:$t""#),
        "release image tag changed"
    );
    assert!(release.contains("TAGS: ${{ needs.tag.outputs.tags }}"));
    assert!(release.contains("IMAGE: ghcr.io/${{ github.repository_owner }}/drainwatch"));
}

#[test]
fn the_local_cluster_builds_and_imports_the_default_image() {
    let lib = read("deploy/local-cluster/lib.sh");
    assert!(
        lib.contains(r#"echo "$IMAGE_REPO:v$v""#),
        "project_image must name the release tag"
    );
    let versions = read("deploy/local-cluster/versions.env");
    assert!(versions.contains(r#": "${IMAGE_REPO:=ghcr.io/drainwatch/drainwatch}""#));
    // The archive's name carries the tag, and make's copy of it agrees with lib.sh.
    assert!(lib.contains(r#"drainwatch-v$(crate_version).oci.tar"#));
    assert!(read("mk/k8s.mk").contains("images/drainwatch-v$(VERSION).oci.tar"));
}
