//! Graph snapshots in the data directory, so a restart does not insert every vector into its graph
//! again: one file per namespace, `<dir>/<index id>/ns-<namespace name in hex>.graph`.
//!
//! A file is the magic `QVGRAPH\0` and a format version, then the position in the store's feed the
//! memory stood at, the namespace's name, the graph ([`crate::hnsw`]'s image), for each live node the
//! id of the record it stands for, and the graph's regions for filtered searches (format 4 on); a
//! trailer gives the length of all that and its CRC-32. A file is written to a temporary name and
//! renamed, so a reader finds a whole file or the previous one. It is not synced: a snapshot is a cache
//! that every load checks, so one that a power loss left empty or torn fails its checks and costs a
//! rebuild, while syncing the file and its directory more than doubles the cost of each small
//! namespace's snapshot (0.43 ms against 0.19 ms a file measured here, more on slower disks), which a
//! shutdown pays once per namespace.
//!
//! Nothing in a file is trusted: a missing, truncated or corrupt file, one of another format version, or
//! one built for other settings is reported and the namespace is built from the store. A sound file is
//! used node by node only where the store's record still has that node's exact vector
//! ([`Namespace::restore`]), so a snapshot older than the store's latest writes (taken before them, or a
//! copy from another node) saves the work for everything that did not change and costs nothing for the
//! rest. The store's records are always read: they are the truth, and reading them is a small part of
//! what the graph's rebuild costs.
//!
//! A file of at least [`MAP_AT_LEAST`] bytes is mapped rather than read (the `mapped` module): its
//! vectors, padded to start on an aligned byte since format 3, are then read in place, so the f32 copy
//! of a loaded graph lives in the page cache and only the half-precision copies, the lists and the
//! records take the process's memory. A file just written is mapped the same way, and the namespace it
//! was written from reads the vectors it shares with the file from there from then on
//! ([`Written::adopt_into`]), so only vectors inserted since the last snapshot are held in memory.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use quiver_core::IndexId;

use crate::codec::{DecodeError, Decoder, Encoder};
use crate::hnsw::{Hnsw, HnswParams, Source};
use crate::mapped::{self, MappedFile};
use crate::namespace::{GraphImage, Namespace};
use crate::record::IndexSpec;
use crate::store::FeedPosition;

const MAGIC: &[u8; 8] = b"QVGRAPH\0";

/// The format this build writes (4: the graph's regions follow the records' ids; 3: the same without
/// regions, which a graph loaded from it trains again; 3 and 4: the vectors start on an aligned byte,
/// so a map reads them in place; 2: without that padding, which this build still reads; 1 held
/// cosine's unit copies).
pub const FORMAT_VERSION: u32 = 4;

/// The oldest format this build reads.
const OLDEST_READ: u32 = 2;

/// Files of at least this many bytes are mapped rather than read (a map costs the kernel a mapping,
/// so small namespaces' files are read and copied).
pub const MAP_AT_LEAST: u64 = 4 << 20;

/// Length (u64) and CRC-32 (u32) of everything before them.
const TRAILER: usize = 12;

const EXTENSION: &str = "graph";

/// Why a snapshot was not used.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The file could not be read or written.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The file does not start as a snapshot does.
    #[error("it is not a graph snapshot")]
    NotASnapshot,
    /// Another build's format.
    #[error("it has format version {0}; this build reads versions {OLDEST_READ} to {FORMAT_VERSION}")]
    Version(u32),
    /// The file is shorter (or longer) than its trailer says.
    #[error("it is truncated: it holds {found} bytes, its trailer says {expected}")]
    Truncated {
        /// Bytes before the trailer.
        found: usize,
        /// What the trailer says.
        expected: u64,
    },
    /// The contents do not match their checksum.
    #[error("its checksum does not match its contents: it is corrupt")]
    Checksum,
    /// The file holds another namespace's graph.
    #[error("it holds the graph of namespace `{0}`")]
    OtherNamespace(String),
    /// Sound bytes that do not make a graph for this index.
    #[error("{0}")]
    Decode(#[from] DecodeError),
}

/// A namespace's graph image, and the position in the store's feed it was taken at.
pub type Snapshot = (GraphImage, FeedPosition);

