//! SQLite's own page cache, with one key moved so that a commit does not walk the whole cache.
//!
//! When a B-tree page splits and its new pages are out of order, SQLite swaps their page numbers
//! (`balance_nonroot`), parking one page for a moment under the number of the "pending byte" page
//! (`0x40000000 / page size + 1`, page 262,145 at 4 KiB), which is never a real page. The default cache
//! (`pcache1`) remembers the largest key it ever held, so after such a swap it believes pages up to
//! 262,145 may be cached. Every commit then truncates the cache to the database's size, and for a
//! database under 1 GiB that "shaves" more keys than the hash table has slots, so it walks every
//! slot and every cached page (16,384 slots and 10,189 pages in one writer seen with gdb): in a
//! profile of sustained publish-and-deliver, 18 % of the queue writer's CPU.
//!
//! This module installs the default cache's own methods behind thin wrappers that park the page under
//! key 0 instead (never a real page either: page numbers start at 1, and the pager refuses to read
//! the pending page). Key 0 never raises the largest key, so a commit's truncation stays a no-op.
//! Everything else is passed through unchanged.
#![expect(
    unsafe_code,
    reason = "FFI boundary: SQLite's pluggable page cache (sqlite3_config)"
)]

use std::ffi::{c_int, c_uint, c_void};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use rusqlite::ffi;

/// The byte offset of SQLite's lock byte, whose page is never used for data (`PENDING_BYTE`).
const PENDING_BYTE: u32 = 0x4000_0000;
/// Where the parked page goes instead: no real page has number 0.
const PARKING_KEY: c_uint = 0;

struct Default(ffi::sqlite3_pcache_methods2);
// SAFETY: the methods are plain function pointers and SQLite's own argument; SQLite calls them from any
// thread already (it is built thread-safe).
unsafe impl Send for Default {}
// SAFETY: as above; the value is written once, before SQLite starts, and only read afterwards.
unsafe impl Sync for Default {}

static DEFAULT: OnceLock<Default> = OnceLock::new();

/// One cache: the default cache's handle and this cache's pending-byte page number.
struct Cache {
    inner: *mut ffi::sqlite3_pcache,
    pending: c_uint,
}

fn default() -> &'static ffi::sqlite3_pcache_methods2 {
    // Only reachable through methods installed after `DEFAULT` was set.
    &DEFAULT
        .get()
        .expect("the default page cache is set before ours is installed")
        .0
}

/// Installs the cache, once per process, before SQLite initializes. Returns whether it is in place: when
/// something in the process initialized SQLite first, SQLite refuses, and its default cache stays.
pub(crate) fn install() -> bool {
    static INSTALLED: OnceLock<bool> = OnceLock::new();
    *INSTALLED.get_or_init(install_now)
}

fn install_now() -> bool {
    let mut methods = ffi::sqlite3_pcache_methods2 {
        iVersion: 0,
        pArg: std::ptr::null_mut(),
        xInit: None,
        xShutdown: None,
        xCreate: None,
        xCachesize: None,
        xPagecount: None,
        xFetch: None,
        xUnpin: None,
        xRekey: None,
        xTruncate: None,
        xDestroy: None,
        xShrink: None,
    };
    // SAFETY: SQLITE_CONFIG_GETPCACHE2 takes a pointer to a methods struct, which it fills.
    let got = unsafe { ffi::sqlite3_config(ffi::SQLITE_CONFIG_GETPCACHE2, &raw mut methods) };
    if got != ffi::SQLITE_OK
        || methods.xCreate.is_none()
        || methods.xFetch.is_none()
        || methods.xRekey.is_none()
        || methods.xDestroy.is_none()
    {
        return false;
    }
    let arg = methods.pArg;
    let version = methods.iVersion;
    if DEFAULT.set(Default(methods)).is_err() {
        return false;
    }
    let mut ours = ffi::sqlite3_pcache_methods2 {
        iVersion: version,
        pArg: arg,
        xInit: Some(init),
        xShutdown: Some(shutdown),
        xCreate: Some(create),
        xCachesize: Some(cachesize),
        xPagecount: Some(pagecount),
        xFetch: Some(fetch),
        xUnpin: Some(unpin),
        xRekey: Some(rekey),
        xTruncate: Some(truncate),
        xDestroy: Some(destroy),
        xShrink: Some(shrink),
    };
    // SAFETY: SQLITE_CONFIG_PCACHE2 copies the struct; SQLite answers SQLITE_MISUSE (and changes nothing)
    // once it is initialized.
    let set = unsafe { ffi::sqlite3_config(ffi::SQLITE_CONFIG_PCACHE2, &raw mut ours) };
    set == ffi::SQLITE_OK
}

