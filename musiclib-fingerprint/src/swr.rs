//! The audio conversion fpcalc performs before Chromaprint sees any sample, reproduced bit for bit.
//!
//! fpcalc (Chromaprint 1.5's `FFmpegAudioReader`) converts every decoded frame to 11025 Hz mono
//! signed 16-bit with libswresample in Chromaprint's "compatible mode" (swr engine,
//! `filter_size=16`, `phase_shift=8`, `linear_interp=1`, `cutoff=0.8`, everything else default:
//! Kaiser window with beta 9, `exact_rational` on, no dither). The fingerprint is very sensitive to
//! the exact samples, so this module re-implements that conversion the way libswresample 4.x
//! (FFmpeg 5.1, Michael Niedermayer et al., LGPL) computes it — not its code, but its arithmetic:
//!
//! * **internal format** (`swr_init`): 8/16-bit input is processed as int16, 32-bit int and float
//!   input as float. Rematrix and resampling happen in that format, with its rounding.
//! * **order**: with more input than output channels swr resamples every channel first and mixes
//!   afterwards; a mono input is only resampled.
//! * **filter bank** (`build_filter`): Kaiser-windowed sinc, `ceil(16 / factor)` taps rounded up to
//!   even, `factor = 0.8 * out_rate / in_rate`, normalised by the sum of phase 0's taps, stored as
//!   `f32` or as `lrintf`-rounded int16. `exact_rational` reduces the number of phases to the
//!   reduced output/input ratio numerator when that is at most 256 (44.1 kHz → 1 phase, 48 kHz →
//!   147 phases); otherwise 256 phases with linear interpolation between neighbouring phases.
//! * **start** (`invert_initial_buffer`): the history before the first sample is the mirror image
//!   of the first `taps` samples (not zeros), and the first output is centred on input sample 0.
//! * **end**: fpcalc 1.5.1 stops at the decoder's end-of-file error and never drains the
//!   resampler, so outputs whose filter window would reach past the last input are never produced.
//! * **dot products**: on x86-64 libswresample runs hand-written SIMD. The float kernel with FMA3
//!   keeps 8 lane accumulators updated with fused multiply-adds and sums them pairwise at the end;
//!   [`FloatKernel`] reproduces that order exactly, and the AVX and SSE variants for CPUs without
//!   FMA (checked against libswresample with forced CPU flags; one known gap: the AVX-without-FMA
//!   kernel's linear interpolation, used only for rates like 8/16/32 kHz, differs on about 1 in
//!   20000 samples). Integer kernels are exact, so their order does not matter.
//! * **output**: float → int16 is `lrintf(x * 32768)` saturated; int16 mixing is
//!   `(c1*a + c2*b + 16384) >> 15` with coefficients rounded to Q15.

use std::sync::OnceLock;

/// The sample rate Chromaprint works at; fpcalc converts everything to it.
pub(crate) const OUTPUT_RATE: u32 = 11025;

/// libswresample's settings in Chromaprint's compatible mode.
const FILTER_SIZE: f64 = 16.0;
const PHASE_SHIFT: u32 = 8;
const CUTOFF: f64 = 0.8;
const KAISER_BETA: f64 = 9.0;

/// Sample formats FFmpeg's decoders hand to libswresample (packed or planar does not matter here:
/// we always receive one slice per channel).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFormat {
    /// Unsigned 8-bit (WAV u8).
    U8,
    /// Signed 16-bit (FLAC and PCM up to 16 bits).
    S16,
    /// Signed 32-bit, full scale (FLAC/PCM with more than 16 bits, left-aligned).
    S32,
    /// 32-bit float (MP3, AAC, Vorbis, Opus decoders).
    F32,
}

/// Converts decoded audio into the 11025 Hz mono int16 stream fpcalc feeds to Chromaprint.
pub struct Converter {
    pipeline: Pipeline,
}

enum Pipeline {
    Int(Stages<i16>),
    Float(Stages<f32>),
}

impl Converter {
    /// A converter for audio at `rate` Hz in `input` format whose channels are those of
    /// `layout`, in its order.
    pub fn new(rate: u32, layout: ChannelLayout, input: InputFormat) -> Result<Self, String> {
        Self::with_kernel(rate, layout, input, FloatKernel::detect())
    }

    /// [`Converter::new`] reproducing a given float kernel instead of the one this CPU would run
    /// (for checking the kernels against libswresample with forced CPU flags).
    pub fn with_kernel(
        rate: u32,
        layout: ChannelLayout,
        input: InputFormat,
        kernel: FloatKernel,
    ) -> Result<Self, String> {
        if layout.channels() == 0 {
            return Err("no audio channels".into());
        }
        if rate == 0 {
            return Err("sample rate 0".into());
        }
        // swr_init: inputs of at most 16 bits are processed as int16, the rest as float.
        let pipeline = match input {
            InputFormat::U8 | InputFormat::S16 => Pipeline::Int(Stages::new(rate, layout, kernel)?),
            InputFormat::S32 | InputFormat::F32 => {
                Pipeline::Float(Stages::new(rate, layout, kernel)?)
            }
        };
        Ok(Self { pipeline })
    }

    /// Converts one block of int16 audio (one slice per channel), appending the output to `out`.
    pub fn push_s16(&mut self, planes: &[&[i16]], out: &mut Vec<i16>) {
        match &mut self.pipeline {
            Pipeline::Int(stages) => stages.push(planes, |v: &i16| *v, out),
            Pipeline::Float(stages) => stages.push(planes, |v: &i16| f32::from(*v) / 32768.0, out),
        }
    }

    /// Converts one block of unsigned 8-bit audio.
    pub fn push_u8(&mut self, planes: &[&[u8]], out: &mut Vec<i16>) {
        match &mut self.pipeline {
            Pipeline::Int(stages) => stages.push(planes, |v: &u8| (i16::from(*v) - 0x80) << 8, out),
            Pipeline::Float(stages) => stages.push(
                planes,
                |v: &u8| f32::from(i16::from(*v) - 0x80) / 128.0,
                out,
            ),
        }
    }

