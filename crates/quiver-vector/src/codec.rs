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

/// Appends values to a byte buffer.
#[derive(Debug, Default)]
pub(crate) struct Encoder {
    pub(crate) bytes: Vec<u8>,
}

impl Encoder {
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

    pub(crate) fn u32s(&mut self, values: &[u32]) {
        self.bytes.reserve(values.len() * 4);
        for value in values {
            self.bytes.extend_from_slice(&value.to_le_bytes());
        }
    }

    pub(crate) fn f32s(&mut self, values: &[f32]) {
        self.bytes.reserve(values.len() * 4);
        for value in values {
            self.bytes.extend_from_slice(&value.to_le_bytes());
        }
    }

    /// Zero bytes up to the next multiple of `alignment` from the start of the encoding.
    pub(crate) fn pad_to(&mut self, alignment: usize) {
        let padded = self.bytes.len().next_multiple_of(alignment);
        self.bytes.resize(padded, 0);
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
