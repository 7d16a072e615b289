//! Slow and oversized clients against the real `musiclib serve`: a client that trickles a
//! request's head (slow-loris) is disconnected after `HTTP_HEADER_TIMEOUT_SECONDS` while
//! other clients are served; a head larger than hyper reads is refused with 431.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use support::{free_port, spawn};

/// What the server sends on `stream` before it closes it (or `timeout` passes).
fn read_until_closed(stream: &mut TcpStream, timeout: Duration) -> (Vec<u8>, bool) {
    stream.set_read_timeout(Some(timeout)).unwrap();
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return (received, true),
            Ok(read) => received.extend_from_slice(&buffer[..read]),
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => {
                return (received, true)
            }
            Err(_) => return (received, false),
        }
    }
}

#[test]
fn slow_and_oversized_heads_are_cut_off() {
    let data = tempfile::tempdir().unwrap();
    let port = free_port();
    let address = format!("127.0.0.1:{port}");
    let env = vec![
        (
            "DATA_DIR".to_string(),
            data.path().join("data").display().to_string(),
        ),
        ("BIND_ADDRESS".to_string(), address.clone()),
        ("HTTP_HEADER_TIMEOUT_SECONDS".to_string(), "2".to_string()),
        ("SOUND_ANALYSIS".to_string(), "false".to_string()),
    ];
    let _server = spawn("serve", &["serve"], &env, &data.path().join("serve.log"));
    let deadline = Instant::now() + Duration::from_secs(30);
    let health = |stream: &mut TcpStream| {
        stream
            .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let (answer, _) = read_until_closed(stream, Duration::from_secs(10));
        answer
    };
    loop {
        if let Ok(mut stream) = TcpStream::connect(&address) {
            if health(&mut stream).starts_with(b"HTTP/1.1 200") {
                break;
            }
        }
        assert!(Instant::now() < deadline, "the server did not start");
        std::thread::sleep(Duration::from_millis(100));
    }

    // Twenty clients each send half a head and stall.
    let mut stalled: Vec<TcpStream> = (0..20)
        .map(|_| {
            let mut stream = TcpStream::connect(&address).unwrap();
            stream
                .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                .unwrap();
            stream
        })
        .collect();
    // Meanwhile everyone else is served.
    let mut other = TcpStream::connect(&address).unwrap();
    assert!(health(&mut other).starts_with(b"HTTP/1.1 200"));
    // And the stalled ones are disconnected once their time is up, with no request served.
    let started = Instant::now();
    for stream in &mut stalled {
        let (answer, closed) = read_until_closed(stream, Duration::from_secs(15));
        assert!(closed, "a stalled client was kept");
        assert!(
            !answer.starts_with(b"HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&answer)
        );
    }
    assert!(started.elapsed() < Duration::from_secs(15));

    // A head over hyper's limit: 431, not a crash or a buffer without end.
    let mut big = TcpStream::connect(&address).unwrap();
    let mut request = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ".to_vec();
    request.extend(std::iter::repeat_n(b'a', 1024 * 1024));
    request.extend_from_slice(b"\r\n\r\n");
    let _ = big.write_all(&request);
    let (answer, _) = read_until_closed(&mut big, Duration::from_secs(10));
    assert!(
        answer.starts_with(b"HTTP/1.1 431"),
        "{}",
        String::from_utf8_lossy(&answer[..answer.len().min(200)])
    );

    // Still serving.
    let mut after = TcpStream::connect(&address).unwrap();
    assert!(health(&mut after).starts_with(b"HTTP/1.1 200"));
}