    /// Converts one block of full-scale 32-bit audio.
    pub fn push_s32(&mut self, planes: &[&[i32]], out: &mut Vec<i16>) {
        match &mut self.pipeline {
            // Same conversion as libswresample's S32 → FLT: int → float (nearest), then × 2^-31.
            Pipeline::Float(stages) => {
                stages.push(planes, |v: &i32| *v as f32 * (1.0 / 2_147_483_648.0), out)
            }
            Pipeline::Int(stages) => stages.push(planes, |v: &i32| (*v >> 16) as i16, out),
        }
    }

    /// Converts one block of float audio.
    pub fn push_f32(&mut self, planes: &[&[f32]], out: &mut Vec<i16>) {
        match &mut self.pipeline {
            Pipeline::Float(stages) => stages.push(planes, |v: &f32| *v, out),
            Pipeline::Int(stages) => stages.push(planes, |v: &f32| float_to_s16(*v), out),
        }
    }
}

/// The arithmetic of one internal sample format (libswresample's S16P or FLTP).
trait Internal: Copy + Default + Send + 'static {
    /// Filter coefficient type.
    type Coef: Copy + Default;
    /// Rematrix coefficient type.
    type Gain: Copy;
    /// `build_filter`'s `scale`: 1 << filter_shift (15 for int16, 0 for float).
    const FILTER_SCALE: f64;
    /// Filter coefficient from the ideal (double) value, as `build_filter` stores it.
    fn coef(value: f64) -> Self::Coef;
    /// Runs one channel through the filter bank: one output per step.
    fn resample(
        filter: &FilterBank<Self::Coef>,
        history: &[Self],
        steps: &[Step],
        out: &mut Vec<Self>,
    );
    /// Rematrix gains for the mono output from the double-precision matrix row.
    fn gains(row: &[f64]) -> Vec<Self::Gain>;
    /// Downmixes equally long channel planes into mono int16.
    fn mix_to_s16(gains: &[Self::Gain], planes: &[Vec<Self>], out: &mut Vec<i16>);
    /// Final conversion of a mono sample to the int16 Chromaprint gets.
    fn to_s16(self) -> i16;
}

impl Internal for i16 {
    type Coef = i16;
    type Gain = i32;
    const FILTER_SCALE: f64 = 32768.0;

    fn coef(value: f64) -> i16 {
        // build_filter: av_clip_int16(lrintf(tab[i] * scale / norm)); lrintf takes a float, so the
        // double is first rounded to float, then to the nearest (even) integer.
        let v = (value as f32).round_ties_even();
        v.clamp(-32768.0, 32767.0) as i16
    }

    fn resample(filter: &FilterBank<i16>, history: &[i16], steps: &[Step], out: &mut Vec<i16>) {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2; the function only differs in the instructions the
            // compiler may use for it.
            unsafe { resample_i16_avx2(filter, history, steps, out) };
            return;
        }
        resample_i16(filter, history, steps, out);
    }

    fn gains(row: &[f64]) -> Vec<i32> {
        // swri_rematrix_init for S16P: Q15 coefficients, rounding error carried to the next one.
        let mut rem = 0.0f64;
        row.iter()
            .map(|&g| {
                let target = g * 32768.0 + rem;
                let q = (target as f32).round_ties_even() as i32;
                rem += target - f64::from(q);
                q
            })
            .collect()
    }

    fn mix_to_s16(gains: &[i32], planes: &[Vec<i16>], out: &mut Vec<i16>) {
        // (Σ gain × sample + 16384) >> 15. The gains of a downmix to mono add up to at most 1.0, so
        // libswresample needs no clipping; saturating anyway keeps odd layouts from wrapping.
        let q15 = |acc: i32| saturate_i16(acc.wrapping_add(16384) >> 15);
        if let ([a, b], [ga, gb]) = (planes, gains) {
            out.extend(a.iter().zip(b).map(|(&x, &y)| {
                q15((ga.wrapping_mul(i32::from(x))).wrapping_add(gb.wrapping_mul(i32::from(y))))
            }));
            return;
        }
        let n = planes.first().map_or(0, Vec::len);
        out.extend((0..n).map(|i| {
            q15(planes.iter().zip(gains).fold(0i32, |acc, (p, g)| {
                acc.wrapping_add(g.wrapping_mul(i32::from(p[i])))
            }))
        }));
    }

    fn to_s16(self) -> i16 {
        self
    }
}

impl Internal for f32 {
    type Coef = f32;
    type Gain = f32;
    const FILTER_SCALE: f64 = 1.0;

    fn coef(value: f64) -> f32 {
        value as f32
    }

    fn resample(filter: &FilterBank<f32>, history: &[f32], steps: &[Step], out: &mut Vec<f32>) {
        #[cfg(target_arch = "x86_64")]
        if filter.kernel == FloatKernel::Fma8 {
            // SAFETY: FloatKernel::Fma8 is only chosen when the CPU reports AVX and FMA.
            unsafe {
                if filter.linear {
                    resample_f32_fma8_linear(filter, history, steps, out);
                } else {
                    resample_f32_fma8(filter, history, steps, out);
                }
            }
            return;
        }
        out.reserve(steps.len());
        for step in steps {
            let src = &history[step.pos..step.pos + filter.taps];
            let value = if filter.linear {
                filter.kernel.dot_linear(
                    src,
                    filter.phase(step.phase),
                    filter.phase(step.phase + 1),
                    step.frac,
                    filter.src_incr,
                )
            } else {
                filter.kernel.dot(src, filter.phase(step.phase))
            };
            out.push(value);
        }
    }

    fn gains(row: &[f64]) -> Vec<f32> {
        row.iter().map(|&g| g as f32).collect()
    }

