//! Transcode decisions (OpenSubsonic `transcoding`): given what a client can play
//! ([`ClientInfo`], its direct-play, transcoding and codec profiles) and what a track or an
//! episode is ([`StreamDetails`]), whether the original can be sent as it is, and if not,
//! the first of the client's transcoding profiles musiclib can produce ([`Target`]).
//!
//! musiclib encodes live with ffmpeg to Opus (in Ogg), MP3 or AAC (in ADTS), over HTTP, in
//! mono or stereo; HLS profiles are passed over (the HLS rendition has its own URL,
//! `hls.m3u8`). Bit rates in the payload and the answer are in bit/s, as the extension
//! says. The decision is a pure function of its two inputs; the parameters it gives for the
//! stream ([`StreamParams`]) are plain text checked again when they come back, so a client
//! cannot ask through them for anything this module would not decide.

use serde::Deserialize;

use crate::{Error, Result};

/// Most profiles of each kind a client may send, and most limitations per codec profile.
pub const MAX_PROFILES: usize = 64;
/// Longest name, codec, container or value in a client's payload.
pub const MAX_NAME_CHARS: usize = 64;

/// What a client can play (`ClientInfo`).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClientInfo {
    /// The device's name.
    #[serde(default)]
    pub name: String,
    /// Its platform.
    #[serde(default)]
    pub platform: String,
    /// Highest bit rate it plays, in bit/s (0 or none: no limit).
    #[serde(default)]
    pub max_audio_bitrate: Option<i64>,
    /// Highest bit rate of a transcoded stream, in bit/s (0 or none: no limit).
    #[serde(default)]
    pub max_transcoding_audio_bitrate: Option<i64>,
    /// What it plays as it is.
    #[serde(default)]
    pub direct_play_profiles: Vec<DirectPlayProfile>,
    /// What it can be sent instead, best first.
    #[serde(default)]
    pub transcoding_profiles: Vec<TranscodingProfile>,
    /// Limits per codec.
    #[serde(default)]
    pub codec_profiles: Vec<CodecProfile>,
}

/// Containers and codecs a client plays as they are (an empty list: any).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DirectPlayProfile {
    /// Containers (`mp3`, `flac`, `mp4`, …).
    #[serde(default)]
    pub containers: Vec<String>,
    /// Codecs.
    #[serde(default)]
    pub audio_codecs: Vec<String>,
    /// `http`, `hls`.
    #[serde(default)]
    pub protocols: Vec<String>,
    /// Most channels.
    #[serde(default)]
    pub max_audio_channels: Option<i64>,
}

/// One format a client can be sent instead.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TranscodingProfile {
    /// Container.
    pub container: String,
    /// Codec.
    pub audio_codec: String,
    /// `http` or `hls`.
    pub protocol: String,
    /// Most channels.
    #[serde(default)]
    pub max_audio_channels: Option<i64>,
}

/// Limits of one codec (`type` is `AudioCodec`).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CodecProfile {
    /// `AudioCodec`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The codec.
    pub name: String,
    /// Its limits.
    #[serde(default)]
    pub limitations: Vec<Limitation>,
}

/// One limit of a codec.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Limitation {
    /// `audioChannels`, `audioBitrate`, `audioProfile`, `audioSamplerate` or `audioBitdepth`.
    pub name: String,
    /// `Equals`, `NotEquals`, `LessThanEqual` or `GreaterThanEqual`.
    pub comparison: String,
    /// The values (the first alone for the orderings).
    #[serde(default)]
    pub values: Vec<String>,
    /// Whether it must hold.
    #[serde(default)]
    pub required: bool,
}

const LIMITATION_NAMES: [&str; 5] = [
    "audioChannels",
    "audioBitrate",
    "audioProfile",
    "audioSamplerate",
    "audioBitdepth",
];
const COMPARISONS: [&str; 4] = ["Equals", "NotEquals", "LessThanEqual", "GreaterThanEqual"];

