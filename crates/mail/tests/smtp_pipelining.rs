//! PIPELINING (RFC 2920) against scripted relays on loopback: used when the relay offers it,
//! never when it does not, and a refused recipient in a pipelined group delivers nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use herald_mail::transport::{Envelope, SmtpTransport, TransportError};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

#[derive(Clone, Copy, PartialEq)]
enum Script {
    /// Offers PIPELINING and answers MAIL only once DATA has arrived: a client that waits for
    /// MAIL's reply before sending RCPT never gets one.
    Pipelining,
    /// Offers PIPELINING and refuses every recipient.
    PipeliningRefusing,
    /// Does not offer PIPELINING and notes any command that came before the previous reply.
    Lockstep,
}

#[derive(Default)]
struct Seen {
    /// The DATA sections received in full (without the terminating dot line).
    messages: Vec<Vec<u8>>,
    /// Commands that were already buffered when the previous one was read (lockstep only).
    early: Vec<String>,
    connections: usize,
}

async fn relay(script: Script) -> (String, Arc<Mutex<Seen>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let shared = seen.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            shared.lock().unwrap().connections += 1;
            tokio::spawn(session(stream, script, shared.clone()));
        }
    });
    (format!("smtp://{addr}?tls=none"), seen)
}

async fn session(stream: tokio::net::TcpStream, script: Script, seen: Arc<Mutex<Seen>>) {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    write.write_all(b"220 scripted ESMTP\r\n").await.unwrap();
    let mut held = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
            return;
        }
        if script == Script::Lockstep && !reader.buffer().is_empty() {
            seen.lock().unwrap().early.push(line.trim_end().to_owned());
        }
        let verb = line.get(..4).unwrap_or("").to_ascii_uppercase();
        let reply: &[u8] = match verb.as_str() {
            "EHLO" if script == Script::Lockstep => b"250-scripted\r\n250 8BITMIME\r\n",
            "EHLO" => b"250-scripted\r\n250-PIPELINING\r\n250 8BITMIME\r\n",
            "MAIL" => b"250 2.1.0 Ok\r\n",
            "RCPT" if script == Script::PipeliningRefusing => b"550 5.1.1 No such user\r\n",
            "RCPT" => b"250 2.1.5 Ok\r\n",
            "DATA" if script == Script::PipeliningRefusing => b"554 5.5.1 No valid recipients\r\n",
            "DATA" => b"354 Go ahead\r\n",
            "QUIT" => {
                let _ = write.write_all(b"221 Bye\r\n").await;
                return;
            }
            _ => b"250 Ok\r\n",
        };
        held.extend_from_slice(reply);
        if script != Script::Lockstep && (verb == "MAIL" || verb == "RCPT") {
            continue; // answered with DATA's reply, in order
        }
        write.write_all(&held).await.unwrap();
        held.clear();
        if verb == "DATA" && reply.starts_with(b"354") {
            let mut data = Vec::new();
            loop {
                let mut l = Vec::new();
                if reader.read_until(b'\n', &mut l).await.unwrap_or(0) == 0 {
                    return; // closed mid-message: nothing delivered
                }
                if l == b".\r\n" {
                    break;
                }
                let unstuffed = if l.starts_with(b"..") {
                    &l[1..]
                } else {
                    &l[..]
                };
                data.extend_from_slice(unstuffed);
            }
            seen.lock().unwrap().messages.push(data);
            write.write_all(b"250 2.0.0 Ok: queued\r\n").await.unwrap();
        }
    }
}

fn envelope() -> Envelope {
    Envelope {
        mail_from: "bounces@example.com".into(),
        rcpt_to: vec!["someone@example.org".into()],
    }
}

const MESSAGE: &[u8] = b"Subject: hi\r\n\r\n.one dot\r\n..two dots\r\n.\r\nend\r\n";

async fn send(transport: &SmtpTransport, raw: &[u8]) -> Result<String, TransportError> {
    tokio::time::timeout(Duration::from_secs(5), transport.send(&envelope(), raw))
        .await
        .expect("the transaction did not finish: the client waited for a reply held back")
}

#[tokio::test]
async fn commands_are_pipelined_when_the_relay_offers_it() {
    let (url, seen) = relay(Script::Pipelining).await;
    let transport = SmtpTransport::from_url(&url, 1).unwrap();
    for _ in 0..2 {
        let reply = send(&transport, MESSAGE).await.unwrap();
        assert!(reply.starts_with("250 2.0.0"), "{reply}");
    }
    let seen = seen.lock().unwrap();
    assert_eq!(seen.messages, vec![MESSAGE.to_vec(), MESSAGE.to_vec()]);
    assert_eq!(seen.connections, 1, "the connection is reused");
}

#[tokio::test]
async fn one_command_per_reply_when_the_relay_does_not_offer_it() {
    let (url, seen) = relay(Script::Lockstep).await;
    let transport = SmtpTransport::from_url(&url, 1).unwrap();
    for _ in 0..2 {
        send(&transport, MESSAGE).await.unwrap();
    }
    let seen = seen.lock().unwrap();
    assert_eq!(seen.messages.len(), 2);
    assert_eq!(seen.messages[1], MESSAGE);
    assert!(
        seen.early.is_empty(),
        "sent before a reply: {:?}",
        seen.early
    );
}

#[tokio::test]
async fn a_refused_recipient_in_a_pipelined_group_is_a_rejection_and_delivers_nothing() {
    let (url, seen) = relay(Script::PipeliningRefusing).await;
    let transport = SmtpTransport::from_url(&url, 1).unwrap();
    let err = send(&transport, MESSAGE).await.unwrap_err();
    match err {
        TransportError::Rejected(reply) => assert!(reply.starts_with("550 5.1.1"), "{reply}"),
        other => panic!("expected a rejection, got {other:?}"),
    }
    // The connection is not reused with DATA's reply still unread: a second send opens a
    // new one and fails the same way, never with the previous transaction's reply.
    let err = send(&transport, MESSAGE).await.unwrap_err();
    assert!(err.message().starts_with("550 5.1.1"), "{err:?}");
    let seen = seen.lock().unwrap();
    assert!(seen.messages.is_empty());
    assert_eq!(seen.connections, 2);
}
