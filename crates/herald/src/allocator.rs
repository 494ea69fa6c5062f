//! How the global allocator (mimalloc) hands freed memory back to the system.
//!
//! mimalloc 3 keeps freed pages committed for `purge_delay` = 1 s before it returns them (and
//! its arenas ten times longer). Under a steady stream of short-lived allocations (a
//! campaign's fan-out pages while its deliveries compose and sign) that second of garbage
//! stays resident: tens of MB of a delivering node's peak, while purging at once costs no
//! delivered/s or `/v1/track` throughput (docs/benchmarks.md, `campaign`).
//! [`purge_freed_memory_promptly`] makes immediate purging the default; the
//! environment variable `MIMALLOC_PURGE_DELAY` (milliseconds) still overrides it.

/// `mi_option_purge_delay` in mimalloc 3's `mi_option_t` (`mimalloc.h`); `libmimalloc-sys`
/// does not name it. The test below checks it against the documented default.
#[cfg(feature = "mimalloc")]
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// A process's `main`: the allocator option first (before any other thread exists), then
/// `main` on tokio's multi-thread runtime. Used by `herald` and `herald-bench`.
pub fn run_main(main: impl Future<Output = anyhow::Result<()>>) -> anyhow::Result<()> {
    purge_freed_memory_promptly();
    sqlite_allocates_with_mimalloc();
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

/// SQLite's own allocations (page caches, statements, schemas) go to mimalloc too, not to
/// the C library's malloc: there, with one SQLite connection thread per connection, the
/// per-thread arenas fragmented, and a delivering node's RSS crept up with every delivery
/// while SQLite's memory in use stayed flat (docs/benchmarks.md, `campaign`). Call before the
/// first SQLite connection opens (SQLite takes the setting only before it initializes);
/// without the `mimalloc` feature it does nothing.
fn sqlite_allocates_with_mimalloc() {
    #[cfg(feature = "mimalloc")]
    {
        let rc = sqlite_mem::install();
        if rc != libsqlite3_sys::SQLITE_OK {
            eprintln!("SQLite keeps the C library's malloc (sqlite3_config returned {rc})");
        }
    }
}

/// The `sqlite3_mem_methods` over mimalloc (SQLite's "alternative low-level memory allocator"
/// interface, `SQLITE_CONFIG_MALLOC`).
#[cfg(feature = "mimalloc")]
#[allow(unsafe_code)]
mod sqlite_mem {
    use std::ffi::{c_int, c_void};

    use libsqlite3_sys as ffi;

    // SAFETY (all five): mimalloc's functions take any size and any pointer it returned (or
    // null), which is all SQLite passes; SQLite never asks for a negative size.
    unsafe extern "C" fn malloc(n: c_int) -> *mut c_void {
        unsafe { libmimalloc_sys::mi_malloc(n.max(0) as usize) }
    }
    unsafe extern "C" fn free(p: *mut c_void) {
        unsafe { libmimalloc_sys::mi_free(p) }
    }
    unsafe extern "C" fn realloc(p: *mut c_void, n: c_int) -> *mut c_void {
        unsafe { libmimalloc_sys::mi_realloc(p, n.max(0) as usize) }
    }
    unsafe extern "C" fn size(p: *mut c_void) -> c_int {
        let n = unsafe { libmimalloc_sys::mi_usable_size(p) };
        c_int::try_from(n).unwrap_or(c_int::MAX)
    }
    unsafe extern "C" fn roundup(n: c_int) -> c_int {
        let n = unsafe { libmimalloc_sys::mi_good_size(n.max(0) as usize) };
        c_int::try_from(n).unwrap_or(c_int::MAX)
    }
    unsafe extern "C" fn init(_: *mut c_void) -> c_int {
        ffi::SQLITE_OK
    }
    unsafe extern "C" fn shutdown(_: *mut c_void) {}

    /// Installs the methods; SQLite's answer (`SQLITE_OK`, or `SQLITE_MISUSE` once it has
    /// initialized).
    pub(super) fn install() -> c_int {
        let methods = ffi::sqlite3_mem_methods {
            xMalloc: Some(malloc),
            xFree: Some(free),
            xRealloc: Some(realloc),
            xSize: Some(size),
            xRoundup: Some(roundup),
            xInit: Some(init),
            xShutdown: Some(shutdown),
            pAppData: std::ptr::null_mut(),
        };
        // SAFETY: SQLite copies the struct; called before any connection exists (SQLite
        // refuses it with SQLITE_MISUSE after its initialization, and keeps its own malloc).
        unsafe {
            ffi::sqlite3_config(
                ffi::SQLITE_CONFIG_MALLOC,
                &methods as *const ffi::sqlite3_mem_methods,
            )
        }
    }
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

    /// Once installed (before SQLite initializes: nextest runs each test in a process of its
    /// own, and no other test of this crate opens SQLite), what SQLite allocates, for a
    /// connection and for itself, lies in mimalloc's heap.
    #[test]
    #[allow(unsafe_code)]
    fn sqlite_allocates_from_mimalloc_once_installed() {
        use libsqlite3_sys as ffi;
        assert_eq!(sqlite_mem::install(), ffi::SQLITE_OK);
        // SAFETY: a connection to a fresh in-memory database, one statement, then closed;
        // the buffer is SQLite's own, freed by SQLite.
        unsafe {
            let mut db = std::ptr::null_mut();
            let rc = ffi::sqlite3_open(c":memory:".as_ptr(), &mut db);
            assert_eq!(rc, ffi::SQLITE_OK);
            let sql = c"CREATE TABLE t(x); INSERT INTO t VALUES (randomblob(100000));";
            let rc = ffi::sqlite3_exec(
                db,
                sql.as_ptr(),
                None,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            );
            assert_eq!(rc, ffi::SQLITE_OK);
            assert!(ffi::sqlite3_memory_used() > 100_000);
            let p = ffi::sqlite3_malloc(1000);
            assert!(!p.is_null());
            assert!(
                libmimalloc_sys::mi_is_in_heap_region(p),
                "SQLite's buffer is not mimalloc's"
            );
            ffi::sqlite3_free(p);
            assert_eq!(ffi::sqlite3_close(db), ffi::SQLITE_OK);
        }
    }
}
