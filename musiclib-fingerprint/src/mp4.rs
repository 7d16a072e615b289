//! Just enough of an MP4 box walker to read the audio track's edit list.
//!
//! AAC streams start with encoder priming (1024 samples from FFmpeg's encoder, 2112 from Apple's
//! and Nero's) that the edit list (`moov/trak/edts/elst`, its first non-empty edit's
//! `media_time`) says to skip. FFmpeg's mov demuxer honours it, so fpcalc never sees those
//! samples; Symphonia (0.6 too) parses the box but does not apply it, so we drop them ourselves.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// The moov box is read into memory; anything bigger than this is not a sane audio file.
const MAX_MOOV_BYTES: u64 = 64 << 20;

/// Number of samples (at `sample_rate`) the first audio track's edit list skips, or `None` when the
/// file is not MP4 or has no edit list.
pub(crate) fn priming_samples(path: &Path, sample_rate: u32) -> Option<u64> {
    let mut file = File::open(path).ok()?;
    let moov = read_top_level_box(&mut file, b"moov")?;
    for trak in children(&moov).filter(|(kind, _)| kind == b"trak") {
        let trak = trak.1;
        let mdia = child(trak, b"mdia")?;
        let is_audio = child(mdia, b"hdlr").is_some_and(|hdlr| hdlr.get(8..12) == Some(b"soun"));
        if !is_audio {
            continue;
        }
        let timescale = child(mdia, b"mdhd").and_then(mdhd_timescale)?;
        let media_time = child(trak, b"edts")
            .and_then(|edts| child(edts, b"elst"))
            .and_then(first_media_time)?;
        if timescale == 0 {
            return None;
        }
        return Some(media_time * u64::from(sample_rate) / u64::from(timescale));
    }
    None
}

/// Checks the sample tables of an MP4 file before a decoder trusts them: each table's entry
/// count must fit in its box, and chunk numbers start at 1. symphonia 0.5 allocated
/// `entry_count` entries up front and subtracted 1 from `first_chunk` unchecked, so a forged
/// count could exhaust memory (an abort, not a recoverable panic) and a zero would overflow.
/// symphonia 0.6 caps that allocation, stops at the end of the box and refuses chunk 0; the
/// check stays so that such a file is refused the same way, naming the table, whatever the
/// demuxer does with it. Not an MP4 (no `moov`) passes, and so does a file that cannot be
/// opened (the decoder reports that, as an I/O error).
pub fn check_sample_tables_in_file(path: &Path) -> Result<(), String> {
    let Ok(mut file) = File::open(path) else {
        return Ok(());
    };
    match read_top_level_box(&mut file, b"moov") {
        Some(moov) => check_sample_tables(&moov),
        None => Ok(()),
    }
}

/// As [`check_sample_tables_in_file`], for a file in memory.
pub fn check_sample_tables_in_bytes(data: &[u8]) -> Result<(), String> {
    match child(data, b"moov") {
        Some(moov) => check_sample_tables(moov),
        None => Ok(()),
    }
}

fn check_sample_tables(moov: &[u8]) -> Result<(), String> {
    let stbls = children(moov)
        .filter(|(kind, _)| kind == b"trak")
        .filter_map(|(_, trak)| child(trak, b"mdia"))
        .filter_map(|mdia| child(mdia, b"minf"))
        .filter_map(|minf| child(minf, b"stbl"));
    for stbl in stbls {
        for (kind, table) in children(stbl) {
            // (offset of the entry count, bytes per entry) after the version and flags.
            let layout = match &kind {
                b"stsc" => Some((4, 12)),
                b"stco" | b"stss" => Some((4, 4)),
                b"co64" | b"stts" | b"ctts" => Some((4, 8)),
                // Entries only when no common sample size is given.
                b"stsz" if table.get(4..8).is_some_and(|size| size == [0; 4]) => Some((8, 4)),
                _ => None,
            };
            let Some((count_at, entry_len)) = layout else {
                continue;
            };
            let name = String::from_utf8_lossy(&kind);
            let count = table
                .get(count_at..count_at + 4)
                .map(|bytes| u32::from_be_bytes(bytes.try_into().expect("4 bytes")) as usize)
                .ok_or_else(|| format!("the {name} table is cut short"))?;
            let room = table.len().saturating_sub(count_at + 4) / entry_len;
            if count > room {
                return Err(format!(
                    "the {name} table claims {count} entries but has room for {room}"
                ));
            }
            if &kind == b"stsc" {
                let entries = &table[count_at + 4..];
                if (0..count).any(|i| entries[i * 12..i * 12 + 4] == [0; 4]) {
                    return Err("the stsc table numbers a chunk 0 (chunks start at 1)".into());
                }
            }
        }
    }
    Ok(())
}

/// Reads the payload of the first top-level box of type `kind`, skipping others by their size.
fn read_top_level_box(file: &mut File, kind: &[u8; 4]) -> Option<Vec<u8>> {
    let file_len = file.metadata().ok()?.len();
    let mut offset = 0u64;
    while offset + 8 <= file_len {
        file.seek(SeekFrom::Start(offset)).ok()?;
        let mut header = [0u8; 16];
        file.read_exact(&mut header[..8]).ok()?;
        let mut size = u64::from(u32::from_be_bytes([
            header[0], header[1], header[2], header[3],
        ]));
        let mut header_len = 8;
        if size == 1 {
            file.read_exact(&mut header[8..16]).ok()?;
            size = u64::from_be_bytes(header[8..16].try_into().ok()?);
            header_len = 16;
        } else if size == 0 {
            size = file_len - offset;
        }
        if size < header_len {
            return None;
        }
        if &header[4..8] == kind {
            let payload = size - header_len;
            if payload > MAX_MOOV_BYTES {
                return None;
            }
            let mut data = vec![0u8; payload as usize];
            file.read_exact(&mut data).ok()?;
            return Some(data);
        }
        offset += size;
    }
    None
}

