//! Slow and oversized clients against the real `musiclib serve`: a client that trickles a
//! request's head (slow-loris) is disconnected after `HTTP_HEADER_TIMEOUT_SECONDS` while
//! other clients are served; a head larger than hyper reads is refused with 431; sockets that
//! send nothing, or part of the HTTP/2 preface, are closed after the same time; an idle
//! HTTP/2 connection is closed after `HTTP_IDLE_TIMEOUT_SECONDS`; one address holds at most
//! `MAX_CONNECTIONS_PER_ADDRESS` connections.

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
        ("LOUDNESS_ANALYSIS".to_string(), "false".to_string()),
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

/// The server's open file descriptors.
fn descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|entries| entries.count())
        .unwrap_or(0)
}

#[test]
fn idle_and_half_open_connections_are_closed_and_bounded_per_address() {
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
        ("HTTP_IDLE_TIMEOUT_SECONDS".to_string(), "2".to_string()),
        ("MAX_CONNECTIONS_PER_ADDRESS".to_string(), "40".to_string()),
        ("SOUND_ANALYSIS".to_string(), "false".to_string()),
        ("LOUDNESS_ANALYSIS".to_string(), "false".to_string()),
    ];
    let server = spawn("serve", &["serve"], &env, &data.path().join("serve.log"));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(mut stream) = TcpStream::connect(&address) {
            stream
                .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .unwrap();
            if read_until_closed(&mut stream, Duration::from_secs(10))
                .0
                .starts_with(b"HTTP/1.1 200")
            {
                break;
            }
        }
        assert!(Instant::now() < deadline, "the server did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    let baseline = descriptors(server.pid());

    // Sockets that send nothing, and sockets that send part of the HTTP/2 preface (which
    // hyper reads to choose the protocol, with no timer of its own): all closed within the
    // header timeout, none served.
    let mut silent: Vec<TcpStream> = (0..15)
        .map(|_| TcpStream::connect(&address).unwrap())
        .collect();
    for _ in 0..15 {
        let mut stream = TcpStream::connect(&address).unwrap();
        stream.write_all(b"PRI * HTTP/2.0\r\n").unwrap();
        silent.push(stream);
    }
    for stream in &mut silent {
        let (answer, closed) = read_until_closed(stream, Duration::from_secs(30));
        assert!(closed, "an idle socket was kept open");
        assert!(answer.is_empty() || !answer.starts_with(b"HTTP/1.1 200"));
    }
    drop(silent);

    // An HTTP/2 connection that made its request and stays without another is closed after
    // the idle timeout.
    let mut h2 = TcpStream::connect(&address).unwrap();
    h2.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").unwrap();
    // An empty SETTINGS frame, then HEADERS for GET /health (HPACK, literal names).
    h2.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).unwrap();
    let block: Vec<u8> = [
        &[0x82u8][..], // :method GET
        &[0x86],       // :scheme http
        &[0x04, 0x07], // :path, literal, 7 bytes
        b"/health",
        &[0x01, 0x01], // :authority, literal, 1 byte
        b"x",
    ]
    .concat();
    let mut headers = vec![0, 0, block.len() as u8, 1, 0x05, 0, 0, 0, 1];
    headers.extend_from_slice(&block);
    h2.write_all(&headers).unwrap();
    let (answer, closed) = read_until_closed(&mut h2, Duration::from_secs(30));
    assert!(closed, "an idle HTTP/2 connection was kept");
    assert!(
        !answer.is_empty(),
        "the HTTP/2 request was answered before the close"
    );

    // One address holds at most 40 connections: more are closed at once.
    let held: Vec<TcpStream> = (0..60)
        .filter_map(|_| TcpStream::connect(&address).ok())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let open = descriptors(server.pid()).saturating_sub(baseline);
    assert!(open <= 45, "{open} descriptors held for 60 connections");
    drop(held);

    // Still serving.
    let mut after = TcpStream::connect(&address).unwrap();
    after
        .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (answer, _) = read_until_closed(&mut after, Duration::from_secs(10));
        if answer.starts_with(b"HTTP/1.1 200") {
            break;
        }
        assert!(Instant::now() < deadline, "the server stopped serving");
        std::thread::sleep(Duration::from_millis(200));
        after = TcpStream::connect(&address).unwrap();
        after
            .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
    }
}