/// Where an engine keeps its snapshots.
#[derive(Debug, Clone)]
pub struct Snapshots {
    dir: PathBuf,
    /// Files of at least this many bytes are mapped.
    map_at_least: u64,
}

fn hex(name: &str) -> String {
    name.bytes().map(|b| format!("{b:02x}")).collect()
}

/// The name `hex` encoded; `None` for text that is not the hex of UTF-8 (a file this module did not
/// name, which callers skip or remove).
fn from_hex(text: &str) -> Option<String> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

impl Snapshots {
    /// Snapshots under `dir` (created when the first one is written).
    pub fn new(dir: PathBuf) -> Snapshots {
        Snapshots {
            dir,
            map_at_least: MAP_AT_LEAST,
        }
    }

    /// Maps files of at least `bytes` instead of [`MAP_AT_LEAST`].
    pub fn map_at_least(self, bytes: u64) -> Snapshots {
        Snapshots {
            map_at_least: bytes,
            ..self
        }
    }

    fn index_dir(&self, index: IndexId) -> PathBuf {
        self.dir.join(index.to_string())
    }

    /// The file of a namespace's snapshot.
    pub fn path(&self, index: IndexId, namespace: &str) -> PathBuf {
        self.index_dir(index)
            .join(format!("ns-{}.{EXTENSION}", hex(namespace)))
    }

    /// The graph image of a namespace, and the feed position it was taken at; `None` when there is
    /// no snapshot.
    ///
    /// # Errors
    /// A file that cannot be read or is not a sound snapshot of this namespace for `spec`.
    pub fn read(
        &self,
        index: IndexId,
        namespace: &str,
        spec: &IndexSpec,
    ) -> Result<Option<Snapshot>, SnapshotError> {
        match self.load(&self.path(index, namespace), namespace, spec) {
            Err(SnapshotError::Io(error)) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            read => read.map(Some),
        }
    }

    /// The snapshot in the file at `path`, mapped when it is large enough.
    fn load(&self, path: &Path, namespace: &str, spec: &IndexSpec) -> Result<Snapshot, SnapshotError> {
        match mapped::open_if_large(path, self.map_at_least)? {
            Some(file) => {
                let file = Arc::new(file);
                decode_from(file.bytes(), Some(&file), namespace, spec)
            }
            None => decode(&std::fs::read(path)?, namespace, spec),
        }
    }

