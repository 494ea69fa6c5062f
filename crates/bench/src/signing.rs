//! The signing bound: how many RSA-2048 DKIM signatures per second two threads make with the
//! signer the delivery worker uses (`herald_mail::dkim::DkimSigner`: mail-auth on aws-lc-rs),
//! on a message shaped like the benchmark's. Delivery cannot beat it on a 2-core machine, so
//! `herald-bench send` prints delivered/s as a ratio of it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use herald_mail::dkim::{DkimSigner, generate_rsa_2048};

const THREADS: usize = 2;

/// A composed message like the benchmark's (headers, text and HTML parts).
fn sample_message() -> Vec<u8> {
    let html = "<p>Hi Reader, this is message 12345.</p><p><a href=\"https://example.org\">Read more</a></p>";
    format!(
        "From: Bench <news@bench-sender.com>\r\nTo: reader0012345@example.org\r\n\
         Subject: Hello Reader\r\nDate: Mon, 23 Nov 2026 16:00:00 +0000\r\n\
         Message-ID: <0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b@bench-sender.com>\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/alternative; boundary=\"b1\"\r\n\r\n--b1\r\n\
         Content-Type: text/plain; charset=utf-8\r\n\r\nHi Reader, this is message 12345.\r\n\
         Read more: https://example.org\r\n--b1\r\nContent-Type: text/html; charset=utf-8\r\n\r\n{html}\r\n--b1--\r\n"
    )
    .into_bytes()
}

/// Signatures per second of `THREADS` threads signing for `duration`.
pub fn signing_rate(duration: Duration) -> anyhow::Result<f64> {
    let key = generate_rsa_2048()?;
    let signer = Arc::new(DkimSigner::new(
        "bench-sender.com",
        "bench",
        &key.private_pkcs8_der,
    )?);
    let message = Arc::new(sample_message());
    let count = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let (signer, message, count, stop) =
                (signer.clone(), message.clone(), count.clone(), stop.clone());
            std::thread::spawn(move || -> anyhow::Result<()> {
                while !stop.load(Ordering::Relaxed) {
                    signer.sign(&message)?;
                    count.fetch_add(1, Ordering::Relaxed);
                }
                Ok(())
            })
        })
        .collect();
    std::thread::sleep(duration);
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join()
            .map_err(|_| anyhow::anyhow!("a signing thread panicked"))??;
    }
    Ok(count.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64())
}
