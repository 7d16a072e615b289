//! The measurement itself, apart from the job and the database: a [`Meter`] fed the decoded
//! samples (a `musiclib_fingerprint::pcm` sink) reads BS.1770's gating blocks and sample peak
//! with `ebur128`; [`Blocks`] keeps a track's blocks for its album; the gating is here.

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::Path;

use ebur128::{Channel, EbuR128, Mode};
use musiclib_fingerprint::pcm::{PcmSink, Samples, Speaker};

/// ReplayGain 2.0's reference loudness: a gain brings a track to it.
pub const REFERENCE_LUFS: f64 = -18.0;
/// The absolute gate: blocks quieter than this are left out (BS.1770-4).
const ABSOLUTE_GATE_LUFS: f64 = -70.0;
/// The relative gate, below the loudness of the blocks above the absolute gate.
const RELATIVE_GATE_LU: f64 = -10.0;
/// Width of a histogram bin of stored blocks, in LU.
const BIN_LU: f64 = 0.1;
/// The loudest block a histogram holds (louder ones count in its last bin).
const LOUDEST_BLOCK_LUFS: f64 = 30.0;

/// Loudness from the mean square energy of K-weighted audio (BS.1770).
fn loudness_of(energy: f64) -> f64 {
    ebur128::energy_to_loudness(energy)
}

/// The energy of a loudness ([`loudness_of`] reversed).
fn energy_of(loudness: f64) -> f64 {
    10f64.powf((loudness + 0.691) / 10.0)
}

/// The integrated loudness of gating blocks given as `(energy, count)`: the mean energy of
/// the blocks above both gates. `None` when no block is above the absolute gate (silence,
/// or less than 400 ms of audio).
fn gated_loudness(blocks: impl Iterator<Item = (f64, u64)> + Clone) -> Option<f64> {
    let absolute = energy_of(ABSOLUTE_GATE_LUFS);
    let mean = |threshold: f64| {
        let (sum, count) = blocks
            .clone()
            .filter(|(energy, _)| *energy >= threshold)
            .fold((0.0, 0u64), |(sum, count), (energy, blocks)| {
                (sum + energy * blocks as f64, count + blocks)
            });
        (count > 0).then(|| sum / count as f64)
    };
    let relative = mean(absolute)? * 10f64.powf(RELATIVE_GATE_LU / 10.0);
    mean(relative.max(absolute)).map(loudness_of)
}

/// The gating blocks of a track above the absolute gate, as a histogram of their loudness:
/// bin `i` holds the blocks from `-70 + i × 0.1` LUFS up to the next bin, with their count
/// and their mean energy (kept to 0.001 LU), which stands for them all. An album's loudness
/// from its tracks' histograms is then within a few thousandths of a LU of the one gated
/// over their blocks themselves: only which blocks pass the relative gate is decided a bin
/// at a time.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Blocks {
    bins: BTreeMap<u16, Bin>,
}

/// One bin: how many blocks, and their energies added up.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Bin {
    count: u64,
    energy: f64,
}

impl Blocks {
    /// The last bin (louder blocks count in it).
    const TOP: u16 = ((LOUDEST_BLOCK_LUFS - ABSOLUTE_GATE_LUFS) / BIN_LU) as u16;

    fn add(&mut self, energy: f64) {
        let loudness = loudness_of(energy);
        if loudness.is_nan() || loudness < ABSOLUTE_GATE_LUFS {
            return;
        }
        let bin = (((loudness - ABSOLUTE_GATE_LUFS) / BIN_LU).floor() as u16).min(Self::TOP);
        let entry = self.bins.entry(bin).or_default();
        entry.count += 1;
        entry.energy += energy;
    }

    /// The lower edge of bin `bin`, LUFS.
    fn edge(bin: u16) -> f64 {
        ABSOLUTE_GATE_LUFS + f64::from(bin) * BIN_LU
    }