impl ClientInfo {
    /// Refuses a payload out of bounds or with names the extension does not define, naming
    /// the field.
    pub fn check(&self) -> Result<()> {
        let name = |field: &str, value: &str| {
            if value.chars().count() > MAX_NAME_CHARS {
                Err(Error::invalid(
                    field,
                    format!("must be at most {MAX_NAME_CHARS} characters"),
                ))
            } else {
                Ok(())
            }
        };
        name("name", &self.name)?;
        name("platform", &self.platform)?;
        for (field, count) in [
            ("directPlayProfiles", self.direct_play_profiles.len()),
            ("transcodingProfiles", self.transcoding_profiles.len()),
            ("codecProfiles", self.codec_profiles.len()),
        ] {
            if count > MAX_PROFILES {
                return Err(Error::invalid(
                    field,
                    format!("must hold at most {MAX_PROFILES} profiles"),
                ));
            }
        }
        let protocol = |field: &str, value: &str| match value {
            "http" | "hls" => Ok(()),
            _ => Err(Error::invalid(field, "must be http or hls")),
        };
        for profile in &self.direct_play_profiles {
            let lists = [
                &profile.containers,
                &profile.audio_codecs,
                &profile.protocols,
            ];
            if lists.iter().any(|list| list.len() > MAX_PROFILES) {
                return Err(Error::invalid(
                    "directPlayProfiles",
                    format!("a profile lists at most {MAX_PROFILES} values each"),
                ));
            }
            for value in profile.containers.iter().chain(&profile.audio_codecs) {
                name("directPlayProfiles", value)?;
            }
            for value in &profile.protocols {
                protocol("directPlayProfiles.protocols", value)?;
            }
        }
        for profile in &self.transcoding_profiles {
            name("transcodingProfiles.container", &profile.container)?;
            name("transcodingProfiles.audioCodec", &profile.audio_codec)?;
            protocol("transcodingProfiles.protocol", &profile.protocol)?;
        }
        for profile in &self.codec_profiles {
            if profile.kind != "AudioCodec" {
                return Err(Error::invalid("codecProfiles.type", "must be AudioCodec"));
            }
            name("codecProfiles.name", &profile.name)?;
            if profile.limitations.len() > MAX_PROFILES {
                return Err(Error::invalid(
                    "codecProfiles.limitations",
                    format!("must hold at most {MAX_PROFILES}"),
                ));
            }
            for limitation in &profile.limitations {
                if !LIMITATION_NAMES.contains(&limitation.name.as_str()) {
                    return Err(Error::invalid(
                        "codecProfiles.limitations.name",
                        format!("must be one of {}", LIMITATION_NAMES.join(", ")),
                    ));
                }
                if !COMPARISONS.contains(&limitation.comparison.as_str()) {
                    return Err(Error::invalid(
                        "codecProfiles.limitations.comparison",
                        format!("must be one of {}", COMPARISONS.join(", ")),
                    ));
                }
                if limitation.values.is_empty() || limitation.values.len() > MAX_PROFILES {
                    return Err(Error::invalid(
                        "codecProfiles.limitations.values",
                        format!("must hold 1 to {MAX_PROFILES} values"),
                    ));
                }
                for value in &limitation.values {
                    name("codecProfiles.limitations.values", value)?;
                }
            }
        }
        Ok(())
    }

    /// `max_audio_bitrate` when it limits.
    fn max_bitrate(&self) -> Option<i64> {
        self.max_audio_bitrate.filter(|limit| *limit > 0)
    }

    /// The limitations the client puts on `codec`.
    fn limitations_of<'a>(&'a self, codec: &'a str) -> impl Iterator<Item = &'a Limitation> {
        self.codec_profiles
            .iter()
            .filter(move |profile| profile.name.eq_ignore_ascii_case(codec))
            .flat_map(|profile| &profile.limitations)
    }
}

