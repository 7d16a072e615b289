//! ffmpeg, the transcoder: checked once per process, run with a CPU slot for cached
//! renditions, and piped for live transcodes. Renditions and HLS need it; originals stream
//! without it, and its absence is `503 transcoder_unavailable`, never a crash.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use crate::cpu::CpuSlots;
use crate::{Error, Result, UserId};

/// What a listener refused a live encode is told to wait.
const LIVE_ENCODE_RETRY: Duration = Duration::from_secs(10);

/// The bound on live encodes (ffmpeg run for a listener: transcoded streams, HLS encodes):
/// `MAX_LIVE_ENCODES` in the process, `MAX_LIVE_ENCODES_PER_USER` per user. A request past
/// either is refused at once ([`Error::Busy`]: 503 with `Retry-After`), never queued: a
/// player would rather try again or fall back to the original.
#[derive(Debug)]
pub(crate) struct LiveEncodeBudget {
    max: usize,
    per_user: usize,
    running: Mutex<(usize, HashMap<UserId, usize>)>,
}

/// One running live encode's place in the budget, given back when dropped (with the stream
/// or the encode that holds it).
#[derive(Debug)]
pub(crate) struct LiveEncodeSlot {
    budget: Arc<LiveEncodeBudget>,
    user: UserId,
}

impl LiveEncodeBudget {
    pub(crate) fn new(max: usize, per_user: usize) -> Arc<LiveEncodeBudget> {
        Arc::new(LiveEncodeBudget {
            max: max.max(1),
            per_user: per_user.max(1),
            running: Mutex::new((0, HashMap::new())),
        })
    }

    /// A place for one more live encode of `user`, if the budget has one.
    pub(crate) fn take(self: &Arc<Self>, user: &UserId) -> Result<LiveEncodeSlot> {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        let (total, users) = &mut *running;
        let mine = users.get(user).copied().unwrap_or(0);
        if *total >= self.max || mine >= self.per_user {
            return Err(Error::Busy {
                what: "live encodes",
                retry_after: LIVE_ENCODE_RETRY,
            });
        }
        *total += 1;
        users.insert(user.clone(), mine + 1);
        Ok(LiveEncodeSlot {
            budget: self.clone(),
            user: user.clone(),
        })
    }

    /// Live encodes running now.
    pub(crate) fn running(&self) -> usize {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .0
    }
}

impl Drop for LiveEncodeSlot {
    fn drop(&mut self) {
        let mut running = self
            .budget
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let (total, users) = &mut *running;
        *total = total.saturating_sub(1);
        if let Some(count) = users.get_mut(&self.user) {
            *count -= 1;
            if *count == 0 {
                users.remove(&self.user);
            }
        }
    }
}

/// The ffmpeg program and what is known about it.
#[derive(Clone, Debug)]
pub(crate) struct Transcoder {
    program: PathBuf,
    available: Arc<OnceLock<bool>>,
    cpu: CpuSlots,
}

impl Transcoder {
    pub(crate) fn new(program: PathBuf, cpu: CpuSlots) -> Transcoder {
        Transcoder {
            program,
            available: Arc::new(OnceLock::new()),
            cpu,
        }
    }

    /// Whether ffmpeg runs (blocking: the first call runs `ffmpeg -version`).
    pub(crate) fn available(&self) -> bool {
        *self.available.get_or_init(|| {
            std::process::Command::new(&self.program)
                .arg("-version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|status| status.success())
        })
    }

    /// [`Transcoder::available`] without blocking a runtime thread.
    pub(crate) async fn ready(&self) -> bool {
        if let Some(available) = self.available.get() {
            return *available;
        }
        let transcoder = self.clone();
        tokio::task::spawn_blocking(move || transcoder.available())
            .await
            .unwrap_or(false)
    }

    /// A command running ffmpeg quietly (no stdin, errors only), killed when dropped.
    pub(crate) fn command(&self) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(["-nostdin", "-v", "error"])
            .stdin(Stdio::null())
            .kill_on_drop(true);
        // ffmpeg dies with this process, even one killed with SIGKILL (which runs no drop):
        // an orphan would go on encoding into a staging file no one will publish, holding a
        // core, while the restarted job encodes the same track again. (The signal follows
        // the thread that spawned the child: these are spawned from the runtime's worker
        // threads, which live as long as the process.)
        #[cfg(target_os = "linux")]
        // SAFETY: the closure runs in the forked child before exec and only makes one
        // async-signal-safe system call (prctl).
        unsafe {
            command.pre_exec(|| {
                rustix::process::set_parent_process_death_signal(Some(
                    rustix::process::Signal::KILL,
                ))
                .map_err(std::io::Error::from)
            });
        }
        command
    }

    /// The error of an ffmpeg that could not be started.
    pub(crate) fn start_error(&self, error: std::io::Error) -> Error {
        Error::Unavailable(format!(
            "cannot run the transcoder {}: {error}",
            self.program.display()
        ))
    }