    /// Each bin as (its blocks' mean energy, their count).
    fn energies(&self) -> impl Iterator<Item = (f64, u64)> + Clone + '_ {
        self.bins
            .values()
            .map(|bin| (bin.energy / bin.count as f64, bin.count))
    }

    /// The stored text: `bin:count:mean` triples separated by spaces, in bin order, `mean`
    /// the blocks' mean loudness above the bin's lower edge in thousandths of a LU.
    pub(crate) fn to_text(&self) -> String {
        self.bins
            .iter()
            .map(|(&bin, entry)| {
                let mean = loudness_of(entry.energy / entry.count as f64);
                let above = ((mean - Self::edge(bin)) * 1000.0).round().max(0.0) as u64;
                format!("{bin}:{}:{above}", entry.count)
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The stored text read back; `None` when it is not what [`Blocks::to_text`] writes.
    pub(crate) fn from_text(text: &str) -> Option<Blocks> {
        let mut bins = BTreeMap::new();
        for triple in text.split_whitespace() {
            let mut parts = triple.split(':');
            let bin: u16 = parts.next()?.parse().ok()?;
            let count: u64 = parts.next()?.parse().ok()?;
            let above: u32 = parts.next()?.parse().ok()?;
            if parts.next().is_some() || bin > Self::TOP || count == 0 {
                return None;
            }
            let mean = Self::edge(bin) + f64::from(above) / 1000.0;
            let energy = energy_of(mean) * count as f64;
            bins.insert(bin, Bin { count, energy });
        }
        Some(Blocks { bins })
    }
}

/// The integrated loudness of several tracks' blocks gated together (an album).
pub(crate) fn album_loudness(tracks: &[Blocks]) -> Option<f64> {
    gated_loudness(tracks.iter().flat_map(Blocks::energies))
}

/// What measuring a file found.
#[derive(Debug, Clone)]
pub struct Measurement {
    /// Integrated loudness, LUFS.
    pub loudness: f64,
    /// Largest sample, linear.
    pub peak: f64,
    /// Its gating blocks, for its album.
    pub(crate) blocks: Blocks,
}

impl Measurement {
    /// ReplayGain's track gain, in dB (to 0.01 dB, as taggers write it).
    pub fn gain(&self) -> f64 {
        gain_of(self.loudness)
    }
}

/// The ReplayGain gain of `loudness` LUFS, to 0.01 dB (as taggers write it).
pub(crate) fn gain_of(loudness: f64) -> f64 {
    ((REFERENCE_LUFS - loudness) * 100.0).round() / 100.0
}

/// Measures the loudness of audio fed to it as a [`PcmSink`]: K-weighted by `ebur128`
/// (its momentary mode only). The energy of each 100 ms step is read once, as it ends, and
/// each block is the mean of the last four steps: BS.1770's 400 ms gating blocks every
/// 100 ms, without summing each sample four times (as `ebur128`'s own integrated mode
/// does). The sample peak is read here too, in one pass per block that the compiler
/// vectorises (`ebur128`'s own costs a third of its filter).
pub(crate) struct Meter {
    meter: Option<EbuR128>,
    /// Frames in a step (100 ms, as `ebur128` reads a window of 100 ms), and those fed
    /// since the last step ended.
    step: usize,
    filled: usize,
    /// The energies of the last four steps, the newest at `steps % 4`.
    recent: [f64; 4],
    /// Steps taken (a block is complete from the fourth on).
    steps: u64,
    /// Every block's energy, in order.
    energies: Vec<f64>,
    /// The largest sample so far, linear.
    peak: f64,
    /// Scratch for 8-bit input, which `ebur128` does not take.
    scratch: Vec<Vec<f32>>,
    failure: Option<String>,
}

impl Meter {
    pub(crate) fn new() -> Meter {
        Meter {
            meter: None,
            step: 0,
            filled: 0,
            recent: [0.0; 4],
            steps: 0,
            energies: Vec::new(),
            peak: 0.0,
            scratch: Vec::new(),
            failure: None,
        }
    }

    /// What was measured, or why nothing was.
    pub(crate) fn finish(self) -> std::result::Result<Measurement, String> {
        if let Some(failure) = self.failure {
            return Err(failure);
        }
        if self.meter.is_none() {
            return Err("no audio was decoded".into());
        }
        let loudness = gated_loudness(self.energies.iter().map(|&energy| (energy, 1)))
            .ok_or("the audio is silent (or shorter than 400 ms): no loudness to measure")?;
        let peak = self.peak;
        let mut blocks = Blocks::default();
        for &energy in &self.energies {
            blocks.add(energy);
        }
        Ok(Measurement {
            loudness,
            peak,
            blocks,
        })
    }

    /// Feeds `planes` in pieces ending on the 100 ms steps, reading a block at each step.
    fn feed<T>(
        &mut self,
        planes: &[&[T]],
        add: fn(&mut EbuR128, &[&[T]]) -> std::result::Result<(), ebur128::Error>,
    ) -> ControlFlow<()> {
        let Some(meter) = self.meter.as_mut() else {
            return ControlFlow::Break(());
        };
        let frames = planes.iter().map(|plane| plane.len()).min().unwrap_or(0);
        let mut at = 0;
        while at < frames {
            let take = (self.step - self.filled).min(frames - at);
            let piece: Vec<&[T]> = planes.iter().map(|plane| &plane[at..at + take]).collect();
            if let Err(error) = add(meter, &piece) {
                self.failure = Some(format!("cannot measure the loudness: {error}"));
                return ControlFlow::Break(());
            }
            at += take;
            self.filled += take;
            if self.filled == self.step {
                self.filled = 0;
                let step = meter.loudness_window(100).map_or(0.0, energy_of);
                self.recent[(self.steps % 4) as usize] = step;
                self.steps += 1;
                if self.steps >= 4 {
                    self.energies.push(self.recent.iter().sum::<f64>() / 4.0);
                }
            }
        }
        ControlFlow::Continue(())
    }
}

impl Default for Meter {
    fn default() -> Self {
        Meter::new()
    }
}

/// BS.1770's weight of each speaker: surrounds 1.41 (+1.5 dB), the LFE left out, the rest 1
/// (as ffmpeg's `ebur128` filter weighs them).
fn channel_of(speaker: Speaker) -> Channel {
    match speaker {
        Speaker::FrontLeft | Speaker::FrontLeftOfCenter => Channel::Left,
        Speaker::FrontRight | Speaker::FrontRightOfCenter => Channel::Right,
        Speaker::BackLeft | Speaker::SideLeft => Channel::LeftSurround,
        Speaker::BackRight | Speaker::SideRight => Channel::RightSurround,
        Speaker::LowFrequency => Channel::Unused,
        Speaker::FrontCenter | Speaker::BackCenter | Speaker::Other => Channel::Center,
    }
}

impl PcmSink for Meter {
    fn start(&mut self, sample_rate: u32, speakers: &[Speaker]) -> std::result::Result<(), String> {
        let channels = u32::try_from(speakers.len()).map_err(|_| "too many channels")?;
        let mut meter = EbuR128::new(channels, sample_rate, Mode::M)
            .map_err(|error| format!("cannot measure this audio: {error}"))?;
        let map: Vec<Channel> = speakers.iter().copied().map(channel_of).collect();
        meter
            .set_channel_map(&map)
            .map_err(|error| format!("cannot measure this audio: {error}"))?;
        // The frames `loudness_window(100)` reads (100 ms where the rate allows).
        self.step = (sample_rate as usize * 100 / 1000).max(1);
        self.meter = Some(meter);
        Ok(())
    }

    fn push(&mut self, samples: Samples<'_>) -> ControlFlow<()> {
        self.peak = self.peak.max(peak_of(samples));
        match samples {
            Samples::S16(planes) => self.feed(planes, EbuR128::add_frames_planar_i16),
            Samples::S32(planes) => self.feed(planes, EbuR128::add_frames_planar_i32),
            Samples::F32(planes) => self.feed(planes, EbuR128::add_frames_planar_f32),
            Samples::U8(planes) => {
                let mut scratch = std::mem::take(&mut self.scratch);
                scratch.resize_with(planes.len(), Vec::new);
                for (out, plane) in scratch.iter_mut().zip(planes) {
                    out.clear();
                    out.extend(plane.iter().map(|&x| (f32::from(x) - 128.0) / 128.0));
                }
                let refs: Vec<&[f32]> = scratch.iter().map(Vec::as_slice).collect();
                let flow = self.feed(&refs, EbuR128::add_frames_planar_f32);
                drop(refs);
                self.scratch = scratch;
                flow
            }
        }
    }
}

/// The largest absolute sample of `samples`, linear (1.0 full scale, as `ebur128` scales
/// them: 32768 for 16 bits, 2^31 for 32).
fn peak_of(samples: Samples<'_>) -> f64 {
    fn largest<T: Copy, M: Ord + Default>(planes: &[&[T]], magnitude: impl Fn(T) -> M) -> M {
        planes
            .iter()
            .flat_map(|plane| plane.iter())
            .fold(M::default(), |largest, &sample| {
                largest.max(magnitude(sample))
            })
    }
    match samples {
        Samples::U8(planes) => f64::from(largest(planes, |x: u8| x.abs_diff(128))) / 128.0,
        Samples::S16(planes) => f64::from(largest(planes, i16::unsigned_abs)) / 32768.0,
        Samples::S32(planes) => f64::from(largest(planes, i32::unsigned_abs)) / 2_147_483_648.0,
        Samples::F32(planes) => f64::from(
            planes
                .iter()
                .flat_map(|plane| plane.iter())
                .fold(0f32, |largest, &sample| largest.max(sample.abs())),
        ),
    }
}

/// Measures the file at `path` (blocking: decoding and metering are CPU work), on this
/// thread.
pub fn measure_file(path: &Path) -> std::result::Result<Measurement, String> {
    let mut meter = Meter::new();
    musiclib_fingerprint::pcm::decode_file(path, &mut meter)
        .map_err(|error| format!("cannot decode the audio: {error}"))?;
    meter.finish()
}

/// [`measure_file`] with the metering on a second thread beside the decoding (for a caller
/// that holds a second CPU slot): the decoded samples are copied across, and the
/// measurement takes about as long as the decoding alone.
pub fn measure_file_beside(path: &Path) -> std::result::Result<Measurement, String> {
    std::thread::scope(|scope| {
        let (sender, receiver) = std::sync::mpsc::sync_channel::<Owned>(32);
        let metering = scope.spawn(move || {
            let mut meter = Meter::new();
            for owned in receiver {
                let flow = match owned {
                    Owned::Start(rate, speakers) => match meter.start(rate, &speakers) {
                        Ok(()) => ControlFlow::Continue(()),
                        Err(error) => {
                            meter.failure = Some(error);
                            ControlFlow::Break(())
                        }
                    },
                    Owned::U8(planes) => meter.push(Samples::U8(&borrowed(&planes))),
                    Owned::S16(planes) => meter.push(Samples::S16(&borrowed(&planes))),
                    Owned::S32(planes) => meter.push(Samples::S32(&borrowed(&planes))),
                    Owned::F32(planes) => meter.push(Samples::F32(&borrowed(&planes))),
                };
                if flow.is_break() {
                    break;
                }
            }
            meter
        });
        let mut handoff = Handoff {
            sender,
            pending: None,
        };
        let decoded = musiclib_fingerprint::pcm::decode_file(path, &mut handoff);
        let _ = handoff.flush();
        drop(handoff);
        let meter = metering
            .join()
            .map_err(|_| "the loudness meter failed on this file".to_string())?;
        if meter.failure.is_none() {
            decoded.map_err(|error| format!("cannot decode the audio: {error}"))?;
        }
        meter.finish()
    })
}

/// Decoded samples on their way to the metering thread.
enum Owned {
    Start(u32, Vec<Speaker>),
    U8(Vec<Vec<u8>>),
    S16(Vec<Vec<i16>>),
    S32(Vec<Vec<i32>>),
    F32(Vec<Vec<f32>>),
}

impl Owned {
    /// Frames held.
    fn frames(&self) -> usize {
        match self {
            Owned::Start(..) => 0,
            Owned::U8(planes) => planes.first().map_or(0, Vec::len),
            Owned::S16(planes) => planes.first().map_or(0, Vec::len),
            Owned::S32(planes) => planes.first().map_or(0, Vec::len),
            Owned::F32(planes) => planes.first().map_or(0, Vec::len),
        }
    }

    /// Appends `samples` when they are of the same type; gives them back otherwise.
    fn append<'a>(&mut self, samples: Samples<'a>) -> Option<Samples<'a>> {
        fn extend<T: Copy>(into: &mut [Vec<T>], planes: &[&[T]]) -> bool {
            if into.len() != planes.len() {
                return false;
            }
            for (into, plane) in into.iter_mut().zip(planes) {
                into.extend_from_slice(plane);
            }
            true
        }
        let appended = match (self, samples) {
            (Owned::U8(into), Samples::U8(planes)) => extend(into, planes),
            (Owned::S16(into), Samples::S16(planes)) => extend(into, planes),
            (Owned::S32(into), Samples::S32(planes)) => extend(into, planes),
            (Owned::F32(into), Samples::F32(planes)) => extend(into, planes),
            _ => false,
        };
        (!appended).then_some(samples)
    }
}

