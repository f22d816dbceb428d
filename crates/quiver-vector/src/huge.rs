//! The graph's hot arrays on 2 MiB pages.
//!
//! A search reads a few thousand scattered nodes of arrays that are tens to hundreds of megabytes long
//! (8-bit codes, neighbour lists, half-precision copies): with 4 KiB pages nearly every node it reads
//! costs a TLB miss and a page walk as well as the cache miss. Linux backs memory with transparent huge
//! pages where the process asks for them (`madvise(MADV_HUGEPAGE)`; the default `enabled` setting is
//! `madvise`), so these arrays ask, and a search walks them with a five-hundredth of the page
//! translations. Measured in BENCHMARKS.md ("huge pages").
//!
//! The advice is given before the memory is first touched, because a region already backed by small
//! pages stays so until the kernel's background collapse gets to it: an array grows into a fresh
//! allocation that is advised first and then filled, instead of `Vec`'s own growth. Only whole 2 MiB
//! pages inside an allocation of at least 16 MiB are advised, so a small array, or the ends of a
//! larger one, stay on small pages, and no advised page is shared with other allocations; memory costs
//! at most one partly filled 2 MiB page more per large array. A kernel that refuses the advice (another
//! operating system, or huge pages switched off) leaves small pages, which are only slower.

/// The huge page size on x86-64 and the common arm64 kernels.
const HUGE_PAGE: usize = 2 << 20;

/// Allocations smaller than this are not advised. A small namespace's arrays fit the TLB's reach with
/// small pages, and an advised page is backed whole once touched: above this size, the one partly filled
/// page an array can have costs at most a quarter of what the array holds (a grown array is at least
/// half full), and less as it grows.
const ADVISED_FROM: usize = 8 * HUGE_PAGE;

/// An empty vector with room for `capacity` values, its whole huge pages advised.
pub(crate) fn with_capacity<T>(capacity: usize) -> Vec<T> {
    let values = Vec::with_capacity(capacity);
    advise(&values);
    values
}

/// Makes room for `additional` more values. When `values` must move, it moves to an advised allocation
/// at least twice its capacity (so appending stays amortised constant), and its values are copied in.
pub(crate) fn reserve<T: Copy>(values: &mut Vec<T>, additional: usize) {
    if values.capacity() - values.len() >= additional {
        return;
    }
    let capacity = (values.len() + additional).max(values.capacity() * 2);
    let mut grown = with_capacity(capacity);
    grown.extend_from_slice(values);
    *values = grown;
}

/// The whole huge pages inside `values`' allocation: their start address and length in bytes.
fn whole_pages<T>(values: &Vec<T>) -> Option<(usize, usize)> {
    let start = values.as_ptr() as usize;
    let bytes = values.capacity().checked_mul(size_of::<T>())?;
    if bytes < ADVISED_FROM {
        return None;
    }
    let end = start.checked_add(bytes)?;
    let first = start.checked_next_multiple_of(HUGE_PAGE)?;
    let last = end - end % HUGE_PAGE;
    (last > first).then(|| (first, last - first))
}

#[cfg(target_os = "linux")]
fn advise<T>(values: &Vec<T>) {
    let Some((start, length)) = whole_pages(values) else {
        return;
    };
    if let Err(error) = backing_advice(start, length, rustix::mm::Advice::LinuxHugepage) {
        tracing::debug!(%error, "the kernel declined huge pages for a graph array");
    }
}

/// `madvise` with `advice`, which must be one that only changes how the pages of the range are
/// backed, never what they hold (huge pages; populating them as a write would, without writing).
#[cfg(target_os = "linux")]
#[expect(
    unsafe_code,
    reason = "advice that changes how memory is backed, never what it holds"
)]
fn backing_advice(start: usize, length: usize, advice: rustix::mm::Advice) -> rustix::io::Result<()> {
    // SAFETY: MADV_HUGEPAGE only sets how the kernel backs the pages; MADV_POPULATE_WRITE only faults
    // them in as a write would, without writing (present pages keep their contents, fresh anonymous
    // ones read as the zeros they read as before). A range that is not mapped is refused with an
    // error. No memory anyone holds changes.
    unsafe { rustix::mm::madvise(start as *mut std::ffi::c_void, length, advice) }
}

#[cfg(not(target_os = "linux"))]
fn advise<T>(_values: &Vec<T>) {}

/// Backs the room for the next `count` values after `values`' last one with memory now, so that
/// appending them later does not stop for page faults: a build calls this on a thread that has time
/// while another would otherwise wait for the one that appends (the kernel zeroes each fresh page,
/// 2 MiB at a time on huge pages). Nothing `values` holds changes; where the kernel cannot (before
/// Linux 5.14), the pages come at first write as before.
pub(crate) fn prefault<T>(values: &Vec<T>, count: usize) {
    let start = values.as_ptr() as usize + values.len() * size_of::<T>();
    let end = values.as_ptr() as usize + values.capacity() * size_of::<T>();
    let wanted_end = end.min(start.saturating_add(count.saturating_mul(size_of::<T>())));
    // Whole pages: from the page the next value starts in (its used part stays as it is) to the last
    // page that ends inside the allocation.
    let first = start - start % SMALL_PAGE;
    let last = wanted_end - wanted_end % SMALL_PAGE;
    if last > first {
        populate(first, last - first);
    }
}

