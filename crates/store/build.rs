// `sqlx::migrate!` embeds the migrations at compile time; a new or changed migration file must
// rebuild the crate even when no Rust source changed.
//
// `herald_pg_tests` (HERALD_TEST_POSTGRES_URL set) and `herald_ci` (CI set) decide whether the
// crate's own PostgreSQL tests run or are listed as skipped, as in crates/herald/build.rs.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
    println!("cargo::rustc-check-cfg=cfg(herald_pg_tests)");
    println!("cargo::rustc-check-cfg=cfg(herald_ci)");
    println!("cargo::rerun-if-env-changed=HERALD_TEST_POSTGRES_URL");
    println!("cargo::rerun-if-env-changed=CI");
    let set = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
    if set("HERALD_TEST_POSTGRES_URL") {
        println!("cargo::rustc-cfg=herald_pg_tests");
    }
    if set("CI") {
        println!("cargo::rustc-cfg=herald_ci");
    }
}
