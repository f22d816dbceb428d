//! Little-endian binary encoding for the engine's own files (graph snapshots): an appending
//! [`Encoder`], and a [`Decoder`] that refuses to read past its input or to allocate for counts the input
//! cannot hold, so a damaged file is an error, never a panic or a huge allocation.

/// Why bytes do not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The input ends inside a value.
    #[error("it ends early: {wanted} more bytes were expected at byte {at}")]
    Truncated {
        /// Where the read started.
        at: usize,
        /// Bytes the read needed.
        wanted: usize,
    },
    /// A value is out of its range.
    #[error("{0}")]
    Invalid(String),
}

/// The little-endian f32 values in `bytes` (a whole number of them).
pub(crate) fn f32s_of(bytes: &[u8]) -> impl Iterator<Item = f32> + '_ {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
}

/// Appends values to a byte buffer. An encoder made by [`Encoder::to_file`] writes its bytes out as they
/// gather, so a large encoding never sits whole in memory (a 1,000,000 x 384 graph's snapshot is
/// 1.6 GB); one made by `default` keeps them all in `bytes`.
#[derive(Default)]
pub(crate) struct Encoder {
    /// The bytes not written out yet (all of them, without a file).
    pub(crate) bytes: Vec<u8>,
    out: Option<Out>,
}

/// Where a file encoder's bytes went.
struct Out {
    file: std::fs::File,
    /// The CRC-32 of the bytes written out.
    crc: crc32fast::Hasher,
    written: u64,
    /// The first write that failed: nothing more is written, and [`Encoder::finish`] returns it.
    failed: Option<std::io::Error>,
}

impl std::fmt::Debug for Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encoder")
            .field("position", &self.position())
            .field("to_file", &self.out.is_some())
            .finish_non_exhaustive()
    }
}

/// How many bytes a file encoder gathers before it writes them out.
const WRITE_AT: usize = 4 << 20;

/// A file encoder writes whole pieces of [`WRITE_ALIGN`] bytes at offsets that are multiples of it
/// (the rest at the end). Linux (6.x, ext4 here) then caches the file in 2 MiB folios, and a mapping of
/// it reads them through 2 MiB TLB entries: the snapshot's f32 vectors, which queries re-rank from. A
/// snapshot written in unaligned 1 MiB pieces was mapped in 4 KiB pages, and a million-vector index
/// answered at 0.56x to 0.75x the QPS of one written whole (BENCHMARKS.md, session 37).
const WRITE_ALIGN: usize = 2 << 20;

impl Encoder {
    /// An encoder that writes to `file`, from where the file's cursor is.
    pub(crate) fn to_file(file: std::fs::File) -> Encoder {
        Encoder {
            bytes: Vec::with_capacity(2 * WRITE_AT),
            out: Some(Out {
                file,
                crc: crc32fast::Hasher::new(),
                written: 0,
                failed: None,
            }),
        }
    }

    /// Bytes encoded so far, written out or not.
    pub(crate) fn position(&self) -> usize {
        let written = self.out.as_ref().map_or(0, |out| out.written);
        usize::try_from(written).expect("an encoding fits the address space") + self.bytes.len()
    }

    /// Writes the gathered bytes out once there are `at_least` (never without a file): the whole
    /// [`WRITE_ALIGN`] pieces among them, or all of them where `at_least` is 0.
    fn write_out(&mut self, at_least: usize) {
        let Some(out) = self.out.as_mut() else {
            return;
        };
        if self.bytes.len() < at_least {
            return;
        }
        let end = out.written + self.bytes.len() as u64;
        let cut = if at_least == 0 {
            self.bytes.len()
        } else {
            usize::try_from(end - end % WRITE_ALIGN as u64 - out.written)
                .expect("less than the gathered bytes")
        };
        if out.failed.is_none() {
            use std::io::Write as _;
            out.crc.update(&self.bytes[..cut]);
            if let Err(error) = out.file.write_all(&self.bytes[..cut]) {
                out.failed = Some(error);
            }
        }
        out.written += cut as u64;
        self.bytes.drain(..cut);
    }

    /// Ends the encoding with its length and the CRC-32 of everything before them (8 and 4 bytes).
    pub(crate) fn seal(&mut self) {
        let length = self.position() as u64;
        let checksum = match &self.out {
            Some(out) => {
                let mut crc = out.crc.clone();
                crc.update(&self.bytes);
                crc.finalize()
            }
            None => crc32fast::hash(&self.bytes),
        };
        self.u64(length);
        self.u32(checksum);
    }

    /// Writes out what is left and hands back the file (`None` for an encoder without one).
    ///
    /// # Errors
    /// The first write to the file that failed.
    pub(crate) fn finish(mut self) -> std::io::Result<Option<std::fs::File>> {
        self.write_out(0);
        match self.out {
            None => Ok(None),
            Some(Out {
                failed: Some(error), ..
            }) => Err(error),
            Some(Out { file, .. }) => Ok(Some(file)),
        }
    }

