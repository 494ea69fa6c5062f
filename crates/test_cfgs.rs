// Shared by the build scripts of crates with PostgreSQL tests (`include!`d: a build script
// has no dependencies of its own here). `herald_pg_tests` when `HERALD_TEST_POSTGRES_URL` is
// set, `herald_ci` when `CI` is set. Without either, PostgreSQL tests are `#[ignore]`d, so
// the test runner lists them as skipped instead of counting them as passed; in CI they run
// and fail when PostgreSQL is missing or unreachable.

/// Emits the two cfgs (and their check-cfg declarations and rerun triggers).
fn emit_postgres_test_cfgs() {
    println!("cargo::rustc-check-cfg=cfg(herald_pg_tests)");
    println!("cargo::rustc-check-cfg=cfg(herald_ci)");
    println!("cargo::rerun-if-env-changed=HERALD_TEST_POSTGRES_URL");
    println!("cargo::rerun-if-env-changed=CI");
    if env_set("HERALD_TEST_POSTGRES_URL") {
        println!("cargo::rustc-cfg=herald_pg_tests");
    }
    if env_set("CI") {
        println!("cargo::rustc-cfg=herald_ci");
    }
}

/// True when the variable is set and not empty.
fn env_set(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty())
}
