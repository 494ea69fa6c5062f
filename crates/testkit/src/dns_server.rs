//! An authoritative DNS server on `127.0.0.1` for tests: hickory-server's [`Server`] (UDP and
//! TCP on one port) answering from its [`Catalog`] with one in-memory root zone holding the
//! records the test writes. What a resolver sees is a real DNS server on the wire.
//!
//! Invariants:
//! - Names are matched case-insensitively, with or without the trailing dot; records carry a
//!   TTL of 0 (and the zone's SOA a negative TTL of 0), so nothing downstream should cache them.
//! - A name with no records and no descendant with records is NXDOMAIN; a name that exists (or
//!   is an empty non-terminal) without the asked type is NOERROR with no answers.
//! - A UDP answer larger than the client's advertised EDNS payload is sent truncated, so the
//!   client retries over TCP.
//! - While unresponsive, queries are read and dropped: the client sees a timeout, not an error.
//! - Record changes are visible to the next query.
//!
//! Hand-written parts, and why:
//! - Changing records: hickory's in-memory zone handler is changed through an async lock, and
//!   tests change records from synchronous code (often inside a single-threaded runtime, where
//!   blocking on that lock is not allowed). So the records live here under a plain mutex and
//!   every change builds a new (tiny) zone and swaps the catalog the server reads.
//! - The unresponsive switch: hickory has no such mode; the handler returns without replying.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;

use anyhow::Context as _;
use hickory_proto::op::{Header, HeaderCounts, MessageType, Metadata};
use hickory_proto::rr::rdata::{A, AAAA, CNAME, MX, NS, SOA, TXT};
use hickory_proto::rr::{LowerName, Name, RData, RecordSet, RecordType, RrKey};
use hickory_server::Server;
use hickory_server::net::runtime::Time;
use hickory_server::server::{Request, RequestHandler, ResponseHandler, ResponseInfo};
use hickory_server::store::in_memory::InMemoryZoneHandler;
use hickory_server::zone_handler::{AxfrPolicy, Catalog, ZoneHandler, ZoneType};
use tokio::net::{TcpListener, UdpSocket};

/// One character-string holds at most 255 bytes.
const MAX_CHARACTER_STRING: usize = 255;
/// How long an idle TCP connection is kept.
const TCP_IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// Outgoing responses buffered per TCP connection.
const TCP_RESPONSE_BUFFER: usize = 32;

/// A running DNS server; it stops when dropped.
pub struct DnsServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    /// Owns the listener tasks: dropping it aborts them.
    _server: Server<Handler>,
}

struct Shared {
    /// The records the test wrote, by owner name and type.
    records: Mutex<BTreeMap<RrKey, RecordSet>>,
    /// The catalog built from `records`, replaced on every change.
    catalog: RwLock<Arc<Catalog>>,
    unresponsive: AtomicBool,
    /// Queries received (answered or not).
    queries: AtomicUsize,
}

impl DnsServer {
    /// Starts the server on `127.0.0.1`, UDP and TCP on the same free port, with no records.
    pub async fn start() -> anyhow::Result<DnsServer> {
        let (tcp, udp) = bind_pair().await?;
        let addr = tcp
            .local_addr()
            .context("reading the DNS server's local address")?;
        let records = BTreeMap::new();
        let shared = Arc::new(Shared {
            catalog: RwLock::new(Arc::new(catalog(&records)?)),
            records: Mutex::new(records),
            unresponsive: AtomicBool::new(false),
            queries: AtomicUsize::new(0),
        });
        let mut server = Server::new(Handler(shared.clone()));
        server.register_socket(udp);
        server.register_listener(tcp, TCP_IDLE_TIMEOUT, TCP_RESPONSE_BUFFER);
        Ok(DnsServer {
            addr,
            shared,
            _server: server,
        })
    }

    /// The address to give a resolver (UDP and TCP).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Replaces the TXT records of `name`, one record per value. A value longer than 255 bytes
    /// becomes several character-strings of the same record.
    pub fn set_txt(&self, name: &str, values: Vec<String>) {
        let data = values
            .into_iter()
            .map(|value| {
                let bytes = value.into_bytes();
                let strings: Vec<&[u8]> = if bytes.is_empty() {
                    vec![&[]]
                } else {
                    bytes.chunks(MAX_CHARACTER_STRING).collect()
                };
                RData::TXT(TXT::from_bytes(strings))
            })
            .collect();
        self.set(name, RecordType::TXT, data);
    }

    /// Replaces the MX records of `name` with `(preference, exchange)` pairs; the exchange
    /// `"."` makes a null MX (RFC 7505).
    ///
    /// # Panics
    /// When an exchange is not a valid domain name (a mistake in the test itself).
    pub fn set_mx(&self, name: &str, exchanges: Vec<(u16, String)>) {
        let data = exchanges
            .into_iter()
            .map(|(preference, exchange)| RData::MX(MX::new(preference, fqdn(&exchange))))
            .collect();
        self.set(name, RecordType::MX, data);
    }

    /// Replaces the A records of `name`.
    pub fn set_a(&self, name: &str, addrs: Vec<Ipv4Addr>) {
        let data = addrs.into_iter().map(|a| RData::A(A(a))).collect();
        self.set(name, RecordType::A, data);
    }

