//! What users get is built in the `dist` profile (stripped, fat LTO, one codegen unit), while
//! CI builds and tests the wheel in `release` (scripts/test-python: the same code, reusing what
//! `cargo test --release` compiled). These checks keep the shipped build's settings from
//! drifting where no CI build would notice: `pip wheel .` and the release workflow's wheels and
//! binaries use `dist`, and the release workflow tests its wheel before publishing.

fn read(path: &str) -> String {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The lines of the TOML table `[name]` in `text`, up to the next table.
fn table<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    let header = format!("[{name}]");
    let mut lines = text.lines().skip_while(|l| l.trim() != header);
    assert!(lines.next().is_some(), "no [{name}] table");
    lines.take_while(|l| !l.starts_with('[')).map(str::trim).collect()
}

#[test]
fn pip_wheel_builds_in_the_dist_profile() {
    let pyproject = read("pyproject.toml");
    let maturin = table(&pyproject, "tool.maturin");
    assert!(maturin.contains(&"profile = \"dist\""), "[tool.maturin] must build `dist`: {maturin:?}");
    assert!(maturin.contains(&"strip = true"), "[tool.maturin] must strip: {maturin:?}");
}

#[test]
fn the_dist_profile_is_stripped_with_fat_lto() {
    let manifest = read("Cargo.toml");
    let dist = table(&manifest, "profile.dist");
    for setting in ["inherits = \"release\"", "debug = false", "strip = true", "lto = \"fat\"", "codegen-units = 1"] {
        assert!(dist.contains(&setting), "[profile.dist] lacks `{setting}`: {dist:?}");
    }
}

#[test]
fn the_release_workflow_builds_dist_and_tests_its_wheel_before_publishing() {
    let workflow = read(".github/workflows/release.yml");
    // maturin-action's `args:` of every wheel job (the sdist's, after `command: sdist`, builds none).
    let lines: Vec<&str> = workflow.lines().map(str::trim).collect();
    let maturin_args: Vec<&str> =
        lines.windows(2).filter(|w| w[1].starts_with("args:") && w[0] != "command: sdist").map(|w| w[1]).collect();
    assert!(maturin_args.len() >= 4, "a wheel job per platform: {maturin_args:?}");
    for args in &maturin_args {
        assert!(args.contains("--profile dist"), "a wheel built outside `dist`: {args}");
    }
    let cli: Vec<&str> = workflow.lines().filter(|l| l.contains("cargo build")).collect();
    assert!(!cli.is_empty() && cli.iter().all(|l| l.contains("--profile dist")), "the CLI binaries: {cli:?}");
    assert!(workflow.contains("scripts/test-wheel \"$wheel\""), "the published wheel is tested first");
    let publish = workflow.split("\n  publish").nth(1).expect("a publish job");
    let needs = publish.lines().find(|l| l.trim_start().starts_with("needs:")).expect("publish needs");
    assert!(needs.contains("test-wheel"), "publishing waits for the wheel's tests: {needs}");
}
