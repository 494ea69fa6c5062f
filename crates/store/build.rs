// `sqlx::migrate!` embeds the migrations at compile time; a new or changed migration file must
// rebuild the crate even when no Rust source changed.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
