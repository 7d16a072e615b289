//! Blob storage on local disk and S3: atomic writes, ranged reads, deletion.

use bytes::Bytes;
use futures::TryStreamExt;

use crate::backend_test;
use crate::support::*;

backend_test! {
    async fn blobs_round_trip_with_ranges(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        let blobs = library.blobs();
        let data: Vec<u8> = (0..200_000u32).map(|n| (n % 251) as u8).collect();
        blobs.put_bytes("audio/a.bin", Bytes::from(data.clone())).await.unwrap();
        assert_eq!(blobs.head("audio/a.bin").await.unwrap().unwrap().size, data.len() as u64);
        let chunks: Vec<Bytes> = blobs.get_range_stream("audio/a.bin", 1000..5000).await.unwrap().try_collect().await.unwrap();
        assert_eq!(chunks.concat(), data[1000..5000]);

        // A large file goes through the streaming path (multipart on S3).
        let big: Vec<u8> = (0..(9 * 1024 * 1024u32)).map(|n| (n % 13) as u8).collect();
        let source = library.dir.path().join("big.bin");
        std::fs::write(&source, &big).unwrap();
        assert_eq!(blobs.put_file("audio/big.bin", &source).await.unwrap(), big.len() as u64);
        assert_eq!(blobs.get_bytes("audio/big.bin").await.unwrap().len(), big.len());
        let whole: Vec<Bytes> = blobs.get_range_stream("audio/big.bin", 0..big.len() as u64).await.unwrap().try_collect().await.unwrap();
        assert_eq!(whole.concat(), big, "a long range streams whole");

        // A key written again is read afresh (local reads keep the file mapped).
        blobs.put_bytes("audio/a.bin", Bytes::from_static(b"replaced")).await.unwrap();
        let chunks: Vec<Bytes> = blobs.get_range_stream("audio/a.bin", 0..8).await.unwrap().try_collect().await.unwrap();
        assert_eq!(chunks.concat(), b"replaced");
        assert!(blobs.get_range_stream("audio/a.bin", 0..9).await.is_err(), "past the end is an error, never a short body");
        blobs.put_bytes("audio/a.bin", Bytes::from(data.clone())).await.unwrap();

        let mut keys = blobs.list("audio").await.unwrap();
        keys.sort();
        assert_eq!(keys, vec!["audio/a.bin", "audio/big.bin"], "no staging or partial object is visible");

        blobs.delete("audio/a.bin").await.unwrap();
        assert!(blobs.head("audio/a.bin").await.unwrap().is_none());
        blobs.delete("audio/a.bin").await.unwrap();
        assert_eq!(blobs.get_bytes("audio/a.bin").await.unwrap_err().kind(), musiclib_core::ErrorKind::NotFound);
    }
}
