//! `patchbench run --kernels DIR` through the real binary: a kernel whose
//! sha256 differs from its `kernels.json` is refused before the tree is
//! imported and before any boot. (A real run with prebuilt kernels is in
//! tests/e2e.rs.)

use std::path::Path;
use std::process::Command;

use patchbench::build::KernelArtifact;
use patchbench::campaign::KernelManifest;

fn record(dir: &Path, variant: &str, content: &str) -> KernelManifest {
    let image = dir.join(format!("built-{variant}"));
    std::fs::write(&image, content).unwrap();
    KernelManifest {
        variant: variant.into(),
        artifact: KernelArtifact {
            commit: "0".repeat(40),
            build_dir: dir.to_owned(),
            bzimage_sha256: patchbench::tree::sha256_file(&image).unwrap(),
            bzimage: image,
            vmlinux: None,
            hz: None,
            config_sha256: "c".repeat(64),
            compiler: "gcc".into(),
            key: "0123456789abcdef".into(),
            series_sha256: None,
            build_seconds: 1.0,
            incremental: false,
            started_from: None,
            reused: false,
            objects_rebuilt: 1,
            rebuilt: Vec::new(),
        },
    }
}

#[test]
fn a_kernel_whose_sha256_differs_from_the_manifest_is_refused_before_any_boot() {
    let tmp = tempfile::tempdir().unwrap();
    let kernels = tmp.path().join("kernels");
    let records = vec![
        record(tmp.path(), "A", "kernel A"),
        record(tmp.path(), "B", "kernel B"),
    ];
    patchbench::campaign::export(&records, &kernels).unwrap();
    // The upload was swapped, or corrupted, on its way to the bench job.
    std::fs::write(kernels.join("bzImage-B"), "another kernel").unwrap();
    let out = tmp.path().join("out");
    let cache = tmp.path().join("cache");
    let output = Command::new(env!("CARGO_BIN_EXE_patchbench"))
        .args(["run", "--accel", "tcg", "--kernels"])
        .arg(&kernels)
        .arg("--out")
        .arg(&out)
        .arg("--cache-dir")
        .arg(&cache)
        .env("PATCHBENCH_AGENT", patchbench::find_agent().unwrap())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("bzImage-B has sha256")
            && stderr.contains("kernels.json records")
            && stderr.contains("refusing to boot it"),
        "{stderr}"
    );
    // Refused before anything else: no tree imported, no boot started.
    assert!(!out.join("boots").exists(), "a boot directory exists");
    assert!(!out.join("results.json").exists());
    assert!(!cache.join("trees").exists() && !cache.join("builds").exists());
    assert!(!stderr.contains("import"), "{stderr}");
}