    /// Replaces the AAAA records of `name`.
    pub fn set_aaaa(&self, name: &str, addrs: Vec<Ipv6Addr>) {
        let data = addrs.into_iter().map(|a| RData::AAAA(AAAA(a))).collect();
        self.set(name, RecordType::AAAA, data);
    }

    /// Replaces the NS records of `name`.
    ///
    /// # Panics
    /// When a host is not a valid domain name.
    pub fn set_ns(&self, name: &str, hosts: Vec<String>) {
        let data = hosts.iter().map(|h| RData::NS(NS(fqdn(h)))).collect();
        self.set(name, RecordType::NS, data);
    }

    /// Makes `name` an alias of `target` (a CNAME), or removes the alias when `None`.
    ///
    /// # Panics
    /// When the target is not a valid domain name.
    pub fn set_cname(&self, name: &str, target: Option<&str>) {
        let data = target.map(|t| RData::CNAME(CNAME(fqdn(t))));
        self.set(name, RecordType::CNAME, data.into_iter().collect());
    }

    /// Removes every record of `name`; it answers NXDOMAIN afterwards (unless it has
    /// descendants).
    pub fn remove(&self, name: &str) {
        let owner = LowerName::new(&fqdn(name));
        self.change(|records| records.retain(|key, _| key.name != owner));
    }

    /// While on, queries get no answer at all, so resolvers time out.
    pub fn set_unresponsive(&self, on: bool) {
        self.shared.unresponsive.store(on, Ordering::SeqCst);
    }

    /// How many queries the server received so far, answered or not.
    pub fn queries(&self) -> usize {
        self.shared.queries.load(Ordering::SeqCst)
    }

    /// Waits until the server has received at least `n` queries in all; false on timeout.
    pub async fn wait_for_queries(&self, n: usize, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        while self.queries() < n {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        true
    }

    /// Replaces the records of one type at `name` (none removes them).
    fn set(&self, name: &str, record_type: RecordType, data: Vec<RData>) {
        let owner = fqdn(name);
        let key = RrKey::new(LowerName::new(&owner), record_type);
        self.change(|records| {
            if data.is_empty() {
                records.remove(&key);
                return;
            }
            let mut set = RecordSet::with_ttl(owner, record_type, 0);
            for rdata in data {
                set.add_rdata(rdata);
            }
            records.insert(key, set);
        });
    }

    /// Applies a change to the records and publishes the zone built from them.
    ///
    /// # Panics
    /// When the zone cannot be built (a record the in-memory zone refuses: a test mistake).
    fn change(&self, change: impl FnOnce(&mut BTreeMap<RrKey, RecordSet>)) {
        let mut records = lock(&self.shared.records);
        change(&mut records);
        let catalog = catalog(&records).unwrap_or_else(|error| panic!("{error:#}"));
        *self
            .shared
            .catalog
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(catalog);
    }
}

/// Serves from the current catalog, or stays silent while unresponsive.
struct Handler(Arc<Shared>);

#[async_trait::async_trait]
impl RequestHandler for Handler {
    async fn handle_request<R: ResponseHandler, T: Time>(
        &self,
        request: &Request,
        response_handle: R,
    ) -> ResponseInfo {
        self.0.queries.fetch_add(1, Ordering::SeqCst);
        if self.0.unresponsive.load(Ordering::SeqCst) {
            // Nothing is sent; the returned header only feeds the server's own logging.
            let metadata = Metadata::new(
                request.metadata.id,
                MessageType::Response,
                request.metadata.op_code,
            );
            return ResponseInfo::from(Header {
                metadata,
                counts: HeaderCounts::default(),
            });
        }
        let catalog = self
            .0
            .catalog
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        catalog
            .handle_request::<R, T>(request, response_handle)
            .await
    }
}

/// A catalog serving one root zone: the test's records plus the zone's SOA.
fn catalog(records: &BTreeMap<RrKey, RecordSet>) -> anyhow::Result<Catalog> {
    let root = Name::root();
    let mut zone = records.clone();
    let mut soa = RecordSet::with_ttl(root.clone(), RecordType::SOA, 0);
    soa.add_rdata(RData::SOA(SOA::new(
        fqdn("ns.herald.test"),
        fqdn("hostmaster.herald.test"),
        1,
        3600,
        600,
        86_400,
        0,
    )));
    zone.insert(RrKey::new(LowerName::new(&root), RecordType::SOA), soa);
    let handler = InMemoryZoneHandler::<hickory_server::net::runtime::TokioRuntimeProvider>::new(
        root.clone(),
        zone,
        ZoneType::Primary,
        AxfrPolicy::Deny,
    )
    .map_err(|error| anyhow::anyhow!("building the test DNS zone: {error}"))?;
    let mut catalog = Catalog::new();
    catalog.upsert(
        LowerName::new(&root),
        vec![Arc::new(handler) as Arc<dyn ZoneHandler>],
    );
    Ok(catalog)
}

/// A name from a test, fully qualified and lower-cased.
///
/// # Panics
/// When `name` is not a valid domain name (a mistake in the test itself).
fn fqdn(name: &str) -> Name {
    let mut parsed = Name::from_ascii(name.trim().to_ascii_lowercase())
        .unwrap_or_else(|error| panic!("invalid DNS name {name:?}: {error}"));
    parsed.set_fqdn(true);
    parsed
}

/// Locks a mutex, ignoring poisoning (a panicking test thread must not hide the data).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
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