    pub(crate) fn u8(&mut self, value: u8) {
        self.bytes.push(value);
    }

    pub(crate) fn u32(&mut self, value: u32) {
        self.bytes.extend_from_slice(&value.to_le_bytes());
    }

    pub(crate) fn u64(&mut self, value: u64) {
        self.bytes.extend_from_slice(&value.to_le_bytes());
    }

    /// A length or count (a `usize` always fits a `u64` on the targets Quiver builds for).
    pub(crate) fn count(&mut self, value: usize) {
        self.u64(value as u64);
    }

    /// Bytes as they are (a file encoder writes a long run out in pieces).
    pub(crate) fn raw(&mut self, values: &[u8]) {
        for piece in values.chunks(WRITE_AT) {
            self.bytes.extend_from_slice(piece);
            self.write_out(WRITE_AT);
        }
    }

    pub(crate) fn u32s(&mut self, values: &[u32]) {
        self.words(values, u32::to_le_bytes);
    }

    pub(crate) fn f32s(&mut self, values: &[f32]) {
        self.words(values, f32::to_le_bytes);
    }

    /// Four-byte values, each as `bytes_of` gives it, copied in one pass a piece at a time.
    fn words<T: Copy>(&mut self, values: &[T], bytes_of: impl Fn(T) -> [u8; 4]) {
        for piece in values.chunks(WRITE_AT / 4) {
            let start = self.bytes.len();
            self.bytes.resize(start + piece.len() * 4, 0);
            for (to, &value) in self.bytes[start..].chunks_exact_mut(4).zip(piece) {
                to.copy_from_slice(&bytes_of(value));
            }
            self.write_out(WRITE_AT);
        }
    }

    /// Zero bytes up to the next multiple of `alignment` from the start of the encoding.
    pub(crate) fn pad_to(&mut self, alignment: usize) {
        let position = self.position();
        let padding = position.next_multiple_of(alignment) - position;
        self.bytes.resize(self.bytes.len() + padding, 0);
    }

    /// Bytes preceded by their length.
    pub(crate) fn text(&mut self, value: &str) {
        self.count(value.len());
        self.bytes.extend_from_slice(value.as_bytes());
    }
}

