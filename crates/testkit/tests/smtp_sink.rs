//! The SMTP sink driven by a raw TCP client: every reply is checked as a real sender sees it.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use herald_testkit::smtp_sink::{SinkMode, SmtpSink};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

/// A line-oriented SMTP client for tests.
struct Client {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
}

impl Client {
    async fn connect(sink: &SmtpSink) -> Client {
        let stream = TcpStream::connect(sink.addr()).await.unwrap();
        let (read, writer) = stream.into_split();
        let mut client = Client {
            reader: BufReader::new(read),
            writer,
        };
        let greeting = client.reply().await;
        assert!(greeting[0].starts_with("220 "), "{greeting:?}");
        client
    }

    async fn send(&mut self, bytes: &str) {
        self.writer.write_all(bytes.as_bytes()).await.unwrap();
    }

    /// Reads one (possibly multi-line) reply.
    async fn reply(&mut self) -> Vec<String> {
        let mut lines = Vec::new();
        loop {
            let mut line = String::new();
            let n = tokio::time::timeout(Duration::from_secs(5), self.reader.read_line(&mut line))
                .await
                .expect("reply in time")
                .unwrap();
            assert!(n > 0, "connection closed after {lines:?}");
            let line = line.trim_end().to_owned();
            let last = line.as_bytes().get(3) != Some(&b'-');
            lines.push(line);
            if last {
                return lines;
            }
        }
    }

    /// Sends one command line and returns the first line of its reply.
    async fn command(&mut self, line: &str) -> String {
        self.send(&format!("{line}\r\n")).await;
        self.reply().await.remove(0)
    }

    /// A whole transaction; returns the final reply to the data.
    async fn mail(&mut self, from: &str, to: &[&str], data: &str) -> String {
        assert!(
            self.command(&format!("MAIL FROM:<{from}>"))
                .await
                .starts_with("250")
        );
        for rcpt in to {
            assert!(
                self.command(&format!("RCPT TO:<{rcpt}>"))
                    .await
                    .starts_with("250")
            );
        }
        assert!(self.command("DATA").await.starts_with("354"));
        self.send(data).await;
        self.send(".\r\n").await;
        self.reply().await.remove(0)
    }
}

#[tokio::test]
async fn ehlo_advertises_what_lettre_needs() {
    let sink = SmtpSink::start().await.unwrap();
    let mut client = Client::connect(&sink).await;
    client.send("EHLO client.test\r\n").await;
    let reply = client.reply().await;
    for capability in ["PIPELINING", "8BITMIME", "SIZE", "AUTH PLAIN LOGIN"] {
        assert!(
            reply.iter().any(|line| line[4..].starts_with(capability)),
            "{capability} missing from {reply:?}"
        );
    }
    assert!(reply.iter().all(|line| line.starts_with("250")));
    assert!(client.command("HELO client.test").await.starts_with("250"));
    assert!(client.command("NOOP").await.starts_with("250"));
    assert!(client.command("QUIT").await.starts_with("221"));
}

#[tokio::test]
async fn records_envelope_and_data_exactly_with_dots_unstuffed() {
    let sink = SmtpSink::start().await.unwrap();
    assert!(sink.url().starts_with("smtp://127.0.0.1:"));
    assert!(
        sink.url()
            .ends_with(&format!(":{}?tls=none", sink.addr().port()))
    );
    let mut client = Client::connect(&sink).await;
    client.command("EHLO client.test").await;
    let reply = client
        .mail(
            "sender@herald.test",
            &["a@example.test", "b@example.test"],
            "Subject: hi\r\n\r\n..leading dot\r\n.\tnot the end\r\nlast line\r\n",
        )
        .await;
    assert!(reply.starts_with("250"), "{reply}");

    let messages = sink.messages();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].mail_from, "sender@herald.test");
    assert_eq!(messages[0].rcpt_to, ["a@example.test", "b@example.test"]);
    assert_eq!(
        messages[0].data,
        b"Subject: hi\r\n\r\n.leading dot\r\n\tnot the end\r\nlast line\r\n"
    );
    assert_eq!(sink.attempts(), 1);
}

#[tokio::test]
async fn many_messages_on_one_connection_and_rset_clears_the_envelope() {
    let sink = SmtpSink::start().await.unwrap();
    let mut client = Client::connect(&sink).await;
    client.command("EHLO client.test").await;
    for i in 0..5 {
        let reply = client
            .mail("s@herald.test", &["r@example.test"], &format!("n: {i}\r\n"))
            .await;
        assert!(reply.starts_with("250"));
    }
    assert!(
        client
            .command("MAIL FROM:<x@herald.test>")
            .await
            .starts_with("250")
    );
    assert!(client.command("RSET").await.starts_with("250"));
    assert!(
        client
            .command("RCPT TO:<r@example.test>")
            .await
            .starts_with("503")
    );
    assert!(client.command("DATA").await.starts_with("503"));
    assert!(client.command("MAIL FROM:<>").await.starts_with("250"));
    assert!(client.command("DATA").await.starts_with("554"));
    assert!(client.command("BOGUS").await.starts_with("502"));

    let messages = sink.messages();
    assert_eq!(messages.len(), 5);
    assert_eq!(messages[4].data, b"n: 4\r\n");
    assert_eq!(sink.attempts(), 5);
}

#[tokio::test]
async fn pipelined_commands_get_their_replies_in_order() {
    let sink = SmtpSink::start().await.unwrap();
    let mut client = Client::connect(&sink).await;
    client.command("EHLO client.test").await;
    client
        .send("MAIL FROM:<s@herald.test>\r\nRCPT TO:<a@example.test>\r\nRCPT TO:<b@example.test>\r\nDATA\r\n")
        .await;
    for expected in ["250", "250", "250", "354"] {
        assert!(client.reply().await[0].starts_with(expected));
    }
    client.send("body\r\n.\r\nQUIT\r\n").await;
    assert!(client.reply().await[0].starts_with("250"));
    assert!(client.reply().await[0].starts_with("221"));
    assert_eq!(sink.messages()[0].rcpt_to.len(), 2);
}

