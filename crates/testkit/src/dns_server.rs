//! An authoritative DNS server on `127.0.0.1`, UDP and TCP on one port, answering from
//! records the test writes. Built on hickory-proto's message codec, so what a resolver sees is
//! real DNS on the wire.
//!
//! Invariants:
//! - Names are matched case-insensitively, with or without the trailing dot; answers carry the
//!   name exactly as asked and a TTL of 0, so nothing downstream should cache them.
//! - A name that has no records and no descendant with records is NXDOMAIN; a name that
//!   exists (or is an empty non-terminal) without the asked type is NOERROR with no answers.
//! - A UDP answer larger than the client's advertised payload size (512 without EDNS) is sent
//!   truncated, so the client retries over TCP.
//! - While unresponsive, queries are read and dropped: the client sees a timeout, not an error.
//! - Record changes are visible to the next query.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use anyhow::Context as _;
use hickory_proto::op::{Edns, Message, MessageType, OpCode, ResponseCode};
use hickory_proto::rr::rdata::{A, MX, TXT};
use hickory_proto::rr::{DNSClass, Name, RData, Record, RecordType};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::task::{JoinHandle, JoinSet};

/// A running DNS server; it stops when dropped.
pub struct DnsServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
}

#[derive(Default)]
struct Shared {
    zone: Mutex<HashMap<String, RecordSets>>,
    unresponsive: AtomicBool,
}

#[derive(Clone, Default)]
struct RecordSets {
    /// Each record is its list of character-strings.
    txt: Vec<Vec<Vec<u8>>>,
    mx: Vec<(u16, Name)>,
    a: Vec<Ipv4Addr>,
}

impl RecordSets {
    fn is_empty(&self) -> bool {
        self.txt.is_empty() && self.mx.is_empty() && self.a.is_empty()
    }
}

/// The largest UDP answer we send when the client advertises nothing (RFC 1035).
const CLASSIC_UDP_PAYLOAD: usize = 512;
/// The payload size we advertise in our own EDNS record.
const SERVER_UDP_PAYLOAD: u16 = 1232;
/// One character-string holds at most 255 bytes.
const MAX_CHARACTER_STRING: usize = 255;

impl DnsServer {
    /// Starts the server on `127.0.0.1`, UDP and TCP on the same free port, with no records.
    pub async fn start() -> anyhow::Result<DnsServer> {
        let (tcp, udp) = bind_pair().await?;
        let addr = tcp
            .local_addr()
            .context("reading the DNS server's local address")?;
        let shared = Arc::new(Shared::default());
        let tasks = vec![
            tokio::spawn(serve_udp(udp, shared.clone())),
            tokio::spawn(serve_tcp(tcp, shared.clone())),
        ];
        Ok(DnsServer {
            addr,
            shared,
            tasks,
        })
    }

    /// The address to give a resolver (UDP and TCP).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Replaces the TXT records of `name`, one record per value. A value longer than 255 bytes
    /// becomes several character-strings of the same record.
    pub fn set_txt(&self, name: &str, values: Vec<String>) {
        let records = values
            .into_iter()
            .map(|value| {
                let bytes = value.into_bytes();
                if bytes.is_empty() {
                    vec![Vec::new()]
                } else {
                    bytes
                        .chunks(MAX_CHARACTER_STRING)
                        .map(<[u8]>::to_vec)
                        .collect()
                }
            })
            .collect();
        self.update(name, |sets| sets.txt = records);
    }

    /// Replaces the MX records of `name` with `(preference, exchange)` pairs.
    ///
    /// # Panics
    /// When an exchange is not a valid domain name (a mistake in the test itself).
    pub fn set_mx(&self, name: &str, exchanges: Vec<(u16, String)>) {
        let records = exchanges
            .into_iter()
            .map(|(preference, exchange)| {
                let mut exchange = Name::from_ascii(&exchange)
                    .unwrap_or_else(|error| panic!("invalid MX exchange {exchange:?}: {error}"));
                exchange.set_fqdn(true);
                (preference, exchange)
            })
            .collect();
        self.update(name, |sets| sets.mx = records);
    }

