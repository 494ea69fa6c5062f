//! The DNS server queried with raw DNS messages over UDP and TCP.
#![allow(clippy::unwrap_used)]

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use herald_testkit::dns_server::DnsServer;
use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::{Name, RData, RecordType};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};

fn query(name: &str, record_type: RecordType, edns: bool) -> Message {
    let mut message = Message::new(4242, MessageType::Query, OpCode::Query);
    message.metadata.recursion_desired = true;
    message.add_query(Query::query(Name::from_ascii(name).unwrap(), record_type));
    if edns {
        message.set_edns(Edns::new());
    }
    message
}

/// Sends over UDP; `None` when no answer came within 300 ms.
async fn ask_udp(addr: SocketAddr, message: &Message) -> Option<Message> {
    let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    socket
        .send_to(&message.to_vec().unwrap(), addr)
        .await
        .unwrap();
    let mut buffer = vec![0; 65_535];
    let len = tokio::time::timeout(Duration::from_millis(300), socket.recv(&mut buffer))
        .await
        .ok()?
        .unwrap();
    Some(Message::from_vec(&buffer[..len]).unwrap())
}

async fn ask_tcp(addr: SocketAddr, message: &Message) -> Message {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let bytes = message.to_vec().unwrap();
    stream.write_u16(bytes.len() as u16).await.unwrap();
    stream.write_all(&bytes).await.unwrap();
    let len = stream.read_u16().await.unwrap();
    let mut buffer = vec![0; usize::from(len)];
    stream.read_exact(&mut buffer).await.unwrap();
    Message::from_vec(&buffer).unwrap()
}