    /// Every snapshot of an index's namespaces, read and checked (a file that cannot be read or is
    /// not sound comes back as its error; an index without snapshots has none).
    pub fn read_all(
        &self,
        index: IndexId,
        spec: &IndexSpec,
    ) -> Vec<(String, Result<Snapshot, SnapshotError>)> {
        let entries = match std::fs::read_dir(self.index_dir(index)) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
            Err(error) => return vec![(String::new(), Err(error.into()))],
        };
        entries
            .flatten()
            .filter_map(|entry| {
                let namespace = namespace_of(&entry.file_name().to_string_lossy())?;
                let read = self.load(&entry.path(), &namespace, spec);
                Some((namespace, read))
            })
            .collect()
    }

    /// Writes a namespace's snapshot in place of the previous one (whole or not at all); the bytes
    /// written.
    ///
    /// # Errors
    /// The file or its directory cannot be written.
    pub fn write(
        &self,
        index: IndexId,
        namespace: &str,
        image: &GraphImage,
        position: FeedPosition,
    ) -> Result<Written, SnapshotError> {
        let directory = self.index_dir(index);
        std::fs::create_dir_all(&directory)?;
        let path = self.path(index, namespace);
        let temporary = path.with_extension(format!("{EXTENSION}.partial"));
        // Readable too, so the file can be mapped through this handle.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&temporary)?;
        // Written as it is encoded: the file never sits whole in memory.
        let mut encoder = Encoder::to_file(file);
        let vectors_at = encode_into(&mut encoder, namespace, image, position);
        let bytes = encoder.position();
        let file = encoder.finish()?.expect("a file encoder hands its file back");
        std::fs::rename(&temporary, &path)?;
        // The handle still names the file just written, whatever is renamed over it later.
        let mapped = if bytes as u64 >= self.map_at_least {
            match MappedFile::open(&file) {
                Ok(map) => Some((Arc::new(map), vectors_at)),
                Err(error) => {
                    tracing::warn!(%error, "a graph snapshot written could not be mapped; its vectors stay in memory");
                    None
                }
            }
        } else {
            None
        };
        Ok(Written { bytes, mapped })
    }

    /// Removes an index's snapshots (it was deleted).
    ///
    /// # Errors
    /// The directory exists and cannot be removed.
    pub fn remove_index(&self, index: IndexId) -> std::io::Result<()> {
        match std::fs::remove_dir_all(self.index_dir(index)) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            outcome => outcome,
        }
    }

    /// Removes the snapshots of every index that `keep` does not keep (indexes deleted while this node
    /// was down, or on another node); entries that do not name an index are left alone. How many
    /// indexes' snapshots it removed.
    ///
    /// # Errors
    /// The directory exists and cannot be listed, or a snapshot directory cannot be removed.
    pub fn remove_indexes_except(&self, keep: impl Fn(IndexId) -> bool) -> std::io::Result<usize> {
        let entries = match std::fs::read_dir(&self.dir) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            outcome => outcome?,
        };
        let mut removed = 0;
        for entry in entries {
            let entry = entry?;
            // A name that is not an index id is not this module's: it is left alone, not an error.
            let index = entry
                .file_name()
                .to_str()
                .and_then(|name| name.parse::<IndexId>().ok());
            if let Some(index) = index
                && !keep(index)
            {
                std::fs::remove_dir_all(entry.path())?;
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Removes the snapshots of an index's namespaces that `exists` says are gone (dropped or renamed
    /// while this node was down or on another node), and left-over partial files.
    ///
    /// # Errors
    /// The directory exists and cannot be listed, or a file cannot be removed.
    pub fn remove_others(&self, index: IndexId, exists: impl Fn(&str) -> bool) -> std::io::Result<()> {
        let entries = match std::fs::read_dir(self.index_dir(index)) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            outcome => outcome?,
        };
        for entry in entries {
            let entry = entry?;
            let namespace = namespace_of(&entry.file_name().to_string_lossy());
            if namespace.is_none_or(|namespace| !exists(&namespace)) {
                std::fs::remove_file(entry.path())?;
            }
        }
        Ok(())
    }
}

/// The namespace whose snapshot a file name is (none for other files, such as partial writes).
fn namespace_of(file_name: &str) -> Option<String> {
    file_name
        .strip_prefix("ns-")
        .and_then(|name| name.strip_suffix(&format!(".{EXTENSION}")))
        .and_then(from_hex)
}

/// A snapshot written by [`Snapshots::write`].
#[derive(Debug)]
pub struct Written {
    /// Its size.
    pub bytes: usize,
    /// The file mapped, when it is large enough, and where its vectors start.
    mapped: Option<(Arc<MappedFile>, usize)>,
}

impl Written {
    /// Makes `namespace` read the vectors it shares with `image` (the image this snapshot was written
    /// from) from the file written, so the memory they held goes with the image.
    pub fn adopt_into(&self, namespace: &mut Namespace, image: &GraphImage) {
        if let Some((file, vectors_at)) = &self.mapped {
            namespace.adopt_mapped(image, file, *vectors_at);
        }
    }
}

/// A namespace's snapshot file.
pub fn encode(namespace: &str, image: &GraphImage, position: FeedPosition) -> Vec<u8> {
    let mut encoder = Encoder::default();
    encode_into(&mut encoder, namespace, image, position);
    encoder.bytes
}

/// Encodes a namespace's snapshot file with `encoder`; returns where in the file the graph's vectors
/// start.
fn encode_into(encoder: &mut Encoder, namespace: &str, image: &GraphImage, position: FeedPosition) -> usize {
    encoder.raw(MAGIC);
    encoder.u32(FORMAT_VERSION);
    encoder.u64(position);
    encoder.text(namespace);
    let vectors_at = image.graph.encode(encoder);
    encoder.count(image.ids.len());
    for id in &image.ids {
        match id {
            Some(id) => {
                encoder.u8(1);
                encoder.text(id);
            }
            None => encoder.u8(0),
        }
    }
    image.graph.encode_regions(encoder);
    encoder.seal();
    vectors_at
}