/// What a stream is (`StreamDetails`): the source, or what it is transcoded to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamDetails {
    /// `http`.
    pub protocol: &'static str,
    /// Container (`mp3`, `flac`, `ogg`, `mp4`, `wav`, `aac`).
    pub container: String,
    /// Codec (`mp3`, `flac`, `vorbis`, `opus`, `aac`, `pcm`).
    pub codec: String,
    /// Channels, when known.
    pub channels: Option<i64>,
    /// Bit rate in bit/s, when known.
    pub bitrate: Option<i64>,
    /// Codec profile (`LC` for the AAC musiclib encodes).
    pub profile: Option<&'static str>,
    /// Sample rate in Hz, when known.
    pub sample_rate: Option<i64>,
    /// Bits per sample of a lossless source, when known.
    pub bit_depth: Option<i64>,
}

impl StreamDetails {
    /// An original's details from what the library knows of it: its format (`mp3`, `m4a`,
    /// …, else its MIME type), bit rate (kbit/s), sample rate and channels.
    pub fn of_original(
        format: Option<&str>,
        mime_type: &str,
        bitrate_kbps: Option<i64>,
        sample_rate: Option<i64>,
        channels: Option<i64>,
    ) -> StreamDetails {
        let format = format.map(str::to_ascii_lowercase);
        let mime = mime_type.to_ascii_lowercase();
        let (container, codec) = match (format.as_deref(), mime.as_str()) {
            (Some("mp3"), _) | (None, "audio/mpeg" | "audio/mp3") => ("mp3", "mp3"),
            (Some("flac"), _) | (None, "audio/flac" | "audio/x-flac") => ("flac", "flac"),
            (Some("opus"), _) | (None, "audio/opus") => ("ogg", "opus"),
            (Some("ogg" | "oga"), _) | (None, "audio/ogg" | "audio/vorbis") => ("ogg", "vorbis"),
            (Some("m4a" | "mp4" | "m4b"), _)
            | (None, "audio/mp4" | "audio/x-m4a" | "audio/m4a") => ("mp4", "aac"),
            (Some("aac"), _) | (None, "audio/aac" | "audio/aacp") => ("aac", "aac"),
            (Some("wav"), _) | (None, "audio/wav" | "audio/x-wav" | "audio/wave") => ("wav", "pcm"),
            (Some(other), _) => (other, other),
            (None, other) => {
                let subtype = other.rsplit('/').next().unwrap_or(other);
                (subtype, subtype)
            }
        };
        StreamDetails {
            protocol: "http",
            container: container.to_string(),
            codec: codec.to_string(),
            channels,
            bitrate: bitrate_kbps.map(|kbps| kbps * 1000),
            profile: None,
            sample_rate,
            bit_depth: None,
        }
    }

    fn lossless(&self) -> bool {
        matches!(self.codec.as_str(), "flac" | "pcm" | "alac" | "wav")
    }
}

/// A codec musiclib encodes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// Opus in Ogg.
    Opus,
    /// MP3.
    Mp3,
    /// AAC-LC in ADTS.
    Aac,
}

impl Codec {
    fn parse(name: &str) -> Option<Codec> {
        match name.to_ascii_lowercase().as_str() {
            "opus" => Some(Codec::Opus),
            "mp3" => Some(Codec::Mp3),
            "aac" => Some(Codec::Aac),
            _ => None,
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Codec::Opus => "opus",
            Codec::Mp3 => "mp3",
            Codec::Aac => "aac",
        }
    }