    fn mix_to_s16(gains: &[f32], planes: &[Vec<f32>], out: &mut Vec<i16>) {
        if let ([a, b], [ga, gb]) = (planes, gains) {
            // mix_2_1: in1 × c1 + in2 × c2, in float.
            out.extend(
                a.iter()
                    .zip(b)
                    .map(|(&x, &y)| float_to_s16(x * ga + y * gb)),
            );
            return;
        }
        let n = planes.first().map_or(0, Vec::len);
        out.extend((0..n).map(|i| {
            float_to_s16(
                planes
                    .iter()
                    .zip(gains)
                    .fold(0.0f32, |acc, (p, g)| acc + p[i] * g),
            )
        }));
    }

    fn to_s16(self) -> i16 {
        float_to_s16(self)
    }
}

/// libswresample's FLT → S16: `av_clip_int16(lrintf(x * 32768))`, i.e. round half to even and
/// saturate (NaN becomes -32768 like the SIMD conversion's INT_MIN).
fn float_to_s16(x: f32) -> i16 {
    // Clamping first keeps the value small enough for the 1.5 × 2^23 trick, which rounds half to
    // even in the default rounding mode without a libm call.
    const ROUND: f32 = 12_582_912.0;
    // max/min rather than clamp: NaN must end up at -32768, not propagate.
    #[allow(clippy::manual_clamp)]
    let v = (x * 32768.0).max(-32768.0).min(32767.0);
    ((v + ROUND) - ROUND) as i16
}

fn saturate_i16(v: i32) -> i16 {
    v.clamp(i32::from(i16::MIN), i32::from(i16::MAX)) as i16
}

/// Wrapping 32-bit integer dot product (order-independent, like `pmaddwd` + `paddd`).
#[inline(always)]
fn dot_i16(src: &[i16], filter: &[i16]) -> i32 {
    src.iter().zip(filter).fold(0i32, |acc, (&s, &f)| {
        acc.wrapping_add(i32::from(s) * i32::from(f))
    })
}

/// int16 `resample_common` / `resample_linear`: exact integer sums, +0x4000, >> 15, saturated.
#[inline(always)]
fn resample_i16(filter: &FilterBank<i16>, history: &[i16], steps: &[Step], out: &mut Vec<i16>) {
    out.reserve(steps.len());
    let taps = filter.taps;
    for step in steps {
        let src = &history[step.pos..step.pos + taps];
        let v1 = dot_i16(src, &filter.phase(step.phase)[..taps]).wrapping_add(0x4000);
        let value = if filter.linear {
            let v2 = dot_i16(src, &filter.phase(step.phase + 1)[..taps]).wrapping_add(0x4000);
            let delta =
                i64::from(v2.wrapping_sub(v1)) * i64::from(step.frac) / i64::from(filter.src_incr);
            v1.wrapping_add(delta as i32)
        } else {
            v1
        };
        out.push(saturate_i16(value >> 15));
    }
}

/// [`resample_i16`] compiled for AVX2, where the integer dot product vectorises best.
///
/// Safety: the CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn resample_i16_avx2(
    filter: &FilterBank<i16>,
    history: &[i16],
    steps: &[Step],
    out: &mut Vec<i16>,
) {
    resample_i16(filter, history, steps, out);
}

/// float `resample_common` as libswresample's FMA3 kernel computes it: per output, 8 lane
/// accumulators updated with fused multiply-adds over the zero-padded filter, then
/// `(l0+l4 + l2+l6) + (l1+l5 + l3+l7)`. Four outputs are computed side by side so their
/// independent multiply-add chains overlap.
///
/// Safety: the CPU must support AVX and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,fma")]
unsafe fn resample_f32_fma8(
    filter: &FilterBank<f32>,
    history: &[f32],
    steps: &[Step],
    out: &mut Vec<f32>,
) {
    use std::arch::x86_64::{__m256, _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_setzero_ps};
    let stride = filter.stride;
    let chunks = stride / 8;
    out.reserve(steps.len());
    if filter.phase_count == 1 && chunks <= 10 {
        return resample_f32_fma8_single_phase(filter, history, steps, out);
    }
    let mut groups = steps.chunks_exact(4);
    for group in &mut groups {
        // Windows (with their zero-padding lanes) that fit in the history are read in place;
        // positions only grow, so checking the last window of the group is enough.
        if group[3].pos + stride > history.len() {
            for step in group {
                out.push(fma8_padded(filter, history, step));
            }
            continue;
        }
        let src = [0, 1, 2, 3].map(|k| history[group[k].pos..group[k].pos + stride].as_ptr());
        let coefs = [0, 1, 2, 3].map(|k| filter.phase(group[k].phase).as_ptr());
        let mut acc: [__m256; 4] = [_mm256_setzero_ps(); 4];
        for c in 0..chunks {
            for k in 0..4 {
                // SAFETY: every window and phase behind `src[k]` / `coefs[k]` holds `stride`
                // = 8 × chunks floats (sliced above).
                let (s, f) = unsafe {
                    (
                        _mm256_loadu_ps(src[k].add(c * 8)),
                        _mm256_loadu_ps(coefs[k].add(c * 8)),
                    )
                };
                acc[k] = _mm256_fmadd_ps(s, f, acc[k]);
            }
        }
        out.extend(acc.map(|a| hsum8(a)));
    }
    for step in groups.remainder() {
        out.push(fma8_padded(filter, history, step));
    }
}