/// The image and feed position in a namespace's snapshot file.
///
/// # Errors
/// Anything short of a whole, sound snapshot of `namespace` built for `spec`.
pub fn decode(bytes: &[u8], namespace: &str, spec: &IndexSpec) -> Result<Snapshot, SnapshotError> {
    decode_from(bytes, None, namespace, spec)
}

/// [`decode`] of `bytes`, which are all of `file` when one is given (its vectors are then read there).
fn decode_from(
    bytes: &[u8],
    file: Option<&Arc<MappedFile>>,
    namespace: &str,
    spec: &IndexSpec,
) -> Result<Snapshot, SnapshotError> {
    if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
        return Err(SnapshotError::NotASnapshot);
    }
    let mut header = Decoder::new(&bytes[MAGIC.len()..]);
    let version = header.u32()?;
    if !(OLDEST_READ..=FORMAT_VERSION).contains(&version) {
        return Err(SnapshotError::Version(version));
    }
    let Some(body_length) = bytes.len().checked_sub(TRAILER) else {
        return Err(SnapshotError::Truncated {
            found: bytes.len(),
            expected: 0,
        });
    };
    let (body, trailer) = bytes.split_at(body_length);
    let mut trailer = Decoder::new(trailer);
    let (expected, checksum) = (trailer.u64()?, trailer.u32()?);
    if expected != body_length as u64 {
        return Err(SnapshotError::Truncated {
            found: body_length,
            expected,
        });
    }
    if crc32fast::hash(body) != checksum {
        return Err(SnapshotError::Checksum);
    }
    // Read from the file's first byte, where the encoding's padding is counted from.
    let mut decoder = Decoder::new(body);
    decoder.bytes(MAGIC.len() + 4)?;
    let position = decoder.u64()?;
    let stored = decoder.text()?;
    if stored != namespace {
        return Err(SnapshotError::OtherNamespace(stored.to_owned()));
    }
    let mut graph = Hnsw::decode(
        &mut decoder,
        spec.similarity,
        spec.dimension,
        HnswParams::default(),
        Source {
            file,
            is_padded: version >= 3,
        },
    )?;
    let count = decoder.count(1)?;
    if count != graph.node_count() {
        return Err(DecodeError::Invalid(format!(
            "it names {count} nodes' records for a graph of {} nodes",
            graph.node_count()
        ))
        .into());
    }
    let mut ids = Vec::with_capacity(count);
    for _ in 0..count {
        ids.push(match decoder.u8()? {
            0 => None,
            1 => Some(decoder.text()?.to_owned()),
            flag => return Err(DecodeError::Invalid(format!("a node's record flag is {flag}")).into()),
        });
    }
    if version >= 4 {
        graph.decode_regions(&mut decoder)?;
    }
    if decoder.remaining() != 0 {
        return Err(DecodeError::Invalid(format!("{} bytes follow the graph", decoder.remaining())).into());
    }
    Ok((GraphImage { graph, ids }, position))
}

/// Whether a namespace is due a snapshot. While running: when a third of its graph (and at least
/// [`SNAPSHOT_MIN_INSERTS`] vectors) is not in the last one, so a growing graph is written about three
/// times its final size in all, and a crash costs at most a third of it again. At shutdown: when one
/// vector in 20 is not, about where inserting them again would cost more than writing the whole file
/// (measured at 384 dimensions: a snapshot is written at 200,000 to 260,000 nodes a second, 3.8 to
/// 5.0 s for 1,000,000, while vectors go into a graph at about 6,000 a second on two cores). Either
/// way, when its regions were trained since the last one: a start would otherwise train them again,
/// which takes longer than writing the file (BENCHMARKS.md, session 38).
pub fn is_due(namespace: &Namespace, is_shutdown: bool) -> bool {
    if namespace.regions_unsaved() {
        return true;
    }
    let (unsaved, nodes) = (namespace.unsaved_inserts(), namespace.graph_nodes() as u64);
    if is_shutdown {
        unsaved > 0 && unsaved >= nodes / 20
    } else {
        unsaved >= SNAPSHOT_MIN_INSERTS.max(nodes / 3)
    }
}

/// Graph inserts that make a snapshot due while running, however small the graph.
pub const SNAPSHOT_MIN_INSERTS: u64 = 1_000;