    /// The container its stream comes in.
    pub fn container(self) -> &'static str {
        match self {
            Codec::Opus => "ogg",
            Codec::Mp3 => "mp3",
            Codec::Aac => "aac",
        }
    }

    /// The stream's MIME type.
    pub fn mime_type(self) -> &'static str {
        match self {
            Codec::Opus => "audio/ogg",
            Codec::Mp3 => "audio/mpeg",
            Codec::Aac => "audio/aac",
        }
    }

    /// Whether a profile's container names this codec's (`opus` and `oga` are Ogg; `adts`
    /// is AAC's).
    fn fits(self, container: &str) -> bool {
        let container = container.to_ascii_lowercase();
        match self {
            Codec::Opus => matches!(container.as_str(), "ogg" | "oga" | "opus"),
            Codec::Mp3 => container == "mp3",
            Codec::Aac => matches!(container.as_str(), "aac" | "adts"),
        }
    }

    /// The bit rates (kbit/s) it is encoded at: lowest, highest, and the default.
    fn kbps(self) -> (u32, u32, u32) {
        match self {
            Codec::Opus => (16, 256, 128),
            Codec::Mp3 => (32, 320, 192),
            Codec::Aac => (32, 320, 192),
        }
    }

    /// The sample rates it is encoded at, highest first.
    fn sample_rates(self) -> &'static [u32] {
        match self {
            Codec::Opus => &[48_000],
            Codec::Mp3 | Codec::Aac => &[48_000, 44_100, 32_000, 24_000, 22_050, 16_000],
        }
    }
}

/// What a live encode produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// Codec.
    pub codec: Codec,
    /// Bit rate in kbit/s.
    pub kbps: u32,
    /// Channels: 1 or 2.
    pub channels: u32,
    /// Sample rate in Hz.
    pub sample_rate: u32,
}

impl Target {
    /// What the encode is, as a stream's details.
    pub fn details(&self) -> StreamDetails {
        StreamDetails {
            protocol: "http",
            container: self.codec.container().into(),
            codec: self.codec.as_str().into(),
            channels: Some(i64::from(self.channels)),
            bitrate: Some(i64::from(self.kbps) * 1000),
            profile: (self.codec == Codec::Aac).then_some("LC"),
            sample_rate: Some(i64::from(self.sample_rate)),
            bit_depth: None,
        }
    }
}

/// What `getTranscodeStream` is asked to send: the original, or an encode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamParams {
    /// The original, as it is.
    Direct,
    /// A live encode.
    Encode(Target),
}

impl StreamParams {
    /// The text given to the client (`transcodeParams`): `direct`, or
    /// `codec-kbps-channels-rate` (`opus-128-2-48000`).
    pub fn to_text(self) -> String {
        match self {
            StreamParams::Direct => "direct".into(),
            StreamParams::Encode(target) => format!(
                "{}-{}-{}-{}",
                target.codec.as_str(),
                target.kbps,
                target.channels,
                target.sample_rate
            ),
        }
    }

    /// Reads [`StreamParams::to_text`] back, refusing anything a decision cannot give.
    pub fn parse(text: &str) -> Result<StreamParams> {
        let invalid = || Error::invalid("transcodeParams", "is not what getTranscodeDecision gave");
        if text == "direct" {
            return Ok(StreamParams::Direct);
        }
        let mut parts = text.split('-');
        let codec = parts.next().and_then(Codec::parse).ok_or_else(invalid)?;
        let mut number = || -> Result<u32> {
            parts
                .next()
                .and_then(|part| part.parse::<u32>().ok())
                .ok_or_else(invalid)
        };
        let (kbps, channels, sample_rate) = (number()?, number()?, number()?);
        let (lowest, highest, _) = codec.kbps();
        if parts.next().is_some()
            || !(lowest..=highest).contains(&kbps)
            || !(1..=2).contains(&channels)
            || !codec.sample_rates().contains(&sample_rate)
        {
            return Err(invalid());
        }
        Ok(StreamParams::Encode(Target {
            codec,
            kbps,
            channels,
            sample_rate,
        }))
    }
}

/// The decision (`transcodeDecision`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The original plays as it is.
    pub can_direct_play: bool,
    /// A transcoding profile can be produced (only looked for when the original cannot
    /// play).
    pub can_transcode: bool,
    /// Why the original cannot play: one per direct-play profile (or one when there is
    /// none, or the bit rate is over the client's limit).
    pub transcode_reasons: Vec<String>,
    /// Why nothing can be sent.
    pub error_reason: Option<String>,
    /// What `getTranscodeStream` takes.
    pub params: Option<StreamParams>,
    /// The original.
    pub source: StreamDetails,
    /// What it is transcoded to.
    pub transcode: Option<StreamDetails>,
}

