//! Every stored input of every target runs clean: the seeds in
//! `fuzz/corpus/<target>/` and every input a fuzzer once crashed on, kept
//! in `fuzz/regressions/<target>/` when it was fixed.

use std::fs;
use std::path::Path;

use tollgate_fuzz::TARGETS;

fn replay(kind: &str) -> usize {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(kind);
    let mut ran = 0;
    for (name, target) in TARGETS {
        let Ok(dir) = fs::read_dir(root.join(name)) else {
            continue;
        };
        for entry in dir.flatten() {
            let path = entry.path();
            let data = fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            println!("{name}: {}", path.display());
            target(&data);
            ran += 1;
        }
    }
    ran
}

#[test]
fn seeds_run_clean() {
    let ran = replay("corpus");
    assert!(ran >= TARGETS.len(), "every target has seeds, found {ran} inputs");
}

#[test]
fn regressions_stay_fixed() {
    replay("regressions");
}

#[test]
fn every_target_has_a_seed_directory() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    for (name, _) in TARGETS {
        assert!(root.join(name).is_dir(), "fuzz/corpus/{name} is missing");
    }
}
