//! A loopback HTTP server of audio files, for tests of remote sources that download (yt-dlp
//! fetches from it through its generic extractor, as from any site).
//!
//! `GET` and `HEAD /media/{name}` answer a file added with [`MediaServer::add`] (its
//! `Content-Type` and `Content-Length`, then the bytes, at a chosen pace); a name set to fail
//! answers 500 a number of times first; anything else is 404. Every answer closes its
//! connection. Requests are counted per name.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(Default)]
struct State {
    files: HashMap<String, File>,
    requests: HashMap<String, usize>,
}

#[derive(Clone)]
struct File {
    bytes: Arc<Vec<u8>>,
    content_type: String,
    /// 500s still to answer before the file.
    failures: usize,
    /// Bytes per 100 ms (unlimited when `None`).
    pace: Option<usize>,
}

/// The server; stops when dropped.
pub struct MediaServer {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for MediaServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl MediaServer {
    /// Starts on a free loopback port.
    pub async fn start() -> MediaServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        let state = Arc::new(Mutex::new(State::default()));
        let served = state.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, served.clone()));
            }
        });
        MediaServer { base, state, task }
    }

    /// Serves `bytes` as `/media/{name}` with `content_type`.
    pub fn add(&self, name: &str, bytes: Vec<u8>, content_type: &str) {
        self.state.lock().expect("state").files.insert(
            name.to_string(),
            File {
                bytes: Arc::new(bytes),
                content_type: content_type.to_string(),
                failures: 0,
                pace: None,
            },
        );
    }

    /// `/media/{name}` is gone: 404 from now on.
    pub fn remove(&self, name: &str) {
        self.state.lock().expect("state").files.remove(name);
    }

    /// `/media/{name}` answers 500 the next `times` requests.
    pub fn fail(&self, name: &str, times: usize) {
        if let Some(file) = self.state.lock().expect("state").files.get_mut(name) {
            file.failures = times;
        }
    }

    /// `/media/{name}` is sent at about `bytes_per_second`.
    pub fn slow(&self, name: &str, bytes_per_second: usize) {
        if let Some(file) = self.state.lock().expect("state").files.get_mut(name) {
            file.pace = Some((bytes_per_second / 10).max(1));
        }
    }

    /// Requests for `/media/{name}` so far (any method, any answer).
    pub fn requests(&self, name: &str) -> usize {
        self.state
            .lock()
            .expect("state")
            .requests
            .get(name)
            .copied()
            .unwrap_or(0)
    }
}

async fn serve(mut stream: TcpStream, state: Arc<Mutex<State>>) {
    let mut head = Vec::new();
    let mut buffer = [0u8; 4096];
    while !head.windows(4).any(|window| window == b"\r\n\r\n") {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(read) => head.extend_from_slice(&buffer[..read]),
        }
        if head.len() > 64 * 1024 {
            return;
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let mut request_line = head.lines().next().unwrap_or("").split_whitespace();
    let method = request_line.next().unwrap_or("").to_string();
    let path = request_line.next().unwrap_or("").to_string();
    let name = path
        .split('?')
        .next()
        .unwrap_or("")
        .strip_prefix("/media/")
        .unwrap_or("")
        .to_string();
    let file = {
        let mut state = state.lock().expect("state");
        *state.requests.entry(name.clone()).or_default() += 1;
        match state.files.get_mut(&name) {
            Some(file) if file.failures > 0 => {
                file.failures -= 1;
                Err(500)
            }
            Some(file) => Ok(file.clone()),
            None => Err(404),
        }
    };
    let file = match file {
        Ok(file) => file,
        Err(status) => {
            let reason = if status == 404 {
                "Not Found"
            } else {
                "Internal Server Error"
            };
            let body = format!("{status} {reason}\n");
            let _ = stream
                .write_all(
                    format!(
                        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    )
                    .as_bytes(),
                )
                .await;
            return;
        }
    };
    let header = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {}\r\nAccept-Ranges: none\r\nConnection: close\r\n\r\n",
        file.content_type,
        file.bytes.len()
    );
    if stream.write_all(header.as_bytes()).await.is_err() || method == "HEAD" {
        return;
    }
    match file.pace {
        None => {
            let _ = stream.write_all(&file.bytes).await;
        }
        Some(pace) => {
            for chunk in file.bytes.chunks(pace) {
                if stream.write_all(chunk).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    let _ = stream.flush().await;
}