/// The smallest page size of the targets Quiver builds for.
const SMALL_PAGE: usize = 4096;

#[cfg(target_os = "linux")]
fn populate(start: usize, length: usize) {
    if let Err(error) = backing_advice(start, length, rustix::mm::Advice::LinuxPopulateWrite) {
        tracing::trace!(%error, "the kernel did not back a graph array's next pages ahead");
    }
}

#[cfg(not(target_os = "linux"))]
fn populate(_start: usize, _length: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growing_keeps_the_values_and_at_least_doubles_the_room() {
        let mut values: Vec<u32> = (0..1_000).collect();
        values.shrink_to_fit();
        let before = values.capacity();
        reserve(&mut values, 1);
        assert!(values.capacity() >= 2 * before);
        assert_eq!(values, (0..1_000).collect::<Vec<_>>());
        let room = values.capacity();
        let free = room - values.len();
        reserve(&mut values, free);
        assert_eq!(values.capacity(), room, "enough room already: nothing moves");
        reserve(&mut values, 10 * room);
        assert!(values.capacity() >= 1_000 + 10 * room);
    }

    /// Bytes this process has resident.
    #[cfg(target_os = "linux")]
    fn resident_bytes() -> usize {
        let statm = std::fs::read_to_string("/proc/self/statm").expect("statm is readable");
        let pages: usize = statm
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse().ok())
            .expect("statm's second field");
        pages * SMALL_PAGE
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn prefaulting_backs_the_room_ahead_and_changes_no_value() {
        let mut values: Vec<u32> = Vec::with_capacity(16 << 20);
        values.extend(0..1_000);
        let before = resident_bytes();
        prefault(&values, 8 << 20);
        let grown = resident_bytes() - before;
        assert!(grown >= 30 << 20, "32 MiB ahead are backed, {grown} bytes grew");
        assert!(grown < 40 << 20, "no more than asked for: {grown} bytes grew");
        assert_eq!(values, (0..1_000).collect::<Vec<_>>());
        values.extend(1_000..2_000);
        assert_eq!(values, (0..2_000).collect::<Vec<_>>());
        // Asking past the allocation, or of an empty vector, backs nothing outside it and does not
        // panic.
        prefault(&values, usize::MAX);
        prefault(&Vec::<u32>::new(), 10);
    }

    #[test]
    fn only_whole_huge_pages_inside_the_allocation_are_advised() {
        assert_eq!(
            whole_pages(&Vec::<u8>::with_capacity(ADVISED_FROM - 1)),
            None,
            "small"
        );
        let values = Vec::<u8>::with_capacity(ADVISED_FROM + HUGE_PAGE);
        let (start, length) = whole_pages(&values).unwrap();
        let first = values.as_ptr() as usize;
        assert_eq!(start % HUGE_PAGE, 0);
        assert!(start >= first && start + length <= first + values.capacity());
        assert!(
            length >= ADVISED_FROM,
            "the room holds at least that many whole pages"
        );
    }

    /// KiB on huge pages in the mapping that holds `address` (`/proc/self/smaps`), so memory other
    /// tests of the same process hold does not count.
    #[cfg(target_os = "linux")]
    fn huge_kib_of_mapping_at(address: usize) -> usize {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut inside = false;
        for line in smaps.lines() {
            let range = line.split_once(' ').map(|(first, _)| first.split_once('-'));
            if let Some(Some((from, to))) = range
                && let (Ok(from), Ok(to)) = (usize::from_str_radix(from, 16), usize::from_str_radix(to, 16))
            {
                // A mapping's header line: its address range.
                inside = (from..to).contains(&address);
            } else if inside && let Some(kib) = line.strip_prefix("AnonHugePages:") {
                let kib = kib.trim().trim_end_matches("kB").trim();
                return kib.parse().expect("AnonHugePages counts kB");
            }
        }
        panic!("no mapping of /proc/self/smaps holds {address:#x}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn advised_arrays_made_or_grown_here_are_backed_by_huge_pages_where_the_kernel_offers_them() {
        let offered = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .is_ok_and(|setting| setting.contains("[madvise]") || setting.contains("[always]"));
        if !offered {
            return;
        }
        let mut made = with_capacity::<u8>(16 * HUGE_PAGE);
        made.resize(16 * HUGE_PAGE, 1);
        let huge_kib = huge_kib_of_mapping_at(made.as_ptr() as usize + 8 * HUGE_PAGE);
        assert!(
            huge_kib >= 2 * 1_024,
            "{huge_kib} KiB on huge pages after filling 32 MiB of advised memory"
        );
        // Grown past the size that is advised: the new allocation is advised before it is filled.
        let mut grown = vec![1_u8; HUGE_PAGE];
        reserve(&mut grown, 16 * HUGE_PAGE);
        grown.resize(17 * HUGE_PAGE, 1);
        let huge_kib = huge_kib_of_mapping_at(grown.as_ptr() as usize + 8 * HUGE_PAGE);
        assert!(
            huge_kib >= 2 * 1_024,
            "{huge_kib} KiB on huge pages after growing an array to 34 MiB"
        );
    }
}
