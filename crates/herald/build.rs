//! Tells the black-box tests (crates/herald/tests/api, macro `both_engines!`) whether their
//! PostgreSQL variants can run: `herald_pg_tests` when `HERALD_TEST_POSTGRES_URL` is set, and
//! `herald_ci` when `CI` is set. Without either, the PostgreSQL variants are `#[ignore]`d, so
//! the test runner lists them as skipped instead of counting them as passed; in CI they run
//! and fail when PostgreSQL is missing or unreachable. Likewise `herald_python` when `python3`
//! with `venv` is installed: the OpenAPI contract tests need it and are skipped without it
//! (outside CI).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(herald_pg_tests)");
    println!("cargo::rustc-check-cfg=cfg(herald_ci)");
    println!("cargo::rustc-check-cfg=cfg(herald_python)");
    println!("cargo::rerun-if-env-changed=PATH");
    println!("cargo::rerun-if-env-changed=HERALD_TEST_POSTGRES_URL");
    println!("cargo::rerun-if-env-changed=CI");
    let set = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
    if set("HERALD_TEST_POSTGRES_URL") {
        println!("cargo::rustc-cfg=herald_pg_tests");
    }
    // The OpenAPI contract tests drive Python tools installed into a virtualenv.
    let python = std::process::Command::new("python3")
        .args(["-c", "import venv, ensurepip"])
        .output()
        .is_ok_and(|o| o.status.success());
    if python {
        println!("cargo::rustc-cfg=herald_python");
    }
    if set("CI") {
        println!("cargo::rustc-cfg=herald_ci");
    }
}