/// Decides for `source` and `client`. `can_encode`: whether a live encode can be made here
/// (ffmpeg present).
pub fn decide(source: &StreamDetails, client: &ClientInfo, can_encode: bool) -> Decision {
    let mut decision = Decision {
        can_direct_play: false,
        can_transcode: false,
        transcode_reasons: Vec::new(),
        error_reason: None,
        params: None,
        source: source.clone(),
        transcode: None,
    };
    let over_limit = matches!(
        (client.max_bitrate(), source.bitrate),
        (Some(limit), Some(bitrate)) if bitrate > limit
    );
    if over_limit {
        decision
            .transcode_reasons
            .push("AudioBitrateNotSupported".into());
    } else if client.direct_play_profiles.is_empty() {
        decision
            .transcode_reasons
            .push("DirectPlayNotSupported".into());
    } else {
        for profile in &client.direct_play_profiles {
            match direct_play_refusal(source, profile, client) {
                None => {
                    decision.can_direct_play = true;
                    decision.transcode_reasons.clear();
                    decision.params = Some(StreamParams::Direct);
                    return decision;
                }
                Some(reason) => decision.transcode_reasons.push(reason.into()),
            }
        }
    }
    if !can_encode {
        decision.error_reason = Some("the server has no transcoder (ffmpeg)".into());
        return decision;
    }
    for profile in &client.transcoding_profiles {
        if let Some(target) = target_for(source, profile, client) {
            decision.can_transcode = true;
            decision.params = Some(StreamParams::Encode(target));
            decision.transcode = Some(target.details());
            return decision;
        }
    }
    decision.error_reason = Some(
        "no compatible playback profile: musiclib sends the original or encodes Opus, MP3 or \
         AAC over http"
            .into(),
    );
    decision
}

/// Why `profile` cannot play `source` as it is (`None`: it can).
fn direct_play_refusal(
    source: &StreamDetails,
    profile: &DirectPlayProfile,
    client: &ClientInfo,
) -> Option<&'static str> {
    let container_fits = profile.containers.is_empty()
        || profile
            .containers
            .iter()
            .any(|container| same_container(container, &source.container));
    if !container_fits {
        return Some("ContainerNotSupported");
    }
    let codec_fits = profile.audio_codecs.is_empty()
        || profile
            .audio_codecs
            .iter()
            .any(|codec| codec.eq_ignore_ascii_case(&source.codec));
    if !codec_fits {
        return Some("AudioCodecNotSupported");
    }
    if !profile.protocols.is_empty() && !profile.protocols.iter().any(|p| p == "http") {
        return Some("ProtocolNotSupported");
    }
    if let (Some(max), Some(channels)) = (
        profile.max_audio_channels.filter(|max| *max > 0),
        source.channels,
    ) {
        if channels > max {
            return Some("AudioChannelsNotSupported");
        }
    }
    for limitation in client.limitations_of(&source.codec) {
        if limitation.required && holds(limitation, source) == Some(false) {
            return Some(refusal_of(&limitation.name));
        }
    }
    None
}

fn refusal_of(limitation: &str) -> &'static str {
    match limitation {
        "audioChannels" => "AudioChannelsNotSupported",
        "audioBitrate" => "AudioBitrateNotSupported",
        "audioProfile" => "AudioProfileNotSupported",
        "audioSamplerate" => "AudioSampleRateNotSupported",
        _ => "AudioBitDepthNotSupported",
    }
}

/// `mp4`, `m4a` and `m4b` are one container; so are `ogg`, `oga` and `opus`.
fn same_container(asked: &str, container: &str) -> bool {
    let family = |name: &str| match name.to_ascii_lowercase().as_str() {
        "mp4" | "m4a" | "m4b" => "mp4".to_string(),
        "ogg" | "oga" | "opus" => "ogg".to_string(),
        "aac" | "adts" => "aac".to_string(),
        "wav" | "wave" => "wav".to_string(),
        other => other.to_string(),
    };
    family(asked) == family(container)
}