#[cfg(test)]
mod tests {
    use quiver_core::index::{IndexType, SimilarityFunction};

    use super::*;
    use crate::namespace::Restored;
    use crate::record::{Record, StoredRecord};

    const SPEC: IndexSpec = IndexSpec {
        dimension: 8,
        similarity: SimilarityFunction::Cosine,
        index_type: IndexType::Dense,
    };

    fn records(count: usize, offset: f32) -> Vec<StoredRecord> {
        (0..count)
            .map(|i| StoredRecord {
                sequence: i as u64 + 1,
                record: Record {
                    id: format!("r{i}"),
                    vector: Some(
                        (0..8)
                            .map(|d| ((i * 31 + d * 7) % 17) as f32 - 8.0 + offset)
                            .collect(),
                    ),
                    sparse: None,
                    metadata: None,
                    data: None,
                },
            })
            .collect()
    }

    fn indexed(records: Vec<StoredRecord>) -> Namespace {
        let (mut namespace, _) = Namespace::restore(&SPEC, records, None);
        while namespace.index_pending(1_000) > 0 {}
        namespace
    }

    const QUERY: [f32; 8] = [1.0, -2.0, 0.5, 3.0, 0.0, 1.0, -1.0, 2.0];

    #[test]
    fn a_namespace_comes_back_from_its_snapshot_without_indexing_again() {
        let original = indexed(records(3_000, 0.0));
        assert_eq!(original.unsaved_inserts(), 3_000);
        let image = original.image();
        assert_eq!(original.unsaved_inserts(), 0, "an image saves what it holds");
        let file = encode("docs", &image, 42);
        let (image, position) = decode(&file, "docs", &SPEC).unwrap();
        assert_eq!(position, 42);
        let (restored, counts) = Namespace::restore(&SPEC, records(3_000, 0.0), Some(image));
        assert_eq!(
            counts,
            Restored {
                from_snapshot: 3_000,
                pending: 0
            }
        );
        assert_eq!(restored.nearest_ids(&QUERY, 10), original.nearest_ids(&QUERY, 10));
        assert_eq!(
            restored.get("r7").map(|r| r.to_record()),
            original.get("r7").map(|r| r.to_record())
        );
        assert_eq!(restored.unsaved_inserts(), 0);
    }

    #[test]
    fn filters_find_every_record_a_snapshot_brings_back_whatever_order_the_store_reads_them_in() {
        let tagged = |records: Vec<StoredRecord>| -> Vec<StoredRecord> {
            records
                .into_iter()
                .map(|mut stored| {
                    let n: usize = stored.record.id[1..].parse().unwrap();
                    stored.record.metadata = Some(serde_json::json!({"tag": n % 4}));
                    stored
                })
                .collect()
        };
        let original = indexed(tagged(records(3_000, 0.0)));
        let image = original.image();
        // Read back in another order, the records take their snapshot slots out of slot order.
        let mut read_back = tagged(records(3_000, 0.0));
        read_back.reverse();
        let (restored, _) = Namespace::restore(&SPEC, read_back, Some(image));
        let filter = crate::filter::Filter::parse("tag = 1").unwrap().unwrap();
        let ids = |namespace: &Namespace| namespace.nearest_passing_ids(&QUERY, 3_000, Some(&filter));
        assert_eq!(ids(&restored).len(), 750);
        assert_eq!(ids(&restored), ids(&original));
    }

    #[test]
    fn writes_after_a_snapshot_are_pending_and_found_and_removed_records_are_never_returned() {
        let original = indexed(records(3_000, 0.0));
        let image = original.image();
        // Since the snapshot: r0..r99 changed their vectors, r100..r199 were deleted, r3000.. are new.
        let mut now = records(3_100, 0.0);
        now.drain(100..200);
        for stored in now.iter_mut().take(100) {
            stored.record.vector = Some(QUERY.to_vec());
        }
        let (restored, counts) = Namespace::restore(&SPEC, now, Some(image));
        assert_eq!(
            counts,
            Restored {
                from_snapshot: 2_800,
                pending: 200
            }
        );
        assert_eq!(restored.len(), 3_000);
        let found = restored.nearest_ids(&QUERY, 10);
        assert!(
            found.iter().all(|id| id[1..].parse::<usize>().unwrap() < 100),
            "changed vectors are found where they are now: {found:?}"
        );
        for record in records(200, 0.0).into_iter().skip(100) {
            let query = record.record.vector.unwrap();
            let nearest = restored.search_dense(&query, 50, None);
            assert_eq!(nearest.len(), 50);
            assert!(
                nearest.iter().all(|(slot, _)| restored.at(*slot).is_some()),
                "a deleted record's node is only a waypoint"
            );
        }
        assert!(restored.get("r150").is_none());
    }