/// [`resample_f32_fma8`] for the common single-phase case (44.1 → 11.025 kHz and other integer
/// ratios): every output uses the same coefficients, which then stay in registers.
///
/// Safety: the CPU must support AVX and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,fma")]
unsafe fn resample_f32_fma8_single_phase(
    filter: &FilterBank<f32>,
    history: &[f32],
    steps: &[Step],
    out: &mut Vec<f32>,
) {
    use std::arch::x86_64::{__m256, _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_setzero_ps};
    let stride = filter.stride;
    let chunks = stride / 8;
    let coefs = filter.phase(0);
    let mut taps: [__m256; 10] = [_mm256_setzero_ps(); 10];
    for (c, tap) in taps.iter_mut().enumerate().take(chunks) {
        // SAFETY: the phase holds `stride` = 8 × chunks floats.
        *tap = unsafe { _mm256_loadu_ps(coefs.as_ptr().add(c * 8)) };
    }
    let mut groups = steps.chunks_exact(4);
    for group in &mut groups {
        if group[3].pos + stride > history.len() {
            for step in group {
                out.push(fma8_padded(filter, history, step));
            }
            continue;
        }
        let src = [0, 1, 2, 3].map(|k| history[group[k].pos..group[k].pos + stride].as_ptr());
        let mut acc: [__m256; 4] = [_mm256_setzero_ps(); 4];
        for (c, &tap) in taps.iter().enumerate().take(chunks) {
            for k in 0..4 {
                // SAFETY: every window behind `src[k]` holds `stride` floats (sliced above).
                let s = unsafe { _mm256_loadu_ps(src[k].add(c * 8)) };
                acc[k] = _mm256_fmadd_ps(s, tap, acc[k]);
            }
        }
        out.extend(acc.map(|a| hsum8(a)));
    }
    for step in groups.remainder() {
        out.push(fma8_padded(filter, history, step));
    }
}

/// float `resample_linear` as libswresample's FMA3 kernel computes it: both neighbouring phases
/// accumulated in 8 lanes, folded to 4, interpolated lane by lane with a fused multiply-add by
/// `frac × (1 / src_incr)`, then summed like [`resample_f32_fma8`].
///
/// Safety: the CPU must support AVX and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,fma")]
unsafe fn resample_f32_fma8_linear(
    filter: &FilterBank<f32>,
    history: &[f32],
    steps: &[Step],
    out: &mut Vec<f32>,
) {
    use std::arch::x86_64::*;
    let stride = filter.stride;
    let inv_incr = 1.0f32 / filter.src_incr as f32;
    out.reserve(steps.len());
    for step in steps {
        let Some(window) = history.get(step.pos..step.pos + stride) else {
            // Window running off the end of the history: the portable twin pads it with zeros.
            let src = &history[step.pos..step.pos + filter.taps];
            let (f1, f2) = (filter.phase(step.phase), filter.phase(step.phase + 1));
            out.push(
                filter
                    .kernel
                    .dot_linear(src, f1, f2, step.frac, filter.src_incr),
            );
            continue;
        };
        let (f1, f2) = (
            filter.phase(step.phase).as_ptr(),
            filter.phase(step.phase + 1).as_ptr(),
        );
        let mut acc1 = _mm256_setzero_ps();
        let mut acc2 = _mm256_setzero_ps();
        for c in 0..stride / 8 {
            // SAFETY: the window and both phases hold `stride` floats.
            let (s, c1, c2) = unsafe {
                (
                    _mm256_loadu_ps(window.as_ptr().add(c * 8)),
                    _mm256_loadu_ps(f1.add(c * 8)),
                    _mm256_loadu_ps(f2.add(c * 8)),
                )
            };
            acc2 = _mm256_fmadd_ps(s, c2, acc2);
            acc1 = _mm256_fmadd_ps(s, c1, acc1);
        }
        let v1 = _mm_add_ps(
            _mm256_castps256_ps128(acc1),
            _mm256_extractf128_ps::<1>(acc1),
        );
        let v2 = _mm_add_ps(
            _mm256_castps256_ps128(acc2),
            _mm256_extractf128_ps::<1>(acc2),
        );
        let weight = _mm_set1_ps(step.frac as f32 * inv_incr);
        let quad = _mm_fmadd_ps(_mm_sub_ps(v2, v1), weight, v1);
        let pair = _mm_add_ps(quad, _mm_movehl_ps(quad, quad));
        out.push(_mm_cvtss_f32(_mm_add_ss(
            pair,
            _mm_shuffle_ps::<0b01>(pair, pair),
        )));
    }
}

/// One FMA3-kernel output for a window that may run off the end of the history (the lanes past
/// the last tap only ever meet zero coefficients, so zeros stand in for the missing samples).
///
/// Safety: the CPU must support AVX and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,fma")]
unsafe fn fma8_padded(filter: &FilterBank<f32>, history: &[f32], step: &Step) -> f32 {
    use std::arch::x86_64::{_mm256_fmadd_ps, _mm256_loadu_ps, _mm256_setzero_ps};
    let window = &history[step.pos..(step.pos + filter.stride).min(history.len())];
    let coefs = filter.phase(step.phase);
    let mut acc = _mm256_setzero_ps();
    let mut lanes = [0.0f32; 8];
    for (c, f) in coefs.chunks_exact(8).enumerate() {
        let part = window.get(c * 8..).unwrap_or(&[]);
        let n = part.len().min(8);
        lanes[..n].copy_from_slice(&part[..n]);
        lanes[n..].fill(0.0);
        // SAFETY: both arrays hold exactly 8 floats.
        let (s, f) = unsafe { (_mm256_loadu_ps(lanes.as_ptr()), _mm256_loadu_ps(f.as_ptr())) };
        acc = _mm256_fmadd_ps(s, f, acc);
    }
    hsum8(acc)
}

/// The kernel's horizontal sum: high half onto low half, then `(a0 + a2) + (a1 + a3)`.
///
/// Safety: the CPU must support AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn hsum8(acc: std::arch::x86_64::__m256) -> f32 {
    use std::arch::x86_64::*;
    let quad = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps::<1>(acc));
    let pair = _mm_add_ps(quad, _mm_movehl_ps(quad, quad));
    _mm_cvtss_f32(_mm_add_ss(pair, _mm_shuffle_ps::<0b01>(pair, pair)))
}