fn owned<T: Copy>(planes: &[&[T]]) -> Vec<Vec<T>> {
    planes.iter().map(|plane| plane.to_vec()).collect()
}

/// Frames the decoding side gathers before it hands them over (each handover wakes the
/// metering thread: a decoder's packets are small).
const HANDOVER_FRAMES: usize = 16_384;

fn borrowed<T>(planes: &[Vec<T>]) -> Vec<&[T]> {
    planes.iter().map(Vec::as_slice).collect()
}

/// The decoding side of [`measure_file_beside`]: gathers what it is given and sends it
/// across in handovers of [`HANDOVER_FRAMES`]; stops the decoding once the meter stopped.
struct Handoff {
    sender: std::sync::mpsc::SyncSender<Owned>,
    pending: Option<Owned>,
}

impl Handoff {
    /// Sends what is gathered; `Break` once the meter stopped.
    fn flush(&mut self) -> ControlFlow<()> {
        let sent = self.pending.take().map(|owned| self.sender.send(owned));
        match sent {
            Some(Err(_)) => ControlFlow::Break(()),
            _ => ControlFlow::Continue(()),
        }
    }
}

impl PcmSink for Handoff {
    fn start(&mut self, sample_rate: u32, speakers: &[Speaker]) -> std::result::Result<(), String> {
        self.sender
            .send(Owned::Start(sample_rate, speakers.to_vec()))
            .map_err(|_| "the loudness meter stopped".to_string())
    }

