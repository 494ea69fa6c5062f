//! How the global allocator (mimalloc) hands freed memory back to the system.
//!
//! mimalloc 3 keeps freed pages committed for `purge_delay` = 1 s before it returns them (and
//! its arenas ten times longer). Under a steady stream of short-lived allocations (a
//! campaign's fan-out pages while its deliveries compose and sign) that second of garbage
//! stays resident: a 100,000-recipient campaign peaked at 130-150 MB, against 108-110 MB with
//! immediate purging, at the same delivered/s and `/v1/track` throughput (docs/benchmarks.md,
//! 2026-11-25). [`purge_freed_memory_promptly`] makes immediate purging the default; the
//! environment variable `MIMALLOC_PURGE_DELAY` (milliseconds) still overrides it.

/// `mi_option_purge_delay` in mimalloc 3's `mi_option_t` (`mimalloc.h`); `libmimalloc-sys`
/// does not name it. The test below checks it against the documented default.
#[cfg(feature = "mimalloc")]
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// A process's `main`: the allocator option first (before any other thread exists), then
/// `main` on tokio's multi-thread runtime. Used by `herald` and `herald-bench`.
pub fn run_main(main: impl Future<Output = anyhow::Result<()>>) -> anyhow::Result<()> {
    purge_freed_memory_promptly();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(main)
}

/// Call once at the start of `main`, before other threads start: mimalloc's option setters
/// are not thread safe. Without the `mimalloc` feature it does nothing.
fn purge_freed_memory_promptly() {
    #[cfg(feature = "mimalloc")]
    // SAFETY: sets one integer option of the allocator, by its index in mimalloc's option
    // table (in range, see the test); called before any other thread exists.
    #[allow(unsafe_code)]
    unsafe {
        libmimalloc_sys::mi_option_set_default(MI_OPTION_PURGE_DELAY, 0);
    }
}

/// Where the process's memory is, for the benchmarks' progress lines: what SQLite holds (all
/// connections' page and statement caches and schemas, allocated with the C library's
/// malloc), and what mimalloc has committed (everything Rust allocates), in bytes.
#[derive(Clone, Copy, Debug)]
pub struct HeapUse {
    pub sqlite: i64,
    /// `None` without the `mimalloc` feature.
    pub mimalloc_committed: Option<usize>,
}

/// Reads both counters; each is one call into the allocator's or SQLite's own statistics.
pub fn heap_use() -> HeapUse {
    // SAFETY: `sqlite3_memory_used` reads SQLite's global memory statistics; it takes no
    // argument and is safe to call from any thread at any time.
    #[allow(unsafe_code)]
    let sqlite = unsafe { libsqlite3_sys::sqlite3_memory_used() };
    HeapUse {
        sqlite,
        mimalloc_committed: mimalloc_committed(),
    }
}

#[cfg(feature = "mimalloc")]
fn mimalloc_committed() -> Option<usize> {
    let mut values = [0usize; 8];
    let [elapsed, user, system, rss, peak_rss, commit, peak_commit, faults] = &mut values;
    // SAFETY: every pointer is to a live, distinct `usize` that mimalloc writes once.
    #[allow(unsafe_code)]
    unsafe {
        libmimalloc_sys::mi_process_info(
            elapsed,
            user,
            system,
            rss,
            peak_rss,
            commit,
            peak_commit,
            faults,
        );
    }
    Some(values[5])
}

#[cfg(not(feature = "mimalloc"))]
fn mimalloc_committed() -> Option<usize> {
    None
}

#[cfg(all(test, feature = "mimalloc"))]
mod tests {
    use super::*;

    #[test]
    fn the_purge_delay_index_names_mimallocs_purge_delay() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            eprintln!("skipped: MIMALLOC_PURGE_DELAY is set");
            return;
        }
        // SAFETY: reads one option; this test process never calls the setter.
        #[allow(unsafe_code)]
        let value = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        assert_eq!(value, 1000, "mimalloc 3 documents purge_delay = 1000 ms");
    }
}