#[tokio::test]
async fn auth_plain_and_login_accept_any_credentials() {
    let sink = SmtpSink::start().await.unwrap();
    let mut client = Client::connect(&sink).await;
    client.command("EHLO client.test").await;
    assert!(
        client
            .command("AUTH PLAIN AHVzZXIAcGFzcw==")
            .await
            .starts_with("235")
    );
    assert!(client.command("AUTH PLAIN").await.starts_with("334"));
    assert!(client.command("AHVzZXIAcGFzcw==").await.starts_with("235"));
    assert!(client.command("AUTH LOGIN").await.starts_with("334"));
    assert!(client.command("dXNlcg==").await.starts_with("334"));
    assert!(client.command("cGFzcw==").await.starts_with("235"));
    assert!(
        client
            .command("AUTH LOGIN dXNlcg==")
            .await
            .starts_with("334")
    );
    assert!(client.command("cGFzcw==").await.starts_with("235"));
    assert!(client.command("AUTH CRAM-MD5").await.starts_with("504"));
}

#[tokio::test]
async fn temp_fail_next_refuses_n_messages_then_accepts() {
    let sink = SmtpSink::start().await.unwrap();
    sink.set_mode(SinkMode::TempFailNext(2));
    let mut client = Client::connect(&sink).await;
    client.command("EHLO client.test").await;
    let mut replies = Vec::new();
    for _ in 0..3 {
        replies.push(
            client
                .mail("s@herald.test", &["r@example.test"], "x\r\n")
                .await,
        );
    }
    assert!(replies[0].starts_with("451 4.3.0"), "{replies:?}");
    assert!(replies[1].starts_with("451 4.3.0"), "{replies:?}");
    assert!(replies[2].starts_with("250"), "{replies:?}");
    assert_eq!(sink.messages().len(), 1);
    assert_eq!(sink.attempts(), 3);
}

#[tokio::test]
async fn reject_permanent_answers_550_and_records_nothing() {
    let sink = SmtpSink::start().await.unwrap();
    sink.set_mode(SinkMode::RejectPermanent);
    let mut client = Client::connect(&sink).await;
    let reply = client
        .mail("s@herald.test", &["r@example.test"], "x\r\n")
        .await;
    assert!(reply.starts_with("550 5.1.1"), "{reply}");
    assert!(sink.messages().is_empty());
    assert_eq!(sink.attempts(), 1);

    sink.set_mode(SinkMode::Accept);
    let reply = client
        .mail("s@herald.test", &["r@example.test"], "x\r\n")
        .await;
    assert!(reply.starts_with("250"), "{reply}");
}

#[tokio::test]
async fn stop_refuses_connections_and_drops_open_ones_until_restart() {
    let sink = SmtpSink::start().await.unwrap();
    let addr = sink.addr();
    let mut open = Client::connect(&sink).await;
    open.command("EHLO client.test").await;

    sink.stop().await;
    let refused = TcpStream::connect(addr).await.unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
    let mut rest = String::new();
    let read = open.reader.read_line(&mut rest).await;
    assert!(
        matches!(read, Ok(0) | Err(_)),
        "open connection survived: {rest:?}"
    );

    sink.restart().await.unwrap();
    assert_eq!(sink.addr(), addr);
    let mut client = Client::connect(&sink).await;
    let reply = client
        .mail("s@herald.test", &["r@example.test"], "x\r\n")
        .await;
    assert!(reply.starts_with("250"));
    // Stopping twice, and restarting while running, are harmless.
    sink.restart().await.unwrap();
    sink.stop().await;
    sink.stop().await;
}

#[tokio::test]
async fn wait_for_returns_early_or_at_the_timeout() {
    let sink = SmtpSink::start().await.unwrap();
    let started = Instant::now();
    assert!(
        sink.wait_for(1, Duration::from_millis(100))
            .await
            .is_empty()
    );
    assert!(started.elapsed() >= Duration::from_millis(100));

    let addr = sink.addr();
    let sender = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let stream = TcpStream::connect(addr).await.unwrap();
        let (read, writer) = stream.into_split();
        let mut client = Client {
            reader: BufReader::new(read),
            writer,
        };
        client.reply().await;
        client
            .mail("s@herald.test", &["r@example.test"], "x\r\n")
            .await
    });
    let started = Instant::now();
    let messages = sink.wait_for(1, Duration::from_secs(10)).await;
    assert_eq!(messages.len(), 1);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(sender.await.unwrap().starts_with("250"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_connections_deliver_everything() {
    let sink = SmtpSink::start().await.unwrap();
    let addr = sink.addr();
    let mut tasks = Vec::new();
    for c in 0..50 {
        tasks.push(tokio::spawn(async move {
            let stream = TcpStream::connect(addr).await.unwrap();
            let (read, writer) = stream.into_split();
            let mut client = Client {
                reader: BufReader::new(read),
                writer,
            };
            client.reply().await;
            client.command("EHLO client.test").await;
            for m in 0..20 {
                let body = format!("c{c} m{m}\r\n{}\r\n", "x".repeat(2000));
                let reply = client
                    .mail("s@herald.test", &["r@example.test"], &body)
                    .await;
                assert!(reply.starts_with("250"), "{reply}");
            }
            client.command("QUIT").await;
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let messages = sink.wait_for(1000, Duration::from_secs(5)).await;
    assert_eq!(messages.len(), 1000);
    assert_eq!(sink.attempts(), 1000);
}