    #[test]
    fn regions_trained_since_the_last_snapshot_make_one_due_and_come_back_from_it() {
        let mut original = indexed(records(3_000, 0.0));
        original.image();
        assert!(
            !is_due(&original, false) && !is_due(&original, true),
            "just saved"
        );
        original.train_regions_now();
        assert!(is_due(&original, false), "regions trained since");
        assert!(is_due(&original, true), "regions trained since, at shutdown");
        let file = encode("docs", &original.image(), 5);
        assert!(!is_due(&original, false), "saved with the regions");
        let (image, _) = decode(&file, "docs", &SPEC).unwrap();
        let (restored, _) = Namespace::restore(&SPEC, records(3_000, 0.0), Some(image));
        assert!(restored.has_regions());
        assert!(!restored.regions_unsaved(), "its snapshot holds them");

        // A format 3 file (the same without the regions' flag) loads, without regions.
        let untrained = indexed(records(300, 0.0));
        let file = encode("docs", &untrained.image(), 5);
        let mut format_3 = file[..file.len() - TRAILER - 1].to_vec();
        format_3[8..12].copy_from_slice(&3_u32.to_le_bytes());
        let checksum = crc32fast::hash(&format_3);
        format_3.extend_from_slice(&(format_3.len() as u64).to_le_bytes());
        format_3.extend_from_slice(&checksum.to_le_bytes());
        let (image, _) = decode(&format_3, "docs", &SPEC).unwrap();
        let (restored, counts) = Namespace::restore(&SPEC, records(300, 0.0), Some(image));
        assert_eq!(counts.from_snapshot, 300);
        assert!(!restored.has_regions());
    }

    #[test]
    fn a_bad_snapshot_is_refused_with_its_reason() {
        let image = indexed(records(500, 0.0)).image();
        let file = encode("docs", &image, 7);
        assert!(decode(&file, "docs", &SPEC).is_ok());

        let mut corrupt = file.clone();
        let middle = corrupt.len() / 2;
        corrupt[middle] ^= 0x40;
        assert!(matches!(
            decode(&corrupt, "docs", &SPEC),
            Err(SnapshotError::Checksum)
        ));
        for cut in [3, 20, file.len() / 3, file.len() - 1] {
            assert!(
                matches!(
                    decode(&file[..cut], "docs", &SPEC),
                    Err(SnapshotError::Truncated { .. }
                        | SnapshotError::NotASnapshot
                        | SnapshotError::Decode(_))
                ),
                "cut at {cut}"
            );
        }
        let mut other_version = file.clone();
        other_version[8..12].copy_from_slice(&1_u32.to_le_bytes());
        assert!(matches!(
            decode(&other_version, "docs", &SPEC),
            Err(SnapshotError::Version(1))
        ));
        assert!(matches!(
            decode(b"not a snapshot at all", "docs", &SPEC),
            Err(SnapshotError::NotASnapshot)
        ));
        assert!(matches!(
            decode(&file, "other", &SPEC),
            Err(SnapshotError::OtherNamespace(_))
        ));
        let wider = IndexSpec {
            dimension: 16,
            ..SPEC
        };
        assert!(matches!(
            decode(&file, "docs", &wider),
            Err(SnapshotError::Decode(_))
        ));
    }