/// Iterates over the (type, payload) boxes directly inside `data`.
fn children(data: &[u8]) -> impl Iterator<Item = ([u8; 4], &[u8])> {
    let mut rest = data;
    std::iter::from_fn(move || {
        let size = u32::from_be_bytes(rest.get(..4)?.try_into().ok()?) as usize;
        let kind: [u8; 4] = rest.get(4..8)?.try_into().ok()?;
        let (header, size) = match size {
            1 => (
                16,
                u64::from_be_bytes(rest.get(8..16)?.try_into().ok()?) as usize,
            ),
            0 => (8, rest.len()),
            n => (8, n),
        };
        let payload = rest.get(header..size)?;
        rest = &rest[size..];
        Some((kind, payload))
    })
}

fn child<'a>(data: &'a [u8], kind: &[u8; 4]) -> Option<&'a [u8]> {
    children(data)
        .find(|(k, _)| k == kind)
        .map(|(_, payload)| payload)
}

/// `mdhd` timescale (version 0: 32-bit times, version 1: 64-bit times).
fn mdhd_timescale(mdhd: &[u8]) -> Option<u32> {
    let at = if *mdhd.first()? == 1 { 20 } else { 12 };
    Some(u32::from_be_bytes(mdhd.get(at..at + 4)?.try_into().ok()?))
}

/// `media_time` of the first edit that is not an empty (-1) edit.
fn first_media_time(elst: &[u8]) -> Option<u64> {
    let version = *elst.first()?;
    let count = u32::from_be_bytes(elst.get(4..8)?.try_into().ok()?) as usize;
    let entry_len = if version == 1 { 20 } else { 12 };
    (0..count).find_map(|i| {
        let entry = elst.get(8 + i * entry_len..8 + (i + 1) * entry_len)?;
        let media_time = if version == 1 {
            i64::from_be_bytes(entry.get(8..16)?.try_into().ok()?)
        } else {
            i64::from(i32::from_be_bytes(entry.get(4..8)?.try_into().ok()?))
        };
        u64::try_from(media_time).ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boxed(kind: &[u8; 4], payload: &[u8]) -> Vec<u8> {
        let mut out = ((payload.len() + 8) as u32).to_be_bytes().to_vec();
        out.extend_from_slice(kind);
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn reads_first_non_empty_edit() {
        // Version 0, two entries: an empty edit (media_time -1), then media_time 2112.
        let mut elst = vec![0, 0, 0, 0, 0, 0, 0, 2];
        elst.extend_from_slice(&[0, 0, 0, 10, 0xff, 0xff, 0xff, 0xff, 0, 1, 0, 0]);
        elst.extend_from_slice(&[0, 0, 1, 0, 0, 0, 0x08, 0x40, 0, 1, 0, 0]);
        assert_eq!(first_media_time(&elst), Some(2112));
    }

    #[test]
    fn refuses_sample_tables_that_do_not_fit() {
        let stbl = |table: Vec<u8>| {
            boxed(
                b"trak",
                &boxed(b"mdia", &boxed(b"minf", &boxed(b"stbl", &table))),
            )
        };
        let mut forged = vec![0, 0, 0, 0];
        forged.extend_from_slice(&u32::MAX.to_be_bytes());
        forged.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1]);
        assert!(check_sample_tables(&stbl(boxed(b"stsc", &forged))).is_err());
        let mut zero_chunk = vec![0, 0, 0, 0, 0, 0, 0, 1];
        zero_chunk.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1]);
        assert!(check_sample_tables(&stbl(boxed(b"stsc", &zero_chunk))).is_err());
        let mut good = vec![0, 0, 0, 0, 0, 0, 0, 1];
        good.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1]);
        assert!(check_sample_tables(&stbl(boxed(b"stsc", &good))).is_ok());
    }

    #[test]
    fn walks_nested_boxes() {
        let hdlr = boxed(b"hdlr", &[0, 0, 0, 0, 0, 0, 0, 0, b's', b'o', b'u', b'n']);
        let mut mdhd_payload = vec![0u8; 12];
        mdhd_payload.extend_from_slice(&44_100u32.to_be_bytes());
        let mdia = boxed(b"mdia", &[boxed(b"mdhd", &mdhd_payload), hdlr].concat());
        let elst = boxed(
            b"elst",
            &[0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 4, 0, 0, 1, 0, 0],
        );
        let trak = boxed(b"trak", &[boxed(b"edts", &elst), mdia].concat());
        let children: Vec<[u8; 4]> = children(&trak[8..]).map(|(k, _)| k).collect();
        assert_eq!(children, vec![*b"edts", *b"mdia"]);
        let mdia = child(&trak[8..], b"mdia").expect("mdia");
        assert_eq!(child(mdia, b"mdhd").and_then(mdhd_timescale), Some(44_100));
    }
}
