//! Tells the black-box tests (crates/herald/tests/api, macro `both_engines!`) whether their
//! PostgreSQL variants can run (crates/test_cfgs.rs: `herald_pg_tests`, `herald_ci`), and
//! `herald_python` when `python3` with `venv` is installed: the OpenAPI contract tests need it
//! and are skipped without it (outside CI).

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
}