/// Everything after the decoder: input conversion, resampling, downmix, int16 output.
struct Stages<T: Internal> {
    channels: usize,
    resampler: Option<Resampler<T>>,
    /// Per-channel resampled (or passed-through) samples waiting to be mixed.
    resampled: Vec<Vec<T>>,
    /// Downmix gains (one per input channel); `None` for a mono input.
    gains: Option<Vec<T::Gain>>,
}

impl<T: Internal> Stages<T> {
    fn new(rate: u32, layout: ChannelLayout, kernel: FloatKernel) -> Result<Self, String> {
        let channels = layout.channels();
        let resampler = if rate == OUTPUT_RATE {
            None
        } else {
            Some(Resampler::new(rate, channels, kernel)?)
        };
        // FFmpeg's decoders call a single channel "mono" (front centre), which needs no mixing.
        let gains = (channels > 1).then(|| T::gains(&layout.mono_downmix()));
        Ok(Self {
            channels,
            resampler,
            resampled: vec![Vec::new(); channels],
            gains,
        })
    }

    fn push<S>(&mut self, input: &[&[S]], convert: impl Fn(&S) -> T, out: &mut Vec<i16>) {
        let frames = input.iter().map(|p| p.len()).min().unwrap_or(0);
        if input.len() != self.channels || frames == 0 {
            return;
        }
        for ch in &mut self.resampled {
            ch.clear();
        }
        match &mut self.resampler {
            Some(resampler) => {
                resampler.append(input, frames, &convert);
                resampler.process(&mut self.resampled);
            }
            None => {
                for (dst, src) in self.resampled.iter_mut().zip(input) {
                    dst.extend(src[..frames].iter().map(&convert));
                }
            }
        }
        match &self.gains {
            None => out.extend(self.resampled[0].iter().map(|s| s.to_s16())),
            Some(gains) => T::mix_to_s16(gains, &self.resampled, out),
        }
    }
}

/// Speaker positions of an input stream, as a channel mask with FFmpeg's (and WAVE's) bit
/// assignment: FL, FR, FC, LFE, BL, BR, FLC, FRC, BC, SL, SR, … in that bit order, which is also
/// the order of the channels in the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChannelLayout {
    mask: u64,
}

const FL: u64 = 0x1;
const FR: u64 = 0x2;
const FC: u64 = 0x4;
const LFE: u64 = 0x8;
const BL: u64 = 0x10;
const BR: u64 = 0x20;
const FLC: u64 = 0x40;
const FRC: u64 = 0x80;
const BC: u64 = 0x100;
const SL: u64 = 0x200;
const SR: u64 = 0x400;

impl ChannelLayout {
    /// The layout given by a channel mask; falls back to FFmpeg's default layout for `channels`
    /// when the mask does not describe exactly that many channels (unknown or unset layouts,
    /// which fpcalc also replaces by the default one).
    pub fn from_mask(mask: u64, channels: usize) -> Self {
        if mask.count_ones() as usize == channels {
            Self { mask }
        } else {
            Self::default_for(channels)
        }
    }

    /// FFmpeg's default layout for a channel count (`av_channel_layout_default`).
    pub fn default_for(channels: usize) -> Self {
        let mask = match channels {
            1 => FC,
            2 => FL | FR,
            3 => FL | FR | FC,
            4 => FL | FR | FC | BC,
            5 => FL | FR | FC | BL | BR,
            6 => FL | FR | FC | LFE | SL | SR,
            7 => FL | FR | FC | LFE | BC | SL | SR,
            8 => FL | FR | FC | LFE | BL | BR | SL | SR,
            n => (1u64 << n.min(63)) - 1,
        };
        Self { mask }
    }

    /// The layout FFmpeg's Vorbis and Opus decoders report (Vorbis channel order, remapped).
    pub fn vorbis_for(channels: usize) -> Self {
        let mask = match channels {
            3 => FL | FR | FC,
            4 => FL | FR | BL | BR,
            5 => FL | FR | FC | BL | BR,
            6 => FL | FR | FC | LFE | BL | BR,
            7 => FL | FR | FC | LFE | BC | SL | SR,
            8 => FL | FR | FC | LFE | BL | BR | SL | SR,
            n => return Self::default_for(n),
        };
        Self { mask }
    }

    /// The channel mask (FFmpeg's bits, see above).
    pub(crate) fn mask(self) -> u64 {
        self.mask
    }

    /// Number of channels.
    pub fn channels(self) -> usize {
        self.mask.count_ones() as usize
    }

    /// The mono (front centre) row of libswresample's automatic rematrix matrix
    /// (`swr_build_matrix`), one gain per channel in stream order: left/right and the left/right
    /// of centre at -3 dB, centre at 0 dB (`clev` × √2 when left/right are present), back, side
    /// and back-centre at `slev` × -3 dB, LFE dropped (`lfe_mix_level` 0). `clev` and `slev`
    /// are float options (-3 dB), so they enter the double arithmetic rounded to float. The row
    /// is then scaled so its absolute gains add up to at most 1, the limit for integer output.
    fn mono_downmix(self) -> Vec<f64> {
        use std::f64::consts::{FRAC_1_SQRT_2, SQRT_2};
        let clev = f64::from(FRAC_1_SQRT_2 as f32);
        let slev = f64::from(FRAC_1_SQRT_2 as f32);
        let has_stereo = self.mask & (FL | FR) != 0;
        let row: Vec<f64> = (0..64)
            .map(|bit| 1u64 << bit)
            .filter(|&ch| self.mask & ch != 0)
            .map(|ch| match ch {
                FC if has_stereo => clev * SQRT_2,
                FC => 1.0,
                FL | FR | FLC | FRC => FRAC_1_SQRT_2,
                BL | BR | SL | SR | BC => slev * FRAC_1_SQRT_2,
                _ => 0.0,
            })
            .collect();
        let sum: f64 = row.iter().map(|g| g.abs()).sum();
        if sum > 1.0 {
            row.iter().map(|g| g / sum).collect()
        } else {
            row
        }
    }
}

