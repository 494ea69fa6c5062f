//! Transport tests against a real SMTP server on loopback (herald-testkit's sink) and the
//! on-disk outbox.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use herald_mail::dkim::{DkimSigner, generate_rsa_2048};
use herald_mail::mime::{self, Mailbox, OutgoingMessage};
use herald_mail::transport::{Envelope, OutboxTransport, SmtpTransport, Transport, TransportError};
use herald_testkit::smtp_sink::{SinkMode, SmtpSink};
use tokio::net::{TcpListener, TcpStream};

fn message(n: usize) -> Vec<u8> {
    let msg = OutgoingMessage {
        message_id: format!("msg-{n}@example.com"),
        date: chrono::Utc::now(),
        from: Mailbox {
            name: Some("Sender".into()),
            email: "news@example.com".into(),
        },
        to: Mailbox {
            name: None,
            email: format!("rcpt{n}@example.org"),
        },
        reply_to: None,
        subject: format!("Message {n}"),
        html: "<p>Hi</p>\n.\n<p>a line that is only a dot above</p>".into(),
        text: "Hi\n.\n..two dots\n".into(),
        headers: vec![],
        list_unsubscribe: None,
        attachments: vec![],
    };
    mime::build(&msg).unwrap()
}

fn envelope(n: usize) -> Envelope {
    Envelope {
        mail_from: "bounces@example.com".into(),
        rcpt_to: vec![format!("rcpt{n}@example.org")],
    }
}

fn smtp(url: &str, max: usize) -> Transport {
    let dir = std::env::temp_dir();
    Transport::from_config(Some(url), &dir, max).unwrap()
}

fn same_message(received: &[u8], sent: &[u8]) -> bool {
    let trim = |b: &[u8]| {
        let mut b = b.to_vec();
        while b.ends_with(b"\r\n") {
            b.truncate(b.len() - 2);
        }
        b
    };
    trim(received) == trim(sent)
}

#[tokio::test]
async fn smtp_accepts_signed_bytes_unchanged() {
    let sink = SmtpSink::start().await.unwrap();
    let transport = smtp(&sink.url(), 4);
    assert!(!transport.is_local_outbox());

    let pair = generate_rsa_2048().unwrap();
    let signer = DkimSigner::new("example.com", "s1", &pair.private_pkcs8_der).unwrap();
    let raw = signer.sign(&message(1)).unwrap();
    let reply = transport.send("k1", &envelope(1), &raw).await.unwrap();
    assert!(reply.starts_with("250"), "{reply}");
    assert!(
        reply.ends_with(&format!("(via {})", transport.label())),
        "{reply}"
    );
    assert!(
        transport.label().starts_with("smtp://127.0.0.1:"),
        "{reply}"
    );

    let got = sink.wait_for(1, Duration::from_secs(5)).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].mail_from, "bounces@example.com");
    assert_eq!(got[0].rcpt_to, vec!["rcpt1@example.org".to_string()]);
    assert!(same_message(&got[0].data, &raw), "bytes changed in transit");

    // Several recipients, a second message on the pooled connection.
    let env = Envelope {
        mail_from: String::new(),
        rcpt_to: vec!["a@example.org".into(), "b@example.org".into()],
    };
    transport.send("k2", &env, &message(2)).await.unwrap();
    let got = sink.wait_for(2, Duration::from_secs(5)).await;
    assert_eq!(got[1].mail_from, "");
    assert_eq!(got[1].rcpt_to, vec!["a@example.org", "b@example.org"]);
    sink.stop().await;
}