    /// Replaces the A records of `name`.
    pub fn set_a(&self, name: &str, addrs: Vec<Ipv4Addr>) {
        self.update(name, |sets| sets.a = addrs);
    }

    /// Removes every record of `name`; it answers NXDOMAIN afterwards (unless it has
    /// descendants).
    pub fn remove(&self, name: &str) {
        lock(&self.shared.zone).remove(&zone_key(name));
    }

    /// While on, queries get no answer at all, so resolvers time out.
    pub fn set_unresponsive(&self, on: bool) {
        self.shared.unresponsive.store(on, Ordering::SeqCst);
    }

    fn update(&self, name: &str, change: impl FnOnce(&mut RecordSets)) {
        let key = zone_key(name);
        let mut zone = lock(&self.shared.zone);
        let sets = zone.entry(key.clone()).or_default();
        change(sets);
        if sets.is_empty() {
            zone.remove(&key);
        }
    }
}

impl Drop for DnsServer {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Locks a mutex, ignoring poisoning (a panicking test thread must not hide the data).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The zone key of a name: lower-case, without the trailing dot.
fn zone_key(name: &str) -> String {
    name.trim().trim_end_matches('.').to_ascii_lowercase()
}

/// Binds TCP on a free port, then UDP on the same port, retrying when that UDP port is taken.
async fn bind_pair() -> anyhow::Result<(TcpListener, UdpSocket)> {
    let mut last_error = None;
    for _ in 0..20 {
        let tcp = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .context("binding the DNS server's TCP port")?;
        let addr = tcp
            .local_addr()
            .context("reading the DNS server's TCP address")?;
        match UdpSocket::bind(addr).await {
            Ok(udp) => return Ok((tcp, udp)),
            Err(error) => last_error = Some(error),
        }
    }
    Err(anyhow::anyhow!(
        "no port free for both UDP and TCP on 127.0.0.1: {last_error:?}"
    ))
}

async fn serve_udp(socket: UdpSocket, shared: Arc<Shared>) {
    let mut buffer = vec![0u8; 65_535];
    loop {
        let (len, peer) = match socket.recv_from(&mut buffer).await {
            Ok(received) => received,
            Err(error) => {
                // On Linux an ICMP "port unreachable" from an earlier reply can surface here.
                tracing::debug!(%error, "the DNS server's UDP receive failed");
                continue;
            }
        };
        if shared.unresponsive.load(Ordering::SeqCst) {
            continue;
        }
        let Some(reply) = answer(&shared, &buffer[..len], Transport::Udp) else {
            continue;
        };
        if let Err(error) = socket.send_to(&reply, peer).await {
            tracing::debug!(%error, %peer, "the DNS server's UDP reply failed");
        }
    }
}

async fn serve_tcp(listener: TcpListener, shared: Arc<Shared>) {
    // Dropping the set (when this task is aborted) aborts every connection task.
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(serve_tcp_connection(stream, shared.clone()));
                }
                Err(error) => {
                    tracing::warn!(%error, "the DNS server could not accept a TCP connection");
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// Serves length-prefixed queries on one TCP connection until the client closes it.
async fn serve_tcp_connection(mut stream: TcpStream, shared: Arc<Shared>) {
    let mut buffer = Vec::new();
    loop {
        let len = match stream.read_u16().await {
            Ok(len) => usize::from(len),
            Err(_) => return,
        };
        buffer.resize(len, 0);
        if stream.read_exact(&mut buffer).await.is_err() {
            return;
        }
        if shared.unresponsive.load(Ordering::SeqCst) {
            continue;
        }
        let Some(reply) = answer(&shared, &buffer, Transport::Tcp) else {
            continue;
        };
        let Ok(reply_len) = u16::try_from(reply.len()) else {
            tracing::warn!("a DNS answer exceeded 65,535 bytes; dropped");
            continue;
        };
        let mut framed = Vec::with_capacity(reply.len() + 2);
        framed.extend_from_slice(&reply_len.to_be_bytes());
        framed.extend_from_slice(&reply);
        if stream.write_all(&framed).await.is_err() {
            return;
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Transport {
    Udp,
    Tcp,
}

/// Encodes the reply to one query; `None` when the bytes are not a query we can answer.
fn answer(shared: &Shared, query_bytes: &[u8], transport: Transport) -> Option<Vec<u8>> {
    let query = match Message::from_vec(query_bytes) {
        Ok(query) => query,
        Err(error) => {
            tracing::debug!(%error, "the DNS server got an undecodable message");
            return None;
        }
    };
    if query.metadata.message_type != MessageType::Query {
        return None;
    }
    let mut reply = Message::response(query.metadata.id, query.metadata.op_code);
    reply.metadata.recursion_desired = query.metadata.recursion_desired;
    reply.metadata.checking_disabled = query.metadata.checking_disabled;
    reply.metadata.authoritative = true;
    reply.add_queries(query.queries.iter().cloned());
    if query.edns.is_some() {
        let mut edns = Edns::new();
        edns.set_max_payload(SERVER_UDP_PAYLOAD);
        reply.set_edns(edns);
    }

    match (query.metadata.op_code, query.queries.as_slice()) {
        (OpCode::Query, [question]) => {
            let zone = lock(&shared.zone);
            match lookup(&zone, question.name(), question.query_type()) {
                Some(records) => {
                    reply.add_answers(records);
                }
                None => reply.metadata.response_code = ResponseCode::NXDomain,
            }
        }
        (OpCode::Query, _) => reply.metadata.response_code = ResponseCode::FormErr,
        _ => reply.metadata.response_code = ResponseCode::NotImp,
    }

    let bytes = match reply.to_vec() {
        Ok(bytes) => bytes,
        Err(error) => {
            tracing::warn!(%error, "the DNS server could not encode an answer");
            return None;
        }
    };
    let limit = match &query.edns {
        Some(edns) => usize::from(edns.max_payload()).max(CLASSIC_UDP_PAYLOAD),
        None => CLASSIC_UDP_PAYLOAD,
    };
    if transport == Transport::Udp && bytes.len() > limit {
        return reply.truncate().to_vec().ok();
    }
    Some(bytes)
}

/// The answer records for a question, or `None` when the name does not exist.
fn lookup(
    zone: &HashMap<String, RecordSets>,
    name: &Name,
    query_type: RecordType,
) -> Option<Vec<Record>> {
    let key = zone_key(&name.to_ascii());
    let Some(sets) = zone.get(&key) else {
        // An empty non-terminal (a parent of a name with records) exists without records.
        let suffix = format!(".{key}");
        let exists = key.is_empty() || zone.keys().any(|known| known.ends_with(&suffix));
        return exists.then(Vec::new);
    };
    let record = |data: RData| {
        let mut record = Record::from_rdata(name.clone(), 0, data);
        record.dns_class = DNSClass::IN;
        record
    };
    let mut records = Vec::new();
    if matches!(query_type, RecordType::TXT | RecordType::ANY) {
        records.extend(sets.txt.iter().map(|strings| {
            record(RData::TXT(TXT::from_bytes(
                strings.iter().map(Vec::as_slice).collect(),
            )))
        }));
    }
    if matches!(query_type, RecordType::MX | RecordType::ANY) {
        records.extend(sets.mx.iter().map(|(preference, exchange)| {
            record(RData::MX(MX::new(*preference, exchange.clone())))
        }));
    }
    if matches!(query_type, RecordType::A | RecordType::ANY) {
        records.extend(sets.a.iter().map(|addr| record(RData::A(A(*addr)))));
    }
    Some(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zone_keys_ignore_case_and_the_trailing_dot() {
        assert_eq!(zone_key("Example.TEST."), "example.test");
        assert_eq!(zone_key("example.test"), "example.test");
    }

    #[test]
    fn empty_non_terminals_exist_without_records() {
        let mut zone = HashMap::new();
        zone.insert(
            "sel._domainkey.example.test".to_owned(),
            RecordSets {
                a: vec![Ipv4Addr::LOCALHOST],
                ..RecordSets::default()
            },
        );
        let parent = Name::from_ascii("_domainkey.example.test.").expect("valid name");
        assert_eq!(lookup(&zone, &parent, RecordType::TXT), Some(Vec::new()));
        let other = Name::from_ascii("other.example.test.").expect("valid name");
        assert_eq!(lookup(&zone, &other, RecordType::TXT), None);
    }
}
