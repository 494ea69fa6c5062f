//! A plain SMTP client for the listener tests: one command, one parsed reply, so refusals can
//! be checked code by code (lettre stops at the first refusal and hides the rest).

use std::net::SocketAddr;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

/// The certificate files of the tests (tests/api/smtp_certs/README.md).
pub fn cert_path(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/api/smtp_certs")
        .join(name)
}

pub struct RawSmtp {
    r: BufReader<OwnedReadHalf>,
    pub w: OwnedWriteHalf,
}

/// A reply: its code and its lines' text (after the code and separator).
#[derive(Debug)]
pub struct Answer {
    pub code: u16,
    pub text: String,
}

impl RawSmtp {
    /// Connects and reads the greeting.
    pub async fn connect(addr: SocketAddr) -> RawSmtp {
        let s = TcpStream::connect(addr).await.expect("connect");
        let (r, w) = s.into_split();
        let mut c = RawSmtp {
            r: BufReader::new(r),
            w,
        };
        let greeting = c.read().await.expect("greeting");
        assert_eq!(greeting.code, 220, "{greeting:?}");
        c
    }

    /// Connects, says EHLO and authenticates with AUTH PLAIN.
    pub async fn login(addr: SocketAddr, key: &str) -> RawSmtp {
        let mut c = RawSmtp::connect(addr).await;
        c.expect("EHLO client.test", 250).await;
        let auth = STANDARD.encode(format!("\0herald\0{key}"));
        c.expect(&format!("AUTH PLAIN {auth}"), 235).await;
        c
    }

    /// Reads one reply; `None` when the server closed the connection.
    pub async fn read(&mut self) -> Option<Answer> {
        let mut text = String::new();
        loop {
            let mut line = String::new();
            let n = tokio::time::timeout(Duration::from_secs(10), self.r.read_line(&mut line))
                .await
                .expect("reply within 10 s")
                .ok()?;
            if n == 0 || line.len() < 4 {
                return None;
            }
            let code = line[..3].parse().expect("reply code");
            text.push_str(line[4..].trim_end());
            text.push('\n');
            if line.as_bytes()[3] == b' ' {
                return Some(Answer { code, text });
            }
        }
    }

    pub async fn send(&mut self, bytes: &[u8]) {
        self.w.write_all(bytes).await.expect("write");
    }

    /// Sends a command line and reads its reply.
    pub async fn cmd(&mut self, line: &str) -> Answer {
        self.send(format!("{line}\r\n").as_bytes()).await;
        self.read().await.expect("a reply")
    }

    /// [`RawSmtp::cmd`], asserting the code.
    pub async fn expect(&mut self, line: &str, code: u16) -> Answer {
        let a = self.cmd(line).await;
        assert_eq!(a.code, code, "{line}: {a:?}");
        a
    }

    /// MAIL, RCPT (each), DATA, then `data` as given (it must end the message itself);
    /// returns the final reply.
    pub async fn transaction(&mut self, from: &str, to: &[&str], data: &[u8]) -> Answer {
        self.expect(&format!("MAIL FROM:<{from}>"), 250).await;
        for r in to {
            self.expect(&format!("RCPT TO:<{r}>"), 250).await;
        }
        self.expect("DATA", 354).await;
        self.send(data).await;
        self.read().await.expect("a reply to the message")
    }
}

impl RawSmtp {
    /// One message, without panicking when the server goes away: the final reply, or `None`
    /// when the connection broke before it.
    pub async fn try_transaction(&mut self, from: &str, to: &str, data: &[u8]) -> Option<Answer> {
        let pipelined = format!("MAIL FROM:<{from}>\r\nRCPT TO:<{to}>\r\nDATA\r\n");
        self.w.write_all(pipelined.as_bytes()).await.ok()?;
        for want in [250, 250, 354] {
            let a = self.read().await?;
            if a.code != want {
                return Some(a);
            }
        }
        self.w.write_all(data).await.ok()?;
        self.read().await
    }
}