/// Whether `limitation` holds for `stream`; `None` when the value is unknown (or the
/// limitation does not apply: a bit depth of lossy audio).
fn holds(limitation: &Limitation, stream: &StreamDetails) -> Option<bool> {
    if limitation.name == "audioProfile" {
        let profile = stream.profile.unwrap_or_default();
        let listed = limitation
            .values
            .iter()
            .any(|value| value.eq_ignore_ascii_case(profile));
        return match limitation.comparison.as_str() {
            "Equals" => Some(listed),
            "NotEquals" => Some(!listed),
            _ => None,
        };
    }
    let value = match limitation.name.as_str() {
        "audioChannels" => stream.channels,
        "audioBitrate" => stream.bitrate,
        "audioSamplerate" => stream.sample_rate,
        _ => stream.bit_depth,
    }?;
    let numbers: Vec<i64> = limitation
        .values
        .iter()
        .filter_map(|value| value.trim().parse().ok())
        .collect();
    let first = *numbers.first()?;
    Some(match limitation.comparison.as_str() {
        "Equals" => numbers.contains(&value),
        "NotEquals" => !numbers.contains(&value),
        "LessThanEqual" => value <= first,
        _ => value >= first,
    })
}

/// What `profile` asks of `source`, when musiclib can produce it within the client's
/// limits.
fn target_for(
    source: &StreamDetails,
    profile: &TranscodingProfile,
    client: &ClientInfo,
) -> Option<Target> {
    if profile.protocol != "http" {
        return None;
    }
    let codec = Codec::parse(&profile.audio_codec)?;
    if !codec.fits(&profile.container) {
        return None;
    }
    let (lowest, highest, default) = codec.kbps();
    // The client's transcoding limit, else its limit, else the codec's default; never more
    // than a lossy source has (more bits cannot bring back what it lost).
    let mut kbps = [
        client.max_transcoding_audio_bitrate,
        client.max_audio_bitrate,
    ]
    .into_iter()
    .flatten()
    .find(|limit| *limit > 0)
    .map_or(i64::from(default), |bps| bps / 1000);
    if let Some(bitrate) = source.bitrate.filter(|_| !source.lossless()) {
        kbps = kbps.min(bitrate / 1000);
    }
    if let Some(limit) = client.max_bitrate() {
        kbps = kbps.min(limit / 1000);
    }
    let mut channels = source.channels.unwrap_or(2).clamp(1, 2);
    if let Some(max) = profile.max_audio_channels.filter(|max| *max > 0) {
        channels = channels.min(max);
    }
    let mut sample_rate = codec
        .sample_rates()
        .iter()
        .copied()
        .find(|rate| {
            source
                .sample_rate
                .is_none_or(|source| i64::from(*rate) <= source)
        })
        .unwrap_or(codec.sample_rates()[codec.sample_rates().len() - 1]);
    // The codec's limits: bounds lower what is chosen; a required one that cannot hold
    // rules the profile out.
    for limitation in client.limitations_of(codec.as_str()) {
        let first = limitation
            .values
            .first()
            .and_then(|value| value.trim().parse::<i64>().ok());
        match (
            limitation.name.as_str(),
            limitation.comparison.as_str(),
            first,
        ) {
            ("audioBitrate", "LessThanEqual", Some(max)) => kbps = kbps.min(max / 1000),
            ("audioChannels", "LessThanEqual", Some(max)) => channels = channels.min(max),
            ("audioSamplerate", "LessThanEqual", Some(max)) => {
                if let Some(rate) = codec
                    .sample_rates()
                    .iter()
                    .copied()
                    .find(|rate| i64::from(*rate) <= max.min(i64::from(sample_rate)))
                {
                    sample_rate = rate;
                }
            }
            ("audioSamplerate", "Equals", _) => {
                if let Some(rate) = codec.sample_rates().iter().copied().find(|rate| {
                    limitation
                        .values
                        .iter()
                        .any(|value| value.trim().parse::<u32>().ok() == Some(*rate))
                }) {
                    sample_rate = rate;
                }
            }
            ("audioChannels", "Equals", _) => {
                if let Some(count) = [channels, 2, 1].into_iter().find(|count| {
                    limitation
                        .values
                        .iter()
                        .any(|value| value.trim().parse::<i64>().ok() == Some(*count))
                }) {
                    channels = count;
                }
            }
            _ => {}
        }
    }
    if kbps < i64::from(lowest) {
        return None;
    }
    let target = Target {
        codec,
        kbps: kbps.min(i64::from(highest)) as u32,
        channels: channels.clamp(1, 2) as u32,
        sample_rate,
    };
    let produced = target.details();
    let refused = client
        .limitations_of(codec.as_str())
        .any(|limitation| limitation.required && holds(limitation, &produced) == Some(false));
    (!refused).then_some(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(json: serde_json::Value) -> ClientInfo {
        let client: ClientInfo = serde_json::from_value(json).unwrap();
        client.check().unwrap();
        client
    }

    fn flac() -> StreamDetails {
        StreamDetails::of_original(Some("flac"), "audio/flac", Some(900), Some(96_000), Some(2))
    }

    fn mp3() -> StreamDetails {
        StreamDetails::of_original(Some("mp3"), "audio/mpeg", Some(128), Some(44_100), Some(2))
    }

    /// The example of the extension's page.
    fn sonos() -> ClientInfo {
        client(serde_json::json!({
            "name": "Play:1", "platform": "Sonos",
            "maxAudioBitrate": 512000, "maxTranscodingAudioBitrate": 256000,
            "directPlayProfiles": [
                {"containers": ["mp3"], "audioCodecs": ["mp3"], "protocols": ["http"], "maxAudioChannels": 2},
                {"containers": ["mp4"], "audioCodecs": ["flac", "aac", "alac"], "protocols": [], "maxAudioChannels": 2}
            ],
            "transcodingProfiles": [
                {"container": "flac", "audioCodec": "flac", "protocol": "hls", "maxAudioChannels": 2},
                {"container": "mp3", "audioCodec": "mp3", "protocol": "http", "maxAudioChannels": 2}
            ],
            "codecProfiles": [
                {"type": "AudioCodec", "name": "mp3", "limitations": [
                    {"name": "audioBitrate", "comparison": "LessThanEqual", "values": ["320000"], "required": true}
                ]}
            ]
        }))
    }

    #[test]
    fn an_original_the_client_plays_goes_as_it_is() {
        let decision = decide(&mp3(), &sonos(), true);
        assert!(decision.can_direct_play && !decision.can_transcode);
        assert_eq!(decision.params, Some(StreamParams::Direct));
        assert!(decision.transcode_reasons.is_empty());
        assert_eq!(decision.source.bitrate, Some(128_000));
    }

    #[test]
    fn a_flac_over_the_limit_becomes_the_first_profile_musiclib_can_make() {
        let decision = decide(&flac(), &sonos(), true);
        assert!(!decision.can_direct_play && decision.can_transcode);
        assert_eq!(decision.transcode_reasons, ["AudioBitrateNotSupported"]);
        // The HLS profile is passed over; MP3 at the transcoding limit, 48 kHz at most.
        let target = Target {
            codec: Codec::Mp3,
            kbps: 256,
            channels: 2,
            sample_rate: 48_000,
        };
        assert_eq!(decision.params, Some(StreamParams::Encode(target)));
        let transcode = decision.transcode.unwrap();
        assert_eq!(
            (transcode.container.as_str(), transcode.bitrate),
            ("mp3", Some(256_000))
        );
    }

    #[test]
    fn reasons_name_each_profile_and_limits_bring_the_target_down() {
        let client = client(serde_json::json!({
            "name": "phone", "platform": "Android",
            "directPlayProfiles": [
                {"containers": ["ogg"], "audioCodecs": ["opus"], "protocols": ["http"]},
                {"containers": ["flac"], "audioCodecs": ["flac"], "protocols": ["http"], "maxAudioChannels": 1}
            ],
            "transcodingProfiles": [
                {"container": "ogg", "audioCodec": "vorbis", "protocol": "http"},
                {"container": "opus", "audioCodec": "opus", "protocol": "http", "maxAudioChannels": 1}
            ],
            "codecProfiles": [
                {"type": "AudioCodec", "name": "opus", "limitations": [
                    {"name": "audioBitrate", "comparison": "LessThanEqual", "values": ["96000"], "required": true}
                ]}
            ]
        }));
        let decision = decide(&flac(), &client, true);
        assert_eq!(
            decision.transcode_reasons,
            ["ContainerNotSupported", "AudioChannelsNotSupported"]
        );
        assert_eq!(
            decision.params.map(StreamParams::to_text).as_deref(),
            Some("opus-96-1-48000")
        );
        // A lossy source is never encoded above its own bit rate.
        let low =
            StreamDetails::of_original(Some("mp3"), "audio/mpeg", Some(64), Some(22_050), Some(1));
        let decision = decide(&low, &client, true);
        assert_eq!(
            decision.params.map(StreamParams::to_text).as_deref(),
            Some("opus-64-1-48000")
        );
    }

    #[test]
    fn nothing_to_send_says_why() {
        let hls_only = client(serde_json::json!({
            "name": "tv", "platform": "tvOS",
            "directPlayProfiles": [],
            "transcodingProfiles": [{"container": "mp4", "audioCodec": "aac", "protocol": "hls"}]
        }));
        let decision = decide(&flac(), &hls_only, true);
        assert!(!decision.can_direct_play && !decision.can_transcode);
        assert_eq!(decision.transcode_reasons, ["DirectPlayNotSupported"]);
        assert!(decision.error_reason.unwrap().contains("Opus, MP3 or AAC"));
        let decision = decide(&flac(), &sonos(), false);
        assert!(decision.error_reason.unwrap().contains("ffmpeg"));
    }

    #[test]
    fn params_come_back_only_as_given() {
        for text in [
            "direct",
            "opus-128-2-48000",
            "mp3-320-1-44100",
            "aac-32-2-16000",
        ] {
            assert_eq!(StreamParams::parse(text).unwrap().to_text(), text);
        }
        for text in [
            "",
            "flac-900-2-96000",
            "opus-128-2-44100",
            "mp3-999-2-44100",
            "mp3-128-6-44100",
            "mp3-128-2-44100-x",
            "mp3--1-2-44100",
            "opus-128-2",
        ] {
            assert!(StreamParams::parse(text).is_err(), "{text}");
        }
    }

    #[test]
    fn payloads_out_of_bounds_are_refused_by_name() {
        let refused = |json: serde_json::Value| {
            serde_json::from_value::<ClientInfo>(json)
                .unwrap()
                .check()
                .unwrap_err()
                .to_string()
        };
        assert!(refused(serde_json::json!({"transcodingProfiles": [
            {"container": "mp3", "audioCodec": "mp3", "protocol": "rtsp"}
        ]}))
        .contains("protocol"));
        assert!(refused(serde_json::json!({"codecProfiles": [
            {"type": "VideoCodec", "name": "h264"}
        ]}))
        .contains("type"));
        assert!(refused(serde_json::json!({"codecProfiles": [
            {"type": "AudioCodec", "name": "mp3", "limitations": [
                {"name": "loudness", "comparison": "Equals", "values": ["1"], "required": true}
            ]}
        ]}))
        .contains("name"));
        let many: Vec<_> = (0..=MAX_PROFILES)
            .map(|_| serde_json::json!({"containers": [], "audioCodecs": [], "protocols": []}))
            .collect();
        assert!(refused(serde_json::json!({ "directPlayProfiles": many }))
            .contains("directPlayProfiles"));
        assert!(
            refused(serde_json::json!({ "name": "x".repeat(MAX_NAME_CHARS + 1) })).contains("name")
        );
    }
}