/// Pages parked under [`PARKING_KEY`] so far (tests look at it to know a swap happened).
static PARKED: AtomicU64 = AtomicU64::new(0);

/// The key the default cache keeps a page under.
fn key(cache: &Cache, key: c_uint) -> c_uint {
    if key == cache.pending { PARKING_KEY } else { key }
}

/// # Safety
/// `cache` is a handle `create` returned and `destroy` has not freed.
unsafe fn cache<'a>(cache: *mut ffi::sqlite3_pcache) -> &'a Cache {
    // SAFETY: guaranteed by the caller.
    unsafe { &*cache.cast::<Cache>() }
}

unsafe extern "C" fn init(arg: *mut c_void) -> c_int {
    match default().xInit {
        // SAFETY: passing SQLite's call on to the default cache.
        Some(f) => unsafe { f(arg) },
        None => ffi::SQLITE_OK,
    }
}

unsafe extern "C" fn shutdown(arg: *mut c_void) {
    if let Some(f) = default().xShutdown {
        // SAFETY: passing SQLite's call on to the default cache.
        unsafe { f(arg) }
    }
}

unsafe extern "C" fn create(page_size: c_int, extra: c_int, purgeable: c_int) -> *mut ffi::sqlite3_pcache {
    let Some(f) = default().xCreate else {
        return std::ptr::null_mut();
    };
    // SAFETY: passing SQLite's call on to the default cache.
    let inner = unsafe { f(page_size, extra, purgeable) };
    if inner.is_null() {
        return inner;
    }
    // SQLite's page sizes are powers of two from 512 to 65,536; any other value gets no parking key
    // (`c_uint::MAX` is never a page number SQLite asks for), and the cache behaves as SQLite's own.
    let pending = u32::try_from(page_size)
        .ok()
        .filter(|&size| size > 0)
        .map_or(c_uint::MAX, |size| PENDING_BYTE / size + 1);
    Box::into_raw(Box::new(Cache { inner, pending })).cast()
}

unsafe extern "C" fn cachesize(handle: *mut ffi::sqlite3_pcache, pages: c_int) {
    if let Some(f) = default().xCachesize {
        // SAFETY: the handle is one of ours (SQLite only passes back what `create` returned).
        unsafe { f(cache(handle).inner, pages) }
    }
}

unsafe extern "C" fn pagecount(handle: *mut ffi::sqlite3_pcache) -> c_int {
    match default().xPagecount {
        // SAFETY: as in `cachesize`.
        Some(f) => unsafe { f(cache(handle).inner) },
        None => 0,
    }
}

unsafe extern "C" fn fetch(
    handle: *mut ffi::sqlite3_pcache,
    page: c_uint,
    create: c_int,
) -> *mut ffi::sqlite3_pcache_page {
    // SAFETY: as in `cachesize`.
    let cache = unsafe { cache(handle) };
    match default().xFetch {
        // SAFETY: passing SQLite's call on, with the parked page's key moved.
        Some(f) => unsafe { f(cache.inner, key(cache, page), create) },
        None => std::ptr::null_mut(),
    }
}

