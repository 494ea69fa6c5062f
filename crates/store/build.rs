// `sqlx::migrate!` embeds the migrations at compile time; a new or changed migration file must
// rebuild the crate even when no Rust source changed. The crate's own PostgreSQL tests run or
// are listed as skipped by the cfgs of crates/test_cfgs.rs.

include!("../test_cfgs.rs");

fn main() {
    println!("cargo:rerun-if-changed=migrations");
    emit_postgres_test_cfgs();
}
