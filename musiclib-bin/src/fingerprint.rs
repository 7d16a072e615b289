//! `musiclib fingerprint`: fpcalc's output for musiclib's fingerprints, so the two tools can
//! be compared file by file (`diff <(fpcalc -raw F) <(musiclib fingerprint -raw F)`).

use std::path::PathBuf;
use std::process::ExitCode;

use musiclib_fingerprint::{fingerprint_file, Fingerprint};

/// Fingerprints each file in turn; a file that fails is reported on stderr and the rest go
/// on. Exit code 2 when any failed, as fpcalc.
pub fn run(files: &[PathBuf], raw: bool, json: bool, plain: bool, length: f64) -> ExitCode {
    let mut failed = false;
    for (index, file) in files.iter().enumerate() {
        match fingerprint_file(file, length) {
            Ok(fingerprint) => {
                if index > 0 && !json && !plain {
                    println!();
                }
                print!("{}", render(file, &fingerprint, raw, json, plain));
            }
            Err(error) => {
                eprintln!("ERROR: {}: {error}", file.display());
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

/// One file's output in fpcalc's formats.
fn render(
    file: &std::path::Path,
    fingerprint: &Fingerprint,
    raw: bool,
    json: bool,
    plain: bool,
) -> String {
    let value = if raw {
        fingerprint
            .raw
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(",")
    } else {
        fingerprint.compressed()
    };
    if json {
        let value = if raw {
            format!("[{value}]")
        } else {
            format!("\"{value}\"")
        };
        format!(
            "{{\"duration\": {:.2}, \"fingerprint\": {value}}}\n",
            fingerprint.duration
        )
    } else if plain {
        format!("{value}\n")
    } else {
        format!(
            "FILE={}\nDURATION={}\nFINGERPRINT={value}\n",
            file.display(),
            fingerprint.duration as u64
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Fingerprint {
        Fingerprint {
            raw: vec![1, 4294967295],
            duration: 5.04,
        }
    }

    #[test]
    fn renders_fpcalc_formats() {
        let file = std::path::Path::new("a.mp3");
        assert_eq!(
            render(file, &sample(), true, true, false),
            "{\"duration\": 5.04, \"fingerprint\": [1,4294967295]}\n"
        );
        assert_eq!(render(file, &sample(), true, false, true), "1,4294967295\n");
        assert_eq!(
            render(file, &sample(), true, false, false),
            "FILE=a.mp3\nDURATION=5\nFINGERPRINT=1,4294967295\n"
        );
    }

    #[test]
    fn one_dash_options_become_two() {
        let args = ["musiclib", "fingerprint", "-raw", "-length", "30", "x.mp3"]
            .map(std::ffi::OsString::from);
        let rewritten = crate::cli::fpcalc_style(args);
        assert_eq!(
            rewritten,
            [
                "musiclib",
                "fingerprint",
                "--raw",
                "--length",
                "30",
                "x.mp3"
            ]
        );
    }
}