/// libswresample's filter bank and step sizes for one input rate.
struct FilterBank<C> {
    kernel: FloatKernel,
    /// Taps per phase (`filter_length`).
    taps: usize,
    /// Stride between phases in `bank` (taps rounded up to a multiple of 8, zero padded).
    stride: usize,
    phase_count: usize,
    /// `phase_count + 1` phases; the extra one is phase 0 shifted by one tap, for interpolation.
    bank: Vec<C>,
    src_incr: i32,
    dst_incr_div: i32,
    dst_incr_mod: i32,
    /// Linear interpolation between phases, used when a step is not a whole number of phases.
    linear: bool,
}

impl<C: Copy + Default> FilterBank<C> {
    /// The `stride` coefficients of one phase (taps followed by zero padding).
    fn phase(&self, phase: usize) -> &[C] {
        &self.bank[phase * self.stride..(phase + 1) * self.stride]
    }
}

/// Where one output's filter window starts, and with which phase.
#[derive(Debug, Clone, Copy)]
struct Step {
    pos: usize,
    phase: usize,
    frac: i32,
}

/// A streaming polyphase resampler to 11025 Hz, one history buffer per channel.
struct Resampler<T: Internal> {
    filter: FilterBank<T::Coef>,
    /// Per-channel signal: the mirrored pre-history followed by every input sample not yet dropped.
    history: Vec<Vec<T>>,
    /// Whether the mirrored pre-history has been built (it needs `taps + 1` input samples).
    started: bool,
    /// The next output's window start in `history`, phase (`index`) and fractional phase.
    position: usize,
    index: i64,
    frac: i32,
    /// Scratch list of the windows computed by one `process` call.
    steps: Vec<Step>,
}

impl<T: Internal> Resampler<T> {
    fn new(in_rate: u32, channels: usize, kernel: FloatKernel) -> Result<Self, String> {
        let out_rate = OUTPUT_RATE;
        let factor = (f64::from(out_rate) * CUTOFF / f64::from(in_rate)).min(1.0);
        let mut taps = ((FILTER_SIZE / factor).ceil() as usize).max(1);
        if taps > 1 {
            taps = (taps + 1) & !1;
        }
        if taps > 1 << 16 {
            return Err(format!("cannot resample from {in_rate} Hz"));
        }
        let mut phase_count = 1i64 << PHASE_SHIFT;
        // exact_rational: use exactly as many phases as the reduced ratio needs, if few enough.
        let (num, _den) = reduce(i64::from(out_rate), i64::from(in_rate));
        if num <= phase_count {
            phase_count = num;
        }
        // av_reduce(out_rate, in_rate * phase_count), then scaled up to keep precision.
        let (mut src_incr, mut dst_incr) =
            reduce(i64::from(out_rate), i64::from(in_rate) * phase_count);
        if src_incr > i64::from(i32::MAX / 2) || dst_incr > i64::from(i32::MAX / 2) {
            return Err(format!("cannot resample from {in_rate} Hz"));
        }
        while dst_incr < 1 << 20 && src_incr < 1 << 20 {
            dst_incr *= 2;
            src_incr *= 2;
        }
        let stride = (taps + 7) & !7;
        let phase_count = phase_count as usize;
        let filter = FilterBank {
            kernel,
            taps,
            stride,
            phase_count,
            bank: build_filter_bank::<T>(factor, taps, stride, phase_count),
            src_incr: src_incr as i32,
            dst_incr_div: (dst_incr / src_incr) as i32,
            dst_incr_mod: (dst_incr % src_incr) as i32,
            linear: dst_incr % src_incr != 0,
        };
        // The first output is centred on input sample 0.
        let index = -(phase_count as i64) * ((taps as i64 - 1) / 2);
        Ok(Self {
            filter,
            history: vec![Vec::new(); channels],
            started: false,
            position: 0,
            index,
            frac: 0,
            steps: Vec::new(),
        })
    }

    /// Appends `frames` samples of every channel, converted to the internal format.
    fn append<S>(&mut self, input: &[&[S]], frames: usize, convert: &impl Fn(&S) -> T) {
        for (hist, plane) in self.history.iter_mut().zip(input) {
            hist.extend(plane[..frames].iter().map(convert));
        }
    }

    /// Produces every output whose filter window lies entirely within the input seen so far.
    fn process(&mut self, out: &mut [Vec<T>]) {
        if !self.started && !self.start() {
            return;
        }
        let filter = &self.filter;
        let available = self.history[0].len();
        self.steps.clear();
        // libswresample adds `dst_incr_div` phases (plus one when `frac` wraps) and carries whole
        // input samples out of the phase; the whole-sample part of the step is precomputed.
        let phase_count = filter.phase_count as i64;
        let whole_step = (i64::from(filter.dst_incr_div) / phase_count) as usize;
        let phase_step = i64::from(filter.dst_incr_div) % phase_count;
        let (mut pos, mut index, mut frac) = (self.position, self.index, self.frac);
        while pos + filter.taps <= available {
            self.steps.push(Step {
                pos,
                phase: index as usize,
                frac,
            });
            frac += filter.dst_incr_mod;
            index += phase_step;
            pos += whole_step;
            if frac >= filter.src_incr {
                frac -= filter.src_incr;
                index += 1;
            }
            while index >= phase_count {
                pos += 1;
                index -= phase_count;
            }
        }
        for (hist, dst) in self.history.iter().zip(out.iter_mut()) {
            T::resample(filter, hist, &self.steps, dst);
        }
        self.position = pos;
        self.index = index;
        self.frac = frac;
        self.drop_consumed();
    }