/// A message over the streaming threshold goes in chunks; whatever a chunk's edge cuts (CR|LF,
/// CRLF|dot, the dot of a dot line), the relay reads exactly the bytes handed over. Its body is
/// lines that are a single dot, so with three header lengths every edge falls at each place.
#[tokio::test]
async fn a_large_message_is_streamed_and_arrives_byte_for_byte() {
    let sink = SmtpSink::start().await.unwrap();
    let transport = smtp(&sink.url(), 2);
    let mut sent = Vec::new();
    for shift in 0..3 {
        let mut raw = format!(
            "From: a@example.com\r\nTo: b@example.org\r\nSubject: big{}\r\n\r\n",
            "x".repeat(shift)
        )
        .into_bytes();
        raw.extend_from_slice(&b".\r\n".repeat(200_000));
        raw.extend_from_slice(b"..end\r\n");
        if shift == 2 {
            // No final CRLF: the relay reads it with one, as for a small message.
            raw.truncate(raw.len() - 2);
        }
        let reply = transport
            .send_owned("k", &envelope(shift), raw.clone())
            .await
            .unwrap();
        assert!(reply.starts_with("250"), "{reply}");
        sent.push(raw);
    }
    let got = sink.wait_for(3, Duration::from_secs(10)).await;
    for (got, mut raw) in got.iter().zip(sent) {
        if !raw.ends_with(b"\r\n") {
            raw.extend_from_slice(b"\r\n");
        }
        assert!(got.data == raw, "{} bytes changed in transit", raw.len());
    }
    sink.stop().await;
}

#[tokio::test]
async fn smtp_451_is_transient_with_reply_then_succeeds() {
    let sink = SmtpSink::start().await.unwrap();
    let transport = smtp(&sink.url(), 2);
    sink.set_mode(SinkMode::TempFailNext(1));
    let err = transport
        .send("k", &envelope(1), &message(1))
        .await
        .unwrap_err();
    match &err {
        TransportError::Transient(reply) => {
            assert!(reply.starts_with("451 4.3.0"), "{reply}");
            assert!(reply.contains("try again later"), "{reply}");
        }
        other => panic!("expected transient, got {other:?}"),
    }
    assert!(err.is_transient());
    assert!(err.to_string().starts_with("transient: 451"));
    // The next attempt goes through.
    let reply = transport
        .send("k", &envelope(1), &message(1))
        .await
        .unwrap();
    assert!(reply.starts_with("250"), "{reply}");
    assert_eq!(sink.wait_for(1, Duration::from_secs(5)).await.len(), 1);
    sink.stop().await;
}