    fn push(&mut self, samples: Samples<'_>) -> ControlFlow<()> {
        let rest = match self.pending.as_mut() {
            Some(pending) => pending.append(samples),
            None => Some(samples),
        };
        if let Some(samples) = rest {
            self.flush()?;
            self.pending = Some(match samples {
                Samples::U8(planes) => Owned::U8(owned(planes)),
                Samples::S16(planes) => Owned::S16(owned(planes)),
                Samples::S32(planes) => Owned::S32(owned(planes)),
                Samples::F32(planes) => Owned::F32(owned(planes)),
            });
        }
        if self
            .pending
            .as_ref()
            .is_some_and(|pending| pending.frames() >= HANDOVER_FRAMES)
        {
            self.flush()?;
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RATE: u32 = 48_000;

    /// `seconds` of a 997 Hz sine at `dbfs` (peak), the same in both channels.
    fn sine(seconds: f64, dbfs: f64) -> Vec<f32> {
        let amplitude = 10f64.powf(dbfs / 20.0);
        (0..(seconds * f64::from(RATE)) as usize)
            .map(|n| {
                let t = n as f64 / f64::from(RATE);
                (amplitude * (2.0 * std::f64::consts::PI * 997.0 * t).sin()) as f32
            })
            .collect()
    }

    /// Feeds `signal` (both channels) to a meter in pieces of `piece` frames.
    fn meter(signal: &[f32], piece: usize) -> Meter {
        let mut meter = Meter::new();
        meter
            .start(RATE, &[Speaker::FrontLeft, Speaker::FrontRight])
            .unwrap();
        for chunk in signal.chunks(piece) {
            let planes = [chunk, chunk];
            assert!(meter.push(Samples::F32(&planes)).is_continue());
        }
        meter
    }

    /// The reference: ebur128's own integrated loudness (its block queue) of `signals`.
    fn reference(signals: &[&[f32]]) -> (Vec<f64>, f64) {
        let meters: Vec<EbuR128> = signals
            .iter()
            .map(|signal| {
                let mut meter = EbuR128::new(2, RATE, Mode::I).unwrap();
                meter.add_frames_planar_f32(&[signal, signal]).unwrap();
                meter
            })
            .collect();
        let each = meters
            .iter()
            .map(|meter| meter.loudness_global().unwrap())
            .collect();
        (
            each,
            EbuR128::loudness_global_multiple(meters.iter()).unwrap(),
        )
    }

    /// A signal whose gating matters: loud, then soft (below the relative gate), then
    /// silence (below the absolute gate), then medium.
    fn uneven() -> Vec<f32> {
        [
            sine(3.0, -10.0),
            sine(2.0, -40.0),
            vec![0.0; RATE as usize],
            sine(4.3, -20.0),
        ]
        .concat()
    }

    #[test]
    fn a_sine_at_minus_20_dbfs_measures_minus_20_lufs() {
        let measured = meter(&sine(5.0, -20.0), 1024).finish().unwrap();
        assert!(
            (measured.loudness + 20.0).abs() < 0.05,
            "{}",
            measured.loudness
        );
        assert!((measured.peak - 0.1).abs() < 1e-3, "{}", measured.peak);
        assert_eq!(measured.gain(), 2.0);
    }

    /// The blocks read at each 100 ms step are ebur128's gating blocks: the same integrated
    /// loudness as its own, whatever the pieces the decoder hands over.
    #[test]
    fn the_gating_equals_ebur128s_own() {
        let signal = uneven();
        let (expected, _) = reference(&[&signal]);
        for piece in [1, 441, 4800, 4801, 100_000] {
            let measured = meter(&signal, piece).finish().unwrap();
            assert!(
                (measured.loudness - expected[0]).abs() < 1e-9,
                "pieces of {piece}: {} against {}",
                measured.loudness,
                expected[0]
            );
        }
    }

    /// An album's loudness is gated over all its tracks' blocks: ebur128's loudness over
    /// the tracks together (to the histogram's 0.1 LU bins), not the mean of theirs.
    #[test]
    fn an_album_is_gated_over_its_tracks_blocks() {
        let (loud, quiet) = (sine(20.0, -8.0), uneven());
        let (each, together) = reference(&[&loud, &quiet]);
        let blocks: Vec<Blocks> = [&loud, &quiet]
            .iter()
            .map(|signal| meter(signal, 4096).finish().unwrap().blocks)
            .collect();
        let album = album_loudness(&blocks).unwrap();
        assert!(
            (album - together).abs() < 0.005,
            "{album} against {together}"
        );
        let mean = (each[0] + each[1]) / 2.0;
        assert!((album - mean).abs() > 1.0, "{album} is the mean {mean}");
        // One track alone: its own loudness, to the bins.
        let alone = album_loudness(&blocks[1..]).unwrap();
        assert!(
            (alone - each[1]).abs() < 0.005,
            "{alone} against {}",
            each[1]
        );
    }

    #[test]
    fn blocks_are_stored_as_text_and_read_back() {
        let blocks = meter(&uneven(), 4096).finish().unwrap().blocks;
        let text = blocks.to_text();
        assert!(!text.is_empty());
        let read = Blocks::from_text(&text).unwrap();
        assert_eq!(read.to_text(), text);
        let (stored, read) = (album_loudness(&[blocks]), album_loudness(&[read]));
        assert!((stored.unwrap() - read.unwrap()).abs() < 0.001);
        assert_eq!(Blocks::from_text(""), Some(Blocks::default()));
        for bad in [
            "12", "12:3", "a:1:0", "1:b:0", "1:2:0 x", "-1:3:0", "1:0:5", "1:2:3:4", "9999:1:0",
        ] {
            assert_eq!(Blocks::from_text(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn silence_and_short_audio_have_no_loudness() {
        let silence = meter(&vec![0.0; RATE as usize * 3], 4096).finish();
        assert!(silence.unwrap_err().contains("silent"));
        let short = meter(&sine(0.35, -20.0), 4096).finish();
        assert!(short.is_err());
        assert!(Meter::new().finish().is_err());
    }

    #[test]
    fn eight_bit_audio_is_measured() {
        let signal = sine(3.0, -20.0);
        let bytes: Vec<u8> = signal
            .iter()
            .map(|x| (x * 128.0 + 128.0).round().clamp(0.0, 255.0) as u8)
            .collect();
        let mut meter = Meter::new();
        meter.start(RATE, &[Speaker::FrontCenter]).unwrap();
        for chunk in bytes.chunks(1000) {
            let planes = [chunk];
            assert!(meter.push(Samples::U8(&planes)).is_continue());
        }
        let measured = meter.finish().unwrap();
        // One channel: 3 dB below the same sine in two.
        assert!(
            (measured.loudness + 23.01).abs() < 0.1,
            "{}",
            measured.loudness
        );
    }

    /// A 16-bit stereo WAV of `signal` in both channels.
    fn wav(signal: &[f32]) -> Vec<u8> {
        let data: Vec<u8> = signal
            .iter()
            .flat_map(|x| {
                let sample = (x * 32767.0).round() as i16;
                [sample.to_le_bytes(), sample.to_le_bytes()].concat()
            })
            .collect();
        let mut wav = Vec::new();
        wav.extend_from_slice(b"RIFF");
        wav.extend_from_slice(&(36 + data.len() as u32).to_le_bytes());
        wav.extend_from_slice(b"WAVEfmt ");
        wav.extend_from_slice(&16u32.to_le_bytes());
        wav.extend_from_slice(&1u16.to_le_bytes());
        wav.extend_from_slice(&2u16.to_le_bytes());
        wav.extend_from_slice(&RATE.to_le_bytes());
        wav.extend_from_slice(&(RATE * 4).to_le_bytes());
        wav.extend_from_slice(&4u16.to_le_bytes());
        wav.extend_from_slice(&16u16.to_le_bytes());
        wav.extend_from_slice(b"data");
        wav.extend_from_slice(&(data.len() as u32).to_le_bytes());
        wav.extend_from_slice(&data);
        wav
    }

    /// Metering beside the decoding measures what metering after it does.
    #[test]
    fn a_file_measures_the_same_on_one_thread_or_two() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("uneven.wav");
        std::fs::write(&path, wav(&uneven())).unwrap();
        let one = measure_file(&path).unwrap();
        let two = measure_file_beside(&path).unwrap();
        assert_eq!(one.loudness, two.loudness);
        assert_eq!(one.peak, two.peak);
        assert_eq!(one.blocks, two.blocks);
        let (expected, _) = reference(&[&uneven()]);
        assert!(
            (one.loudness - expected[0]).abs() < 0.001,
            "{} against {}",
            one.loudness,
            expected[0]
        );
        assert!((one.peak - 10f64.powf(-0.5)).abs() < 1e-3, "{}", one.peak);
        let empty = dir.path().join("empty.wav");
        std::fs::write(&empty, wav(&[])).unwrap();
        assert!(measure_file(&empty).is_err());
        assert!(measure_file_beside(&empty).is_err());
        let missing = dir.path().join("missing.wav");
        assert!(measure_file_beside(&missing)
            .unwrap_err()
            .contains("decode"));
    }
}
