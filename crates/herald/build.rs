//! Tells the black-box tests (crates/herald/tests/api, macro `both_engines!`) whether their
//! PostgreSQL variants can run (crates/test_cfgs.rs: `herald_pg_tests`, `herald_ci`), and
//! `herald_python` when `python3` with `venv` is installed: the OpenAPI contract tests need it
//! and are skipped without it (outside CI); `herald_chromium` when a Chromium is on the PATH (or
//! named by `HERALD_TEST_CHROMIUM`) for the browser tests.

include!("../test_cfgs.rs");

fn main() {
    emit_postgres_test_cfgs();
    println!("cargo::rustc-check-cfg=cfg(herald_python)");
    println!("cargo::rerun-if-env-changed=PATH");
    // The OpenAPI contract tests drive Python tools installed into a virtualenv.
    let python = std::process::Command::new("python3")
        .args(["-c", "import venv, ensurepip"])
        .output()
        .is_ok_and(|o| o.status.success());
    if python {
        println!("cargo::rustc-cfg=herald_python");
    }
    // The browser tests drive a headless Chromium (herald_testkit::browser).
    println!("cargo::rustc-check-cfg=cfg(herald_chromium)");
    println!("cargo::rerun-if-env-changed=HERALD_TEST_CHROMIUM");
    let chromium = std::env::var_os("HERALD_TEST_CHROMIUM")
        .filter(|p| !p.is_empty())
        .map(std::path::PathBuf::from)
        .into_iter()
        .chain(std::env::var_os("PATH").into_iter().flat_map(|path| {
            std::env::split_paths(&path)
                .flat_map(|dir| {
                    ["chromium", "chromium-browser", "google-chrome"].map(|n| dir.join(n))
                })
                .collect::<Vec<_>>()
        }))
        .any(|p| p.is_file());
    if chromium {
        println!("cargo::rustc-cfg=herald_chromium");
    }
}