#[tokio::test]
async fn smtp_550_to_the_message_is_a_rejection_with_reply() {
    let sink = SmtpSink::start().await.unwrap();
    let transport = smtp(&sink.url(), 2);
    sink.set_mode(SinkMode::RejectPermanent);
    let err = transport
        .send("k", &envelope(1), &message(1))
        .await
        .unwrap_err();
    match &err {
        TransportError::Rejected(reply) => {
            assert!(reply.starts_with("550 5.1.1"), "{reply}");
            assert!(reply.contains("user unknown"), "{reply}");
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
    assert!(sink.messages().is_empty());
    sink.stop().await;
}

#[tokio::test]
async fn stopped_server_is_transient_and_recovers_after_restart() {
    let sink = SmtpSink::start().await.unwrap();
    let transport = smtp(&sink.url(), 2);
    // A pooled connection exists before the stop.
    transport
        .send("a", &envelope(1), &message(1))
        .await
        .unwrap();
    sink.stop().await;

    for _ in 0..2 {
        let err = transport
            .send("b", &envelope(2), &message(2))
            .await
            .unwrap_err();
        assert!(matches!(err, TransportError::Transient(_)), "{err:?}");
    }

    sink.restart().await.unwrap();
    transport
        .send("c", &envelope(3), &message(3))
        .await
        .unwrap();
    assert_eq!(sink.wait_for(2, Duration::from_secs(5)).await.len(), 2);
    sink.stop().await;
}

#[tokio::test]
async fn a_pooled_connection_the_relay_closed_is_replaced_without_failing_the_message() {
    let sink = SmtpSink::start().await.unwrap();
    let transport = smtp(&sink.url(), 2);
    transport
        .send("a", &envelope(1), &message(1))
        .await
        .unwrap();
    // The relay drops its connections (as on its idle timeout) and comes back; the pooled
    // connection, used a moment ago, is reused without a NOOP probe.
    sink.stop().await;
    sink.restart().await.unwrap();
    transport
        .send("b", &envelope(2), &message(2))
        .await
        .expect("sent over a new connection");
    assert_eq!(sink.wait_for(2, Duration::from_secs(5)).await.len(), 2);
    sink.stop().await;
}

#[tokio::test]
async fn never_started_server_is_transient() {
    // Bind and drop to get a port nobody listens on.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let transport = smtp(&format!("smtp://127.0.0.1:{port}?tls=none"), 1);
    let err = transport
        .send("k", &envelope(1), &message(1))
        .await
        .unwrap_err();
    assert!(matches!(err, TransportError::Transient(_)), "{err:?}");
}

#[tokio::test]
async fn starttls_required_against_plaintext_server_is_transient() {
    // The sink does not offer STARTTLS: `smtp://` (STARTTLS required) must refuse to send
    // in clear, and say so as a transient (configuration) failure.
    let sink = SmtpSink::start().await.unwrap();
    let url = format!("smtp://user:pass@127.0.0.1:{}", sink.addr().port());
    let transport = smtp(&url, 1);
    let err = transport
        .send("k", &envelope(1), &message(1))
        .await
        .unwrap_err();
    assert!(matches!(err, TransportError::Transient(_)), "{err:?}");
    assert!(sink.messages().is_empty());
    sink.stop().await;
}

#[tokio::test]
async fn invalid_envelope_is_permanent() {
    let sink = SmtpSink::start().await.unwrap();
    let transport = smtp(&sink.url(), 1);
    let bad = Envelope {
        mail_from: "bounces@example.com".into(),
        rcpt_to: vec!["not an address".into()],
    };
    let err = transport.send("k", &bad, &message(1)).await.unwrap_err();
    assert!(matches!(err, TransportError::Permanent(_)), "{err:?}");
    let none = Envelope {
        mail_from: "bounces@example.com".into(),
        rcpt_to: vec![],
    };
    let err = transport.send("k", &none, &message(1)).await.unwrap_err();
    assert!(matches!(err, TransportError::Permanent(_)), "{err:?}");
    sink.stop().await;
}

/// A TCP proxy in front of the sink that records the highest number of simultaneous
/// connections and the total number of connections.
async fn counting_proxy(
    target: std::net::SocketAddr,
) -> (std::net::SocketAddr, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let active = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let total = Arc::new(AtomicUsize::new(0));
    let (peak_out, total_out) = (peak.clone(), total.clone());
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            total.fetch_add(1, Ordering::SeqCst);
            let active = active.clone();
            let peak = peak.clone();
            tokio::spawn(async move {
                let now = active.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                if let Ok(mut server) = TcpStream::connect(target).await {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                }
                active.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    (addr, peak_out, total_out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrency_is_capped_by_max_connections() {
    let sink = SmtpSink::start().await.unwrap();
    let (proxy, peak, total) = counting_proxy(sink.addr()).await;
    let transport = Arc::new(smtp(&format!("smtp://{proxy}?tls=none"), 3));
    let raw = Arc::new(message(0));
    let mut tasks = Vec::new();
    for n in 0..60 {
        let transport = transport.clone();
        let raw = raw.clone();
        tasks.push(tokio::spawn(async move {
            transport
                .send(&format!("k{n}"), &envelope(n), &raw)
                .await
                .unwrap()
        }));
    }
    for t in tasks {
        assert!(t.await.unwrap().starts_with("250"));
    }
    assert_eq!(sink.wait_for(60, Duration::from_secs(10)).await.len(), 60);
    let peak = peak.load(Ordering::SeqCst);
    assert!(
        (2..=3).contains(&peak),
        "peak concurrent connections {peak}"
    );
    let total = total.load(Ordering::SeqCst);
    assert!(total <= 3, "{total} connections opened for 60 messages");
    // Connections are reused, not opened per message.
    if let Transport::Smtp(s) = transport.as_ref() {
        assert!(s.idle_connections() <= 3);
    }
    transport.close_idle().await;
    sink.stop().await;
}

#[tokio::test]
async fn silent_server_times_out_as_transient() {
    // Accepts TCP connections and never says a word.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = listener.accept().await {
            held.push(s);
        }
    });
    let transport = SmtpTransport::from_url(&format!("smtp://{addr}?tls=none"), 1)
        .unwrap()
        .with_timeout(Duration::from_millis(300));
    let start = std::time::Instant::now();
    let err = transport.send(&envelope(1), &message(1)).await.unwrap_err();
    assert!(matches!(err, TransportError::Transient(_)), "{err:?}");
    assert!(err.message().contains("timed out"), "{err:?}");
    assert!(start.elapsed() < Duration::from_secs(5));
    // The permit was released: a second send is not stuck behind the first.
    let err = transport.send(&envelope(1), &message(1)).await.unwrap_err();
    assert!(matches!(err, TransportError::Transient(_)), "{err:?}");
}

#[tokio::test]
async fn outbox_write_read_list() {
    let dir = tempfile::tempdir().unwrap();
    let outbox_dir = dir.path().join("outbox");
    let transport = Transport::from_config(None, &outbox_dir, 8).unwrap();
    assert!(transport.is_local_outbox());

    let a = message(1);
    let b = message(2);
    let reply = transport.send("0192-aaaa", &envelope(1), &a).await.unwrap();
    // The reply names the file and the transport, never the directory.
    assert_eq!(reply, "250 kept as 0192-aaaa.eml (via the local outbox)");
    assert!(!reply.contains(&*dir.path().to_string_lossy()), "{reply}");
    tokio::time::sleep(Duration::from_millis(20)).await;
    transport.send("0192-bbbb", &envelope(2), &b).await.unwrap();

    let outbox = OutboxTransport::new(&outbox_dir);
    assert_eq!(outbox.read("0192-aaaa").unwrap(), a);
    assert_eq!(outbox.read("0192-bbbb").unwrap(), b);
    let list = outbox.list();
    let keys: Vec<&str> = list.iter().map(|(k, _, _)| k.as_str()).collect();
    assert_eq!(keys, ["0192-aaaa", "0192-bbbb"]);
    assert_eq!(list[0].1, a.len() as u64);
    assert_eq!(list[1].1, b.len() as u64);
    assert!(list[0].2 <= list[1].2);

    // No temporary files are left behind; other files are ignored by list().
    let names: Vec<String> = std::fs::read_dir(&outbox_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(names.iter().all(|n| n.ends_with(".eml")), "{names:?}");
    std::fs::write(outbox_dir.join("notes.txt"), b"x").unwrap();
    assert_eq!(outbox.list().len(), 2);

    // Same key again replaces the file.
    transport.send("0192-aaaa", &envelope(1), &b).await.unwrap();
    assert_eq!(outbox.read("0192-aaaa").unwrap(), b);
    assert_eq!(outbox.list().len(), 2);

    // Keys that could escape the directory are refused.
    let err = transport
        .send("../escape", &envelope(1), &a)
        .await
        .unwrap_err();
    assert!(matches!(err, TransportError::Permanent(_)), "{err:?}");
    assert!(outbox.read("../escape").is_err());
    assert_eq!(
        outbox.read("missing").unwrap_err().kind(),
        std::io::ErrorKind::NotFound
    );

    // A missing directory is an empty outbox, created on first write.
    let fresh = OutboxTransport::new(dir.path().join("later"));
    assert!(fresh.list().is_empty());
    fresh.send("x", &a).await.unwrap();
    assert_eq!(fresh.list().len(), 1);
}