    /// Builds the mirrored history once `taps + 1` input samples are known (libswresample's
    /// `invert_initial_buffer`); returns whether resampling can start.
    fn start(&mut self) -> bool {
        let taps = self.filter.taps;
        if self.history[0].len() < taps + 1 {
            return false;
        }
        for hist in &mut self.history {
            let mirror: Vec<T> = (1..=taps).rev().map(|n| hist[n]).collect();
            hist.splice(0..0, mirror);
        }
        let mut position = taps;
        while self.index < 0 {
            position -= 1;
            self.index += self.filter.phase_count as i64;
        }
        self.position = position;
        self.started = true;
        true
    }

    /// Forgets input that no future output can reach, so memory stays bounded.
    fn drop_consumed(&mut self) {
        if self.position < 1 << 14 {
            return;
        }
        let drop = self.position;
        for hist in &mut self.history {
            hist.drain(..drop);
        }
        self.position = 0;
    }
}

/// Greatest-common-divisor reduction of `num / den` (exact for the magnitudes used here).
fn reduce(num: i64, den: i64) -> (i64, i64) {
    let (mut a, mut b) = (num.abs(), den.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    let g = a.max(1);
    (num / g, den / g)
}

/// libswresample's `build_filter`: Kaiser-windowed sinc phases, normalised by the sum of phase
/// 0's taps, followed by the extra interpolation phase (phase 0 advanced by one tap).
fn build_filter_bank<T: Internal>(
    factor: f64,
    taps: usize,
    stride: usize,
    phase_count: usize,
) -> Vec<T::Coef> {
    use std::f64::consts::PI;
    let mut bank = vec![T::Coef::default(); stride * (phase_count + 1)];
    let center = (taps as i64 - 1) / 2;
    // Even phase counts are symmetric: only the first half is computed, the rest mirrored.
    let computed = if phase_count % 2 == 1 {
        phase_count
    } else {
        phase_count / 2 + 1
    };
    let sin_sign = if center & 1 == 1 { 1.0 } else { -1.0 };
    let mut tab = vec![0.0f64; taps];
    let mut norm = 0.0f64;
    for ph in 0..computed {
        // When not low-passing (upsampling) sin(x) is taken from a per-phase value whose sign
        // alternates with the tap, exactly as libswresample does.
        let mut s = (PI * ph as f64 / phase_count as f64).sin() * sin_sign;
        for (i, t) in tab.iter_mut().enumerate() {
            let x = PI * ((i as i64 - center) as f64 - ph as f64 / phase_count as f64) * factor;
            let mut y = if x == 0.0 {
                1.0
            } else if factor == 1.0 {
                s / x
            } else {
                x.sin() / x
            };
            let w = 2.0 * x / (factor * taps as f64 * PI);
            y *= bessel_i0(KAISER_BETA * (1.0 - w * w).max(0.0).sqrt());
            *t = y;
            s = -s;
            if ph == 0 {
                norm += y;
            }
        }
        for (i, &t) in tab.iter().enumerate() {
            bank[ph * stride + i] = T::coef(t * T::FILTER_SCALE / norm);
        }
        if phase_count.is_multiple_of(2) && ph > 0 {
            for i in 0..taps {
                bank[(phase_count - ph) * stride + taps - 1 - i] = bank[ph * stride + i];
            }
        }
    }
    // Phase `phase_count` = phase 0 shifted one tap later (used when interpolating the last phase).
    let (head, tail) = bank.split_at_mut(stride * phase_count);
    tail[1..stride].copy_from_slice(&head[..stride - 1]);
    tail[0] = head[stride - 1];
    bank
}

/// Modified Bessel function of the first kind, order zero, by the minimax rational
/// approximations of Blair & Edwards (Chalk River report AECL-4928, 1974), the same
/// approximation libswresample uses, so the filter taps round identically.
fn bessel_i0(x: f64) -> f64 {
    const P1: [f64; 15] = [
        -2.233_558_263_947_437_5e15,
        -5.505_036_967_301_842_8e14,
        -3.294_008_762_740_775e13,
        -8.492_510_124_711_416e11,
        -1.191_274_610_498_523_7e10,
        -1.031_306_670_873_798e8,
        -5.954_562_601_984_79e5,
        -2.412_519_587_604_19e3,
        -7.093_534_744_921_055,
        -1.545_397_779_178_685e-2,
        -2.517_264_467_068_897_5e-5,
        -3.051_722_645_045_107e-8,
        -2.684_344_857_346_848_3e-11,
        -1.598_222_667_565_318_5e-14,
        -5.248_786_662_794_57e-18,
    ];
    const Q1: [f64; 6] = [
        -2.233_558_263_947_437_5e15,
        7.885_869_256_675_1e12,
        -1.220_706_739_780_898e10,
        1.037_708_105_806_216_6e7,
        -4.852_756_017_996_277e3,
        1.0,
    ];
    const P2: [f64; 7] = [
        -2.221_026_223_330_657_3e-4,
        1.306_739_203_810_692_4e-2,
        -4.470_080_572_117_445e-1,
        5.567_451_837_124_076,
        -2.351_794_567_923_948e1,
        3.161_132_281_870_113e1,
        -9.609_002_196_865_618,
    ];
    const Q2: [f64; 8] = [
        -5.519_433_023_100_548e-4,
        3.254_769_759_481_962e-2,
        -1.115_175_918_874_131_3,
        1.398_259_535_389_285_2e1,
        -6.022_800_206_674_334e1,
        8.553_956_325_801_293e1,
        -3.144_669_027_513_549e1,
        1.0,
    ];
    if x == 0.0 {
        return 1.0;
    }
    let x = x.abs();
    if x <= 15.0 {
        let y = x * x;
        horner(&P1, y) / horner(&Q1, y)
    } else {
        let y = 1.0 / x - 1.0 / 15.0;
        let r = horner(&P2, y) / horner(&Q2, y);
        x.exp() / x.sqrt() * r
    }
}

/// Polynomial with coefficients in increasing order, evaluated from the highest one down
/// (separate multiply and add, no fused operations, like the C original).
fn horner(coeffs: &[f64], x: f64) -> f64 {
    let mut iter = coeffs.iter().rev();
    let mut sum = iter.next().copied().unwrap_or(0.0);
    for &c in iter {
        sum *= x;
        sum += c;
    }
    sum
}

/// Which of libswresample's x86 float kernels this CPU would run, so its summation order (and
/// fused multiply-adds) can be reproduced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloatKernel {
    /// `resample_*_float_fma3`: 8 lanes, fused multiply-add.
    Fma8,
    /// `resample_*_float_avx`: 8 lanes, separate multiply and add.
    Avx8,
    /// `resample_*_float_sse`: 4 lanes, separate multiply and add.
    Sse4,
}

