//! The committed fuzz seeds (`fuzz/corpus/<target>/`) replayed as ordinary tests on stable: every
//! file goes through the property its cargo-fuzz target checks (round trips, split invariance,
//! caps, no panic). The property is one function in `fuzz/props/<target>.rs`, included here and
//! by the fuzz target alike, so the two cannot drift apart; the seeds include every input a fuzz
//! run found, kept as a regression.
//!
//! One test per target, so a failure names the target and the seed's path. The last test keeps
//! the set whole: every target in `fuzz/fuzz_targets/` is replayed here, has a seed directory, and
//! calls its shared property.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

#[path = "../fuzz/props/event_lines.rs"]
mod event_lines;
#[path = "../fuzz/props/h2_frames.rs"]
mod h2_frames;
#[path = "../fuzz/props/http_response.rs"]
mod http_response;
#[path = "../fuzz/props/policy_toml.rs"]
mod policy_toml;
#[path = "../fuzz/props/threshold_sentence.rs"]
mod threshold_sentence;
#[path = "../fuzz/props/unzip_path.rs"]
mod unzip_path;
#[path = "../fuzz/props/wire_tcp.rs"]
mod wire_tcp;
#[path = "../fuzz/props/wire_udp.rs"]
mod wire_udp;

use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

/// The names in `dir` (files or directories), sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

/// Runs every seed of `target` through `check`; a seed that panics fails the test with its
/// path (the property's own message is printed above it by the panic hook), and so does one that
/// is no input of the target (libFuzzer would reject it: the property never runs on it).
fn replay(target: &str, check: fn(&[u8]) -> bool) {
    let dir = fuzz_dir().join("corpus").join(target);
    let seeds = names(&dir);
    assert!(
        !seeds.is_empty(),
        "{} holds no seed: the target would replay nothing",
        dir.display()
    );
    for name in &seeds {
        let path = dir.join(name);
        assert!(path.is_file(), "{} is not a file", path.display());
        let data = std::fs::read(&path).unwrap();
        match panic::catch_unwind(AssertUnwindSafe(|| check(&data))) {
            Ok(true) => {}
            Ok(false) => panic!(
                "fuzz target {target}: seed {} is no input of the target, so it checks nothing",
                path.display()
            ),
            Err(e) => {
                let why = e
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| e.downcast_ref::<&str>().copied())
                    .unwrap_or("(no message)");
                panic!(
                    "fuzz target {target}: seed {} fails its property: {why}",
                    path.display()
                );
            }
        }
    }
}

/// The replayed targets, each one `#[test]` named after it.
macro_rules! replayed {
    ($($target:ident),* $(,)?) => {
        const REPLAYED: &[&str] = &[$(stringify!($target)),*];
        mod seeds {
            $(
                #[test]
                fn $target() {
                    super::replay(stringify!($target), super::$target::check);
                }
            )*
        }
    };
}

replayed!(
    event_lines,
    h2_frames,
    http_response,
    policy_toml,
    threshold_sentence,
    unzip_path,
    wire_tcp,
    wire_udp,
);

#[test]
fn every_fuzz_target_is_replayed_from_its_seeds_through_its_shared_property() {
    let targets: Vec<String> = names(&fuzz_dir().join("fuzz_targets"))
        .iter()
        .map(|f| {
            f.strip_suffix(".rs")
                .unwrap_or_else(|| panic!("fuzz/fuzz_targets/{f} is not a target"))
                .to_string()
        })
        .collect();
    assert_eq!(
        targets, REPLAYED,
        "fuzz/fuzz_targets/ and the targets replayed here differ"
    );
    assert_eq!(
        names(&fuzz_dir().join("corpus")),
        REPLAYED,
        "fuzz/corpus/ and the targets replayed here differ"
    );
    assert_eq!(
        names(&fuzz_dir().join("props")),
        REPLAYED
            .iter()
            .map(|t| format!("{t}.rs"))
            .collect::<Vec<_>>(),
        "fuzz/props/ and the targets replayed here differ"
    );
    for t in REPLAYED {
        let src = std::fs::read_to_string(fuzz_dir().join(format!("fuzz_targets/{t}.rs"))).unwrap();
        assert!(
            src.contains(&format!("#[path = \"../props/{t}.rs\"]"))
                && src.contains("props::check(data)"),
            "fuzz/fuzz_targets/{t}.rs does not run fuzz/props/{t}.rs's check"
        );
    }
}