/// Reads values from a byte slice, front to back.
#[derive(Debug)]
pub(crate) struct Decoder<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Decoder<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Decoder<'a> {
        Decoder { bytes, at: 0 }
    }

    /// Bytes not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    fn take(&mut self, wanted: usize) -> Result<&'a [u8], DecodeError> {
        if self.remaining() < wanted {
            return Err(DecodeError::Truncated { at: self.at, wanted });
        }
        let taken = &self.bytes[self.at..self.at + wanted];
        self.at += wanted;
        Ok(taken)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut array = [0; N];
        array.copy_from_slice(self.take(N)?);
        Ok(array)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.array::<1>()?[0])
    }

    pub(crate) fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    pub(crate) fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// A size or setting written by [`Encoder::count`] (not followed by that many items).
    pub(crate) fn number(&mut self) -> Result<usize, DecodeError> {
        let at = self.at;
        usize::try_from(self.u64()?)
            .map_err(|_| DecodeError::Invalid(format!("the number at byte {at} does not fit in memory")))
    }

    /// A count of items of `item_size` bytes each that must still fit in the input.
    pub(crate) fn count(&mut self, item_size: usize) -> Result<usize, DecodeError> {
        let at = self.at;
        let count = self.number()?;
        if count.saturating_mul(item_size.max(1)) > self.remaining() {
            return Err(DecodeError::Truncated {
                at,
                wanted: count.saturating_mul(item_size.max(1)),
            });
        }
        Ok(count)
    }

    pub(crate) fn bytes(&mut self, count: usize) -> Result<&'a [u8], DecodeError> {
        self.take(count)
    }

    /// Skips what [`Encoder::pad_to`] wrote (when both started at the same byte), which must be zeros.
    pub(crate) fn skip_padding(&mut self, alignment: usize) -> Result<(), DecodeError> {
        let at = self.at;
        let padding = self.take(at.next_multiple_of(alignment) - at)?;
        if padding.iter().any(|&byte| byte != 0) {
            return Err(DecodeError::Invalid(format!(
                "the padding at byte {at} is not zeros"
            )));
        }
        Ok(())
    }

    /// `count` four-byte words.
    fn words(&mut self, count: usize) -> Result<std::slice::ChunksExact<'a, u8>, DecodeError> {
        Ok(self.word_bytes(count)?.chunks_exact(4))
    }

    pub(crate) fn u32s(&mut self, count: usize) -> Result<Vec<u32>, DecodeError> {
        let mut values = Vec::new();
        self.u32s_into(count, &mut values)?;
        Ok(values)
    }

    /// Appends `count` u32 values to `out` (which may have been allocated for them).
    pub(crate) fn u32s_into(&mut self, count: usize, out: &mut Vec<u32>) -> Result<(), DecodeError> {
        out.extend(
            self.words(count)?
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        );
        Ok(())
    }

    /// The bytes of `count` four-byte words (such as f32 values), as they are in the input.
    pub(crate) fn word_bytes(&mut self, count: usize) -> Result<&'a [u8], DecodeError> {
        let at = self.at;
        let length = count.checked_mul(4).ok_or(DecodeError::Truncated {
            at,
            wanted: usize::MAX,
        })?;
        self.take(length)
    }

    pub(crate) fn text(&mut self) -> Result<&'a str, DecodeError> {
        let at = self.at;
        let length = self.count(1)?;
        std::str::from_utf8(self.take(length)?)
            .map_err(|_| DecodeError::Invalid(format!("the text at byte {at} is not UTF-8")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values of several megabytes, so that a file encoder writes out in the middle of each run.
    fn encode_sample(encoder: &mut Encoder) {
        encoder.raw(b"MAGIC");
        encoder.u8(3);
        encoder.text("a namespace");
        let many: Vec<u32> = (0..700_000).collect();
        encoder.u32s(&many);
        encoder.raw(&vec![9; 3 * WRITE_AT + 17]);
        encoder.pad_to(64);
        let floats: Vec<f32> = (0..600_000).map(|n| n as f32 * 0.25).collect();
        encoder.f32s(&floats);
        encoder.u64(42);
        encoder.seal();
    }

    #[test]
    fn a_file_encoder_writes_the_bytes_an_encoder_in_memory_keeps() {
        let mut kept = Encoder::default();
        encode_sample(&mut kept);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("encoded");
        let mut written = Encoder::to_file(std::fs::File::create(&path).unwrap());
        encode_sample(&mut written);
        assert!(
            written.bytes.len() < 2 * WRITE_AT,
            "the file encoder wrote out as it went"
        );
        let out = written.out.as_ref().expect("a file encoder");
        assert!(out.written > 0 && out.written.is_multiple_of(WRITE_ALIGN as u64));
        assert_eq!(written.position(), kept.bytes.len());
        written.finish().unwrap();
        let on_disk = std::fs::read(&path).unwrap();
        assert!(
            on_disk == kept.bytes,
            "the same bytes, padding and checksum included"
        );
        // The seal: the length of what precedes it and its CRC-32.
        let body = kept.bytes.len() - 12;
        let mut trailer = Decoder::new(&kept.bytes[body..]);
        assert_eq!(trailer.u64().unwrap(), body as u64);
        assert_eq!(trailer.u32().unwrap(), crc32fast::hash(&kept.bytes[..body]));
    }

    #[test]
    fn a_file_encoder_whose_writes_fail_says_so_when_finished() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("read-only");
        std::fs::write(&path, b"").unwrap();
        let mut encoder = Encoder::to_file(std::fs::File::open(&path).unwrap());
        encode_sample(&mut encoder);
        assert!(encoder.finish().is_err());
    }

    #[test]
    fn values_round_trip_and_a_short_input_is_an_error() {
        let mut encoder = Encoder::default();
        encoder.u8(7);
        encoder.u32(70_000);
        encoder.u64(u64::MAX - 1);
        encoder.count(2);
        encoder.f32s(&[1.5, -0.0]);
        encoder.u32s(&[3, 4]);
        encoder.text("ns é");
        encoder.pad_to(16);
        encoder.u8(9);
        let mut decoder = Decoder::new(&encoder.bytes);
        assert_eq!(decoder.u8(), Ok(7));
        assert_eq!(decoder.u32(), Ok(70_000));
        assert_eq!(decoder.u64(), Ok(u64::MAX - 1));
        let count = decoder.count(4).unwrap();
        let floats = decoder.word_bytes(count).unwrap();
        assert_eq!(floats[..4], 1.5_f32.to_le_bytes());
        assert_eq!(floats[4..], (-0.0_f32).to_le_bytes());
        assert_eq!(decoder.u32s(2), Ok(vec![3, 4]));
        assert_eq!(decoder.text(), Ok("ns é"));
        assert_eq!(decoder.skip_padding(16), Ok(()));
        assert_eq!(decoder.u8(), Ok(9));
        assert_eq!(decoder.remaining(), 0);
        assert!(matches!(decoder.u8(), Err(DecodeError::Truncated { .. })));

        let mut huge = Encoder::default();
        huge.u64(u64::MAX / 8);
        assert!(
            Decoder::new(&huge.bytes).count(4).is_err(),
            "a count the input cannot hold is refused before anything is allocated"
        );
    }
}