    /// Decodes all of `source`, discarding the audio, holding a CPU slot: `Ok(None)` when
    /// it decodes cleanly, `Ok(Some(reason))` with ffmpeg's first complaint when it does not.
    pub(crate) async fn decode_check(&self, source: &Path) -> Result<Option<String>> {
        let _slot = self.cpu.acquire().await;
        let result = self
            .command()
            .arg("-i")
            .arg(source)
            .args(["-map", "0:a:0", "-f", "null", "-"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .await
            .map_err(|error| self.start_error(error))?;
        let stderr = String::from_utf8_lossy(&result.stderr);
        let complaint = stderr.lines().map(str::trim).find(|line| !line.is_empty());
        Ok(match (result.status.success(), complaint) {
            (true, None) => None,
            (_, Some(line)) => Some(line.to_string()),
            (false, None) => Some(format!("ffmpeg stopped with {}", result.status)),
        })
    }

    /// Encodes the audio of `source` as Opus at `kbps` into the Ogg file `output`, holding a
    /// CPU slot.
    pub(crate) async fn opus_file(&self, source: &Path, output: &Path, kbps: u32) -> Result<()> {
        let _slot = self.cpu.acquire().await;
        let result = self
            .command()
            .arg("-y")
            .arg("-i")
            .arg(source)
            .args(opus_arguments(kbps))
            .arg(output)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .await
            .map_err(|error| self.start_error(error))?;
        if !result.status.success() {
            let stderr = String::from_utf8_lossy(&result.stderr);
            return Err(Error::internal(format!(
                "ffmpeg could not encode {kbps} kbit/s Opus: {}",
                stderr.trim()
            )));
        }
        Ok(())
    }

    /// Starts encoding `source` from `offset_seconds` as Opus at `kbps` to its stdout (a live
    /// transcode: the caller streams it and the process ends when the child is dropped).
    pub(crate) fn opus_pipe(
        &self,
        source: &Path,
        kbps: u32,
        offset_seconds: f64,
    ) -> Result<tokio::process::Child> {
        self.pipe(source, offset_seconds, opus_arguments(kbps))
    }

    /// Starts encoding `source` from `offset_seconds` to `target` on its stdout (a live
    /// encode of the OpenSubsonic `transcoding` extension; the process ends when the child is
    /// dropped).
    pub(crate) fn encode_pipe(
        &self,
        source: &Path,
        target: &super::decision::Target,
        offset_seconds: f64,
    ) -> Result<tokio::process::Child> {
        self.pipe(source, offset_seconds, encode_arguments(target))
    }

    /// ffmpeg reading `source` from `offset_seconds`, writing what `output` says to stdout.
    fn pipe(
        &self,
        source: &Path,
        offset_seconds: f64,
        output: impl IntoIterator<Item = String>,
    ) -> Result<tokio::process::Child> {
        self.command()
            .arg("-ss")
            .arg(format!("{offset_seconds:.3}"))
            .arg("-i")
            .arg(source)
            .args(output)
            .arg("pipe:1")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|error| self.start_error(error))
    }
}

/// The first audio stream encoded to `target` (its codec, bit rate, channels and rate).
fn encode_arguments(target: &super::decision::Target) -> Vec<String> {
    use super::decision::Codec;
    let (encoder, format) = match target.codec {
        Codec::Opus => ("libopus", "ogg"),
        Codec::Mp3 => ("libmp3lame", "mp3"),
        Codec::Aac => ("aac", "adts"),
    };
    [
        "-map",
        "0:a:0",
        "-vn",
        "-c:a",
        encoder,
        "-b:a",
        &format!("{}k", target.kbps),
        "-ac",
        &target.channels.to_string(),
        "-ar",
        &target.sample_rate.to_string(),
        "-f",
        format,
    ]
    .map(String::from)
    .to_vec()
}

/// The first audio stream as Opus in Ogg.
fn opus_arguments(kbps: u32) -> [String; 9] {
    [
        "-map".into(),
        "0:a:0".into(),
        "-vn".into(),
        "-c:a".into(),
        "libopus".into(),
        "-b:a".into(),
        format!("{kbps}k"),
        "-f".into(),
        "ogg".into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_encodes_are_bounded_in_all_and_per_user() {
        let budget = LiveEncodeBudget::new(3, 2);
        let (alice, bob, carol) = (UserId::new(), UserId::new(), UserId::new());
        let first = budget.take(&alice).unwrap();
        let _second = budget.take(&alice).unwrap();
        let refused = budget.take(&alice).unwrap_err();
        assert_eq!(refused.code(), "busy");
        assert_eq!(refused.retry_after_seconds(), Some(10));
        let _third = budget.take(&bob).unwrap();
        // The process's bound: nobody gets a fourth.
        assert!(budget.take(&carol).is_err());
        assert_eq!(budget.running(), 3);
        // A stream that ends gives its place back.
        drop(first);
        assert_eq!(budget.running(), 2);
        let _again = budget.take(&carol).unwrap();
        assert!(budget.take(&alice).is_err());
    }
}