impl FloatKernel {
    /// The kernel libswresample picks on this CPU (FMA3 if present, else AVX, else SSE).
    pub fn detect() -> Self {
        static KERNEL: OnceLock<FloatKernel> = OnceLock::new();
        *KERNEL.get_or_init(|| {
            #[cfg(target_arch = "x86_64")]
            {
                if std::is_x86_feature_detected!("avx") && std::is_x86_feature_detected!("fma") {
                    return FloatKernel::Fma8;
                }
                if std::is_x86_feature_detected!("avx") {
                    return FloatKernel::Avx8;
                }
                FloatKernel::Sse4
            }
            #[cfg(not(target_arch = "x86_64"))]
            {
                FloatKernel::Fma8
            }
        })
    }

    /// Lane accumulators of the filter over `src`, zero-padded to whole vectors (the portable
    /// twin of [`resample_f32_fma8`], used for the rarer kernels and linear interpolation).
    fn lanes<const N: usize>(self, src: &[f32], filter: &[f32]) -> [f32; N] {
        let fused = self == FloatKernel::Fma8;
        let mut acc = [0.0f32; N];
        for (c, coefs) in filter.chunks(N).enumerate() {
            for (k, &f) in coefs.iter().enumerate() {
                let x = src.get(c * N + k).copied().unwrap_or(0.0);
                acc[k] = if fused {
                    x.mul_add(f, acc[k])
                } else {
                    acc[k] + x * f
                };
            }
        }
        acc
    }

    /// `resample_common`: dot product, then the SIMD horizontal sum.
    fn dot(self, src: &[f32], filter: &[f32]) -> f32 {
        let quad = match self {
            FloatKernel::Sse4 => self.lanes::<4>(src, filter),
            _ => fold8(self.lanes::<8>(src, filter)),
        };
        hsum4(quad)
    }

    /// `resample_linear`: both phases' sums, interpolated lane by lane, then summed.
    fn dot_linear(self, src: &[f32], f1: &[f32], f2: &[f32], frac: i32, src_incr: i32) -> f32 {
        let (a, b) = match self {
            FloatKernel::Sse4 => (self.lanes::<4>(src, f1), self.lanes::<4>(src, f2)),
            _ => (
                fold8(self.lanes::<8>(src, f1)),
                fold8(self.lanes::<8>(src, f2)),
            ),
        };
        let weight = frac as f32 * (1.0f32 / src_incr as f32);
        let mut v = [0.0f32; 4];
        for k in 0..4 {
            let d = b[k] - a[k];
            v[k] = if self == FloatKernel::Fma8 {
                d.mul_add(weight, a[k])
            } else {
                a[k] + d * weight
            };
        }
        hsum4(v)
    }
}

/// 8 lanes → 4: high half added to the low half (`vextractf128` + `addps`).
fn fold8(a: [f32; 8]) -> [f32; 4] {
    [a[0] + a[4], a[1] + a[5], a[2] + a[6], a[3] + a[7]]
}

/// 4 lanes → 1 as `movhlps` + `addps` + `shufps` + `addss` do: (a0 + a2) + (a1 + a3).
fn hsum4(a: [f32; 4]) -> f32 {
    (a[0] + a[2]) + (a[1] + a[3])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_counts_follow_exact_rational() {
        let f = Resampler::<f32>::new(44100, 1, FloatKernel::detect())
            .expect("44.1k")
            .filter;
        assert_eq!((f.phase_count, f.taps, f.linear), (1, 80, false));
        let f = Resampler::<f32>::new(48000, 1, FloatKernel::detect())
            .expect("48k")
            .filter;
        assert_eq!((f.phase_count, f.taps, f.linear), (147, 88, false));
        let f = Resampler::<i16>::new(32000, 1, FloatKernel::detect())
            .expect("32k")
            .filter;
        assert_eq!((f.phase_count, f.linear), (256, true));
    }

    #[test]
    fn filter_phase_zero_sums_to_unity() {
        let f = Resampler::<f32>::new(44100, 1, FloatKernel::detect())
            .expect("44.1k")
            .filter;
        let sum: f64 = f.bank[..f.taps].iter().map(|&c| f64::from(c)).sum();
        assert!((sum - 1.0).abs() < 1e-5, "{sum}");
    }

    #[test]
    fn bessel_matches_series() {
        for &x in &[0.5f64, 3.0, 9.0] {
            let mut sum = 1.0;
            let mut term = 1.0;
            for k in 1..60 {
                term *= (x / 2.0 / k as f64).powi(2);
                sum += term;
            }
            assert!((bessel_i0(x) - sum).abs() / sum < 1e-13);
        }
    }

    #[test]
    fn float_output_rounds_half_to_even_and_saturates() {
        assert_eq!(float_to_s16(0.5 / 32768.0), 0);
        assert_eq!(float_to_s16(1.5 / 32768.0), 2);
        assert_eq!(float_to_s16(2.0), 32767);
        assert_eq!(float_to_s16(-2.0), -32768);
    }
}