    #[test]
    fn snapshots_are_written_whole_and_removed_with_their_namespace_or_index() {
        let dir = tempfile::tempdir().unwrap();
        let snapshots = Snapshots::new(dir.path().join("snapshots"));
        let index = IndexId::random();
        assert!(
            snapshots.read(index, "", &SPEC).unwrap().is_none(),
            "no snapshot yet"
        );
        let image = indexed(records(100, 0.0)).image();
        for namespace in ["", "kept", "gone/../é"] {
            snapshots.write(index, namespace, &image, 3).unwrap();
        }
        let (read, position) = snapshots.read(index, "gone/../é", &SPEC).unwrap().unwrap();
        assert_eq!((read.ids, position), (image.ids.clone(), 3));
        snapshots
            .remove_others(index, |namespace| namespace != "gone/../é")
            .unwrap();
        assert!(snapshots.read(index, "gone/../é", &SPEC).unwrap().is_none());
        assert!(snapshots.read(index, "kept", &SPEC).unwrap().is_some());
        snapshots.remove_index(index).unwrap();
        assert!(snapshots.read(index, "", &SPEC).unwrap().is_none());
    }

    #[test]
    fn the_snapshots_of_indexes_that_are_gone_are_removed_and_other_entries_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let snapshots = Snapshots::new(dir.path().to_path_buf());
        assert_eq!(
            snapshots.remove_indexes_except(|_| false).unwrap(),
            0,
            "no directory yet"
        );
        let image = indexed(records(100, 0.0)).image();
        let (kept, gone) = (IndexId::random(), IndexId::random());
        for index in [kept, gone] {
            snapshots.write(index, "", &image, 1).unwrap();
        }
        std::fs::create_dir(dir.path().join("not-an-index")).unwrap();
        assert_eq!(snapshots.remove_indexes_except(|index| index == kept).unwrap(), 1);
        assert!(snapshots.read(kept, "", &SPEC).unwrap().is_some());
        assert!(snapshots.read(gone, "", &SPEC).unwrap().is_none());
        assert!(dir.path().join("not-an-index").exists());
    }

    #[test]
    fn a_mapped_snapshot_reads_its_vectors_in_place_and_restores_the_same_namespace() {
        let dir = tempfile::tempdir().unwrap();
        let snapshots = Snapshots::new(dir.path().to_path_buf()).map_at_least(0);
        let index = IndexId::random();
        let mut original = indexed(records(5_000, 0.0));
        let before = original.nearest_ids(&QUERY, 10);
        let image = original.image();
        let written = snapshots.write(index, "docs", &image, 9).unwrap();
        // A namespace built apart shares no memory with the image: it reads nothing from the file.
        let mut other = indexed(records(5_000, 0.0));
        written.adopt_into(&mut other, &image);
        assert_eq!(other.mapped_vector_bytes(), 0);
        // The namespace written reads its full chunks from the file from now on.
        written.adopt_into(&mut original, &image);
        drop(image);
        assert_eq!(original.mapped_vector_bytes(), 4_096 * 8 * 4);
        assert_eq!(original.nearest_ids(&QUERY, 10), before);
        assert_eq!(
            original.get("r4000").map(|r| r.to_record()),
            other.get("r4000").map(|r| r.to_record())
        );
        let (image, position) = snapshots.read(index, "docs", &SPEC).unwrap().unwrap();
        assert_eq!(position, 9);
        assert!(
            image.graph.mapped_vector_bytes() >= 4_096 * 8 * 4,
            "a full chunk of vectors is read in place"
        );
        let (restored, counts) = Namespace::restore(&SPEC, records(5_000, 0.0), Some(image));
        assert_eq!(counts.from_snapshot, 5_000);
        assert_eq!(restored.nearest_ids(&QUERY, 10), original.nearest_ids(&QUERY, 10));
        for id in ["r3", "r4100", "r4999"] {
            assert_eq!(
                restored.get(id).map(|r| r.to_record()),
                original.get(id).map(|r| r.to_record())
            );
        }
        // The file is replaced by the next snapshot while the restored namespace still reads the old one.
        snapshots.write(index, "docs", &restored.image(), 10).unwrap();
        assert_eq!(restored.nearest_ids(&QUERY, 10), original.nearest_ids(&QUERY, 10));
        // The default maps only large files: this one is read and copied.
        let (copied, _) = Snapshots::new(dir.path().to_path_buf())
            .read(index, "docs", &SPEC)
            .unwrap()
            .unwrap();
        assert_eq!(copied.graph.mapped_vector_bytes(), 0);
    }
}