fn txt_strings(message: &Message) -> Vec<Vec<String>> {
    message
        .answers
        .iter()
        .filter_map(|record| match &record.data {
            RData::TXT(txt) => Some(
                txt.txt_data
                    .iter()
                    .map(|s| String::from_utf8_lossy(s).into_owned())
                    .collect(),
            ),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn answers_txt_over_udp_and_tcp_case_insensitively() {
    let dns = DnsServer::start().await.unwrap();
    dns.set_txt("Example.TEST.", vec!["v=spf1 -all".into(), "other".into()]);

    let reply = ask_udp(dns.addr(), &query("example.test.", RecordType::TXT, false))
        .await
        .expect("an answer");
    assert_eq!(reply.metadata.id, 4242);
    assert_eq!(reply.metadata.message_type, MessageType::Response);
    assert_eq!(reply.metadata.response_code, ResponseCode::NoError);
    assert_eq!(txt_strings(&reply), [vec!["v=spf1 -all"], vec!["other"]]);

    let reply = ask_tcp(dns.addr(), &query("EXAMPLE.test.", RecordType::TXT, true)).await;
    assert_eq!(txt_strings(&reply).len(), 2);
    // Answers carry the zone's (lower-case) spelling of the name.
    assert_eq!(reply.answers[0].name.to_ascii(), "example.test.");
    assert_eq!(reply.answers[0].ttl, 0);
}

#[tokio::test]
async fn long_txt_values_are_split_into_character_strings() {
    let dns = DnsServer::start().await.unwrap();
    let long = "k".repeat(600);
    dns.set_txt("sel._domainkey.example.test", vec![long.clone()]);
    let reply = ask_tcp(
        dns.addr(),
        &query("sel._domainkey.example.test.", RecordType::TXT, true),
    )
    .await;
    let strings = txt_strings(&reply);
    assert_eq!(strings.len(), 1);
    assert_eq!(
        strings[0].iter().map(String::len).collect::<Vec<_>>(),
        [255, 255, 90]
    );
    assert_eq!(strings[0].concat(), long);
}

#[tokio::test]
async fn oversized_udp_answers_are_truncated() {
    let dns = DnsServer::start().await.unwrap();
    dns.set_txt("big.example.test", vec!["x".repeat(400), "y".repeat(400)]);
    let reply = ask_udp(
        dns.addr(),
        &query("big.example.test.", RecordType::TXT, false),
    )
    .await
    .expect("an answer");
    assert!(reply.metadata.truncation);
    // What fits may be sent along with the truncation bit (RFC 2181 §9).
    assert!(reply.answers.len() < 2);
    let reply = ask_tcp(
        dns.addr(),
        &query("big.example.test.", RecordType::TXT, false),
    )
    .await;
    assert!(!reply.metadata.truncation);
    assert_eq!(reply.answers.len(), 2);
}

#[tokio::test]
async fn mx_and_a_records() {
    let dns = DnsServer::start().await.unwrap();
    dns.set_mx(
        "example.test",
        vec![
            (10, "mx1.example.test".into()),
            (20, "mx2.example.test.".into()),
        ],
    );
    dns.set_a("mx1.example.test", vec![Ipv4Addr::new(192, 0, 2, 1)]);

    let reply = ask_udp(dns.addr(), &query("example.test.", RecordType::MX, true))
        .await
        .expect("an answer");
    let mx: Vec<_> = reply
        .answers
        .iter()
        .filter_map(|record| match &record.data {
            RData::MX(mx) => Some((mx.preference, mx.exchange.to_ascii())),
            _ => None,
        })
        .collect();
    assert_eq!(
        mx,
        [
            (10, "mx1.example.test.".to_owned()),
            (20, "mx2.example.test.".to_owned())
        ]
    );

    let reply = ask_udp(dns.addr(), &query("mx1.example.test.", RecordType::A, true))
        .await
        .expect("an answer");
    assert!(matches!(&reply.answers[0].data, RData::A(a) if a.0 == Ipv4Addr::new(192, 0, 2, 1)));
}

#[tokio::test]
async fn nxdomain_for_unknown_names_and_noerror_for_other_types() {
    let dns = DnsServer::start().await.unwrap();
    dns.set_txt("sel._domainkey.example.test", vec!["v=DKIM1; p=abc".into()]);

    let unknown = ask_udp(
        dns.addr(),
        &query("nope.example.test.", RecordType::TXT, true),
    )
    .await
    .expect("an answer");
    assert_eq!(unknown.metadata.response_code, ResponseCode::NXDomain);

    let other_type = ask_udp(
        dns.addr(),
        &query("sel._domainkey.example.test.", RecordType::MX, true),
    )
    .await
    .expect("an answer");
    assert_eq!(other_type.metadata.response_code, ResponseCode::NoError);
    assert!(other_type.answers.is_empty());

    let parent = ask_udp(
        dns.addr(),
        &query("_domainkey.example.test.", RecordType::TXT, true),
    )
    .await
    .expect("an answer");
    assert_eq!(parent.metadata.response_code, ResponseCode::NoError);

    dns.remove("SEL._domainkey.example.test.");
    let removed = ask_udp(
        dns.addr(),
        &query("sel._domainkey.example.test.", RecordType::TXT, true),
    )
    .await
    .expect("an answer");
    assert_eq!(removed.metadata.response_code, ResponseCode::NXDomain);
}

#[tokio::test]
async fn unresponsive_server_answers_nothing_until_switched_back() {
    let dns = DnsServer::start().await.unwrap();
    dns.set_txt("example.test", vec!["hello".into()]);
    dns.set_unresponsive(true);
    assert!(
        ask_udp(dns.addr(), &query("example.test.", RecordType::TXT, true))
            .await
            .is_none()
    );
    let tcp = tokio::time::timeout(
        Duration::from_millis(300),
        ask_tcp(dns.addr(), &query("example.test.", RecordType::TXT, true)),
    )
    .await;
    assert!(tcp.is_err(), "TCP answered while unresponsive");

    dns.set_unresponsive(false);
    let reply = ask_udp(dns.addr(), &query("example.test.", RecordType::TXT, true))
        .await
        .expect("an answer");
    assert_eq!(txt_strings(&reply), [vec!["hello"]]);
}