unsafe extern "C" fn unpin(
    handle: *mut ffi::sqlite3_pcache,
    page: *mut ffi::sqlite3_pcache_page,
    discard: c_int,
) {
    if let Some(f) = default().xUnpin {
        // SAFETY: as in `cachesize`.
        unsafe { f(cache(handle).inner, page, discard) }
    }
}

unsafe extern "C" fn rekey(
    handle: *mut ffi::sqlite3_pcache,
    page: *mut ffi::sqlite3_pcache_page,
    old: c_uint,
    new: c_uint,
) {
    // SAFETY: as in `cachesize`.
    let cache = unsafe { cache(handle) };
    if new == cache.pending {
        PARKED.fetch_add(1, Ordering::Relaxed);
    }
    if let Some(f) = default().xRekey {
        // SAFETY: passing SQLite's call on, with the parked page's key moved both ways.
        unsafe { f(cache.inner, page, key(cache, old), key(cache, new)) }
    }
}

unsafe extern "C" fn truncate(handle: *mut ffi::sqlite3_pcache, limit: c_uint) {
    if let Some(f) = default().xTruncate {
        // SAFETY: as in `cachesize`.
        unsafe { f(cache(handle).inner, limit) }
    }
}

unsafe extern "C" fn destroy(handle: *mut ffi::sqlite3_pcache) {
    // SAFETY: SQLite destroys each cache once, and no call on it follows.
    let cache = unsafe { Box::from_raw(handle.cast::<Cache>()) };
    if let Some(f) = default().xDestroy {
        // SAFETY: passing SQLite's call on to the default cache.
        unsafe { f(cache.inner) }
    }
}

unsafe extern "C" fn shrink(handle: *mut ffi::sqlite3_pcache) {
    if let Some(f) = default().xShrink {
        // SAFETY: as in `cachesize`.
        unsafe { f(cache(handle).inner) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StorageConfig;
    use crate::database::Database;

    /// Inserts and deletes in random key order until B-tree balancing has swapped page numbers (which
    /// parks a page), then checks that the database is intact and holds exactly what it should.
    #[tokio::test]
    async fn pages_parked_during_a_swap_leave_the_database_intact() {
        let dir = tempfile::tempdir().unwrap();
        let database = Database::open(&dir.path().join("t.db"), &[], &StorageConfig::default()).unwrap();
        assert!(install(), "the page cache is installed before SQLite starts");
        database
            .write(|c| {
                c.execute_batch("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT); CREATE INDEX t_v ON t (v);")
                    .map_err(crate::database::backend_error)
            })
            .await
            .unwrap();
        let parked_before = PARKED.load(Ordering::Relaxed);
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for round in 0..40_i64 {
            let keys: Vec<i64> = (0..500)
                .map(|_| i64::try_from(next() % 1_000_000).unwrap())
                .collect();
            database
                .write(move |c| {
                    for k in &keys {
                        c.execute(
                            "INSERT OR REPLACE INTO t (k, v) VALUES (?1, printf('%0200d', ?1))",
                            [k],
                        )
                        .map_err(crate::database::backend_error)?;
                    }
                    c.execute("DELETE FROM t WHERE k % 3 = ?1", [round % 3])
                        .map_err(crate::database::backend_error)?;
                    Ok(())
                })
                .await
                .unwrap();
        }
        assert!(
            PARKED.load(Ordering::Relaxed) > parked_before,
            "no page swap happened"
        );
        let (check, bad): (String, i64) = database
            .read(|c| {
                let check = c
                    .query_row("PRAGMA integrity_check", [], |r| r.get(0))
                    .map_err(crate::database::backend_error)?;
                let bad = c
                    .query_row(
                        "SELECT COUNT(*) FROM t WHERE v != printf('%0200d', k) OR k % 3 = 39 % 3",
                        [],
                        |r| r.get(0),
                    )
                    .map_err(crate::database::backend_error)?;
                Ok((check, bad))
            })
            .await
            .unwrap();
        assert_eq!(check, "ok");
        assert_eq!(
            bad, 0,
            "rows hold their own values and the last round's deletes hold"
        );
    }
}
