//! Read-only maps of the engine's own snapshot files, so a graph's f32 vectors are read where the file
//! holds them instead of being copied into the process's memory.
//!
//! A mapped vector lives in the kernel's page cache: it is shared with the file, clean, and the kernel
//! may drop it under memory pressure and read it back when it is next touched. Only the half-precision
//! copies that traversal reads, and the graph's lists, stay in the process's own memory; a search reads
//! f32 vectors only to re-rank its last candidates, and fetches read them for their answers.
//!
//! A map is only sound while nobody changes the file under it. Snapshot files are written under a
//! temporary name and renamed over the previous one, never written in place, so a map keeps reading
//! the file it was made from (the kernel keeps a renamed-over or deleted file until its last map goes).
//! A file truncated in place by something else would fault the process: `docs/OPERATIONS.md` says not
//! to edit the snapshot directory while a node runs.

use std::fs::File;
use std::path::Path;

/// A whole file, mapped read-only.
#[derive(Debug)]
pub(crate) struct MappedFile {
    map: memmap2::Mmap,
}

impl MappedFile {
    /// Maps `file`.
    ///
    /// # Errors
    /// The kernel refuses the map.
    #[expect(
        unsafe_code,
        reason = "a map of a file that the engine only ever replaces by renaming (see the module's docs)"
    )]
    pub(crate) fn open(file: &File) -> std::io::Result<MappedFile> {
        // SAFETY: snapshot files are never written in place once renamed into their name (see above);
        // the map is read-only.
        let map = unsafe { memmap2::Mmap::map(file) }?;
        Ok(MappedFile { map })
    }

    /// The whole file.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Where `part` (a slice of [`MappedFile::bytes`]) starts in the file; `None` for a slice of other
    /// memory.
    pub(crate) fn offset_of(&self, part: &[u8]) -> Option<usize> {
        let whole = self.map.as_ptr_range();
        let start = part.as_ptr();
        (whole.start <= start && start <= whole.end && part.len() <= whole.end as usize - start as usize)
            .then(|| start as usize - whole.start as usize)
    }

    /// Whether `count` f32 values at byte `offset` can be read in place: inside the file, four-byte
    /// aligned, and stored in this machine's byte order (the files are little-endian).
    pub(crate) fn holds_f32s_at(&self, offset: usize, count: usize) -> bool {
        cfg!(target_endian = "little")
            && offset.is_multiple_of(4)
            && offset
                .checked_add(count * 4)
                .is_some_and(|end| end <= self.map.len())
    }

    /// `count` f32 values at byte `offset`, where [`MappedFile::holds_f32s_at`] said they can be read
    /// (the caller checked when it chose to read them in place).
    #[inline]
    pub(crate) fn f32s(&self, offset: usize, count: usize) -> &[f32] {
        bytemuck::cast_slice(&self.map[offset..offset + count * 4])
    }

    /// Lets the kernel take back the pages the process has touched (they stay in the page cache, and
    /// are mapped again on their next read), so reading the file through once, as a load does, does
    /// not leave it counted in the process's resident memory. A refusal only leaves them mapped.
    #[expect(
        unsafe_code,
        reason = "MADV_DONTNEED on a read-only shared file map, whose pages read back unchanged"
    )]
    pub(crate) fn release_pages(&self) {
        // SAFETY: the map is shared and read-only, so dropping its pages loses nothing: the next read
        // faults the same bytes back in from the file.
        let released = unsafe { self.map.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
        if let Err(error) = released {
            tracing::warn!(%error, "the kernel kept a graph snapshot's pages mapped");
        }
    }
}

/// Opens a file to map, or `None` when it is smaller than `at_least` bytes (read such a file instead: a
/// map costs a kernel mapping per file).
///
/// # Errors
/// The file cannot be opened or its size read; not found comes back as an error too.
pub(crate) fn open_if_large(path: &Path, at_least: u64) -> std::io::Result<Option<MappedFile>> {
    let file = File::open(path)?;
    if file.metadata()?.len() < at_least {
        return Ok(None);
    }
    MappedFile::open(&file).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mapped_file_reads_its_values_in_place_and_again_after_its_pages_are_released() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("values");
        let values: Vec<u8> = (0..1_000_u32).flat_map(|n| (n as f32).to_le_bytes()).collect();
        std::fs::write(&path, &values).unwrap();
        assert!(open_if_large(&path, 4_001).unwrap().is_none(), "too small to map");
        let file = open_if_large(&path, 4_000).unwrap().unwrap();
        assert!(file.holds_f32s_at(40, 3));
        assert!(!file.holds_f32s_at(42, 1), "not four-byte aligned");
        assert!(!file.holds_f32s_at(3_996, 2), "past the end");
        assert_eq!(file.f32s(40, 3), [10.0, 11.0, 12.0]);
        let part = &file.bytes()[400..404];
        assert_eq!(file.offset_of(part), Some(400));
        assert_eq!(file.offset_of(&values[..4]), None, "other memory");
        file.release_pages();
        assert_eq!(file.f32s(3_996, 1), [999.0]);
        // A snapshot is replaced by a rename: the map keeps reading the file it was made from.
        let next = dir.path().join("next");
        std::fs::write(&next, vec![0_u8; 4_000]).unwrap();
        std::fs::rename(&next, &path).unwrap();
        file.release_pages();
        assert_eq!(file.f32s(40, 1), [10.0]);
    }
}
