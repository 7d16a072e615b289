//! Reading stored fingerprints back and comparing them.
//!
//! - [`decompress`]: the inverse of Chromaprint's compression (what `fpcalc` prints and
//!   [`crate::Fingerprint::compressed`] writes): a 4-byte header (algorithm, 24-bit item count),
//!   then each item's XOR with the previous one as the gaps between its set bits, in 3-bit
//!   "normal" values (a 0 ends an item; 7 means "7 plus the next 5-bit exceptional value"),
//!   then the exceptional values, both packed least significant bit first.
//! - [`similarity`]: 1 − the bit error rate of two raw fingerprints at their best alignment,
//!   the measure the corpus manifest uses: 0.5 is unrelated audio, re-encodes of one recording
//!   score above 0.95.

use base64::Engine as _;

/// Bits of a "normal" value.
const NORMAL_BITS: u32 = 3;
/// Bits of an "exceptional" value.
const EXCEPTIONAL_BITS: u32 = 5;
/// The normal value that announces an exceptional one.
const MAX_NORMAL_VALUE: u32 = (1 << NORMAL_BITS) - 1;

/// Reads unsigned values of a few bits, least significant bit first.
struct BitReader<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl BitReader<'_> {
    /// The next `bits` (at most 8) bits.
    fn read(&mut self, bits: u32) -> Option<u32> {
        let end = self.position + bits as usize;
        if end.div_ceil(8) > self.bytes.len() {
            return None;
        }
        let index = self.position / 8;
        let low = u32::from(self.bytes[index]);
        let high = u32::from(self.bytes.get(index + 1).copied().unwrap_or(0));
        let value = ((low | (high << 8)) >> (self.position % 8)) & ((1 << bits) - 1);
        self.position = end;
        Some(value)
    }
}

/// The raw items of a compressed fingerprint in its base64url text form (as stored and as
/// `fpcalc` prints it); `None` when the text is not one.
pub fn decompress(text: &str) -> Option<Vec<u32>> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text.trim_end_matches('='))
        .ok()?;
    decompress_bytes(&bytes)
}

/// The raw items of a compressed fingerprint.
pub fn decompress_bytes(bytes: &[u8]) -> Option<Vec<u32>> {
    let header = bytes.get(..4)?;
    let count =
        (usize::from(header[1]) << 16) | (usize::from(header[2]) << 8) | usize::from(header[3]);
    let body = &bytes[4..];
    // Every item ends with a 0: read normal values until `count` of them.
    let mut normal = BitReader {
        bytes: body,
        position: 0,
    };
    let mut values = Vec::with_capacity(count * 4);
    let mut ended = 0;
    while ended < count {
        let value = normal.read(NORMAL_BITS)?;
        if value == 0 {
            ended += 1;
        }
        values.push(value);
    }
    let normal_bytes = (values.len() * NORMAL_BITS as usize).div_ceil(8);
    let mut exceptional = BitReader {
        bytes: body.get(normal_bytes..)?,
        position: 0,
    };
    let mut items = Vec::with_capacity(count);
    let mut previous = 0u32;
    let mut item = 0u32;
    let mut bit = 0u32;
    for value in values {
        if value == 0 {
            previous ^= item;
            items.push(previous);
            item = 0;
            bit = 0;
            continue;
        }
        let gap = if value == MAX_NORMAL_VALUE {
            value + exceptional.read(EXCEPTIONAL_BITS)?
        } else {
            value
        };
        bit += gap;
        if bit == 0 || bit > 32 {
            return None;
        }
        item |= 1 << (bit - 1);
    }
    Some(items)
}

/// 1 − the bit error rate of `a` and `b` at the best offset within ±`max_offset` items, over
/// the items the two share at that offset (at least `min_overlap` of them; else 0.0).
pub fn similarity(a: &[u32], b: &[u32], max_offset: usize, min_overlap: usize) -> f64 {
    let mut best = 0.0f64;
    let max_offset = max_offset as isize;
    for offset in -max_offset..=max_offset {
        let (a_start, b_start) = if offset >= 0 {
            (offset as usize, 0)
        } else {
            (0, (-offset) as usize)
        };
        if a_start >= a.len() || b_start >= b.len() {
            continue;
        }
        let overlap = (a.len() - a_start).min(b.len() - b_start);
        if overlap < min_overlap.max(1) {
            continue;
        }
        let errors: u32 = a[a_start..a_start + overlap]
            .iter()
            .zip(&b[b_start..b_start + overlap])
            .map(|(x, y)| (x ^ y).count_ones())
            .sum();
        let score = 1.0 - f64::from(errors) / (overlap as f64 * 32.0);
        best = best.max(score);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusty_chromaprint::{Configuration, FingerprintCompressor};

    fn compress(items: &[u32]) -> Vec<u8> {
        FingerprintCompressor::from(&Configuration::preset_test2()).compress(items)
    }

    #[test]
    fn decompression_inverts_compression() {
        let mut state = 0x9e37_79b9u32;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state
        };
        for length in [0usize, 1, 2, 7, 8, 9, 100, 957] {
            let items: Vec<u32> = (0..length)
                .map(|index| match index % 5 {
                    0 => 0,
                    1 => u32::MAX,
                    2 => 0x8000_0001,
                    _ => next(),
                })
                .collect();
            assert_eq!(
                decompress_bytes(&compress(&items)).unwrap(),
                items,
                "{length}"
            );
        }
        assert!(decompress_bytes(&[1, 0, 0]).is_none());
        assert!(decompress_bytes(&[1, 0, 0, 5]).is_none());
        assert!(decompress("not base64!").is_none());
    }

    #[test]
    fn similarity_finds_the_offset_and_tells_unrelated_audio() {
        let a: Vec<u32> = (0..300u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
        let shifted: Vec<u32> = a[5..].to_vec();
        assert_eq!(similarity(&a, &shifted, 10, 50), 1.0);
        let noisy: Vec<u32> = a.iter().map(|x| x ^ 0b101).collect();
        let expected = 1.0 - 2.0 / 32.0;
        assert!((similarity(&a, &noisy, 0, 50) - expected).abs() < 1e-9);
        let other: Vec<u32> = (0..300u32)
            .map(|i| i.wrapping_mul(40_503).rotate_left(7))
            .collect();
        assert!(similarity(&a, &other, 10, 50) < 0.7);
        assert_eq!(similarity(&a, &a[..10], 0, 50), 0.0);
    }
}
