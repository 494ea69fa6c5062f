//! Tests of the MIME builder: structure, encodings, injection refusals and line lengths.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use chrono::TimeZone;
use mail_parser::{MessageParser, MimeHeaders};

fn base() -> OutgoingMessage {
    OutgoingMessage {
        message_id: "0192f00d-1111-7000-8000-000000000042@mail.example.com".into(),
        date: chrono::Utc.with_ymd_and_hms(2025, 3, 4, 5, 6, 7).unwrap(),
        from: Mailbox {
            name: Some("Acme News".into()),
            email: "news@example.com".into(),
        },
        to: Mailbox {
            name: Some("Jane Doe".into()),
            email: "jane@example.org".into(),
        },
        reply_to: None,
        subject: "Hello".into(),
        html: "<p>Hi</p>".into(),
        text: "Hi".into(),
        headers: vec![],
        list_unsubscribe: None,
        attachments: vec![],
    }
}

fn check_wire_format(raw: &[u8]) {
    assert!(raw.is_ascii(), "output must be 7-bit");
    for (i, b) in raw.iter().enumerate() {
        if *b == b'\n' {
            assert!(i > 0 && raw[i - 1] == b'\r', "bare LF at {i}");
        }
        if *b == b'\r' {
            assert_eq!(raw.get(i + 1), Some(&b'\n'), "bare CR at {i}");
        }
    }
    for line in raw.split(|&b| b == b'\n') {
        assert!(line.len() <= 999, "line too long");
    }
}

fn count_header(raw: &[u8], name: &str) -> usize {
    let text = String::from_utf8_lossy(raw);
    let head = text.split("\r\n\r\n").next().unwrap();
    head.split("\r\n")
        .filter(|l| {
            l.split_once(':')
                .is_some_and(|(n, _)| n.eq_ignore_ascii_case(name))
        })
        .count()
}

#[test]
fn simple_alternative_with_headers() {
    let mut m = base();
    m.reply_to = Some("Support <support@example.com>".into());
    m.list_unsubscribe = Some(ListUnsubscribe {
        url: "https://herald.example.com/unsubscribe/abc.def".into(),
        one_click: true,
    });
    m.headers = vec![("X-Campaign-Id".into(), "c-42".into())];
    m.text = "line one\nline two\n".into();
    let raw = build(&m).unwrap();
    check_wire_format(&raw);
    for h in [
        "From",
        "To",
        "Subject",
        "Date",
        "Message-ID",
        "MIME-Version",
    ] {
        assert_eq!(count_header(&raw, h), 1, "{h}");
    }

    let p = MessageParser::default().parse(&raw).unwrap();
    assert_eq!(p.subject(), Some("Hello"));
    let from = p.from().unwrap().first().unwrap();
    assert_eq!(from.name(), Some("Acme News"));
    assert_eq!(from.address(), Some("news@example.com"));
    let to = p.to().unwrap().first().unwrap();
    assert_eq!(to.address(), Some("jane@example.org"));
    assert_eq!(
        p.reply_to().unwrap().first().unwrap().address(),
        Some("support@example.com")
    );
    assert_eq!(
        p.message_id(),
        Some("0192f00d-1111-7000-8000-000000000042@mail.example.com")
    );
    assert_eq!(p.date().unwrap().to_rfc3339(), "2025-03-04T05:06:07Z");
    assert_eq!(
        p.header_raw("List-Unsubscribe").unwrap().trim(),
        "<https://herald.example.com/unsubscribe/abc.def>"
    );
    assert_eq!(
        p.header_raw("List-Unsubscribe-Post").unwrap().trim(),
        "List-Unsubscribe=One-Click"
    );
    assert_eq!(p.header_raw("X-Campaign-Id").unwrap().trim(), "c-42");

    let ct = p.content_type().unwrap();
    assert_eq!(ct.ctype(), "multipart");
    assert_eq!(ct.subtype(), Some("alternative"));
    assert_eq!(p.text_body_count(), 1);
    assert_eq!(p.html_body_count(), 1);
    assert_eq!(
        p.body_text(0).unwrap().replace("\r\n", "\n"),
        "line one\nline two\n"
    );
    assert_eq!(p.body_html(0).unwrap(), "<p>Hi</p>");
    assert_eq!(p.attachment_count(), 0);
    // text/plain comes first.
    let text = String::from_utf8_lossy(&raw);
    assert!(text.find("text/plain").unwrap() < text.find("text/html").unwrap());
}

#[test]
fn no_one_click_header_without_one_click() {
    let mut m = base();
    m.list_unsubscribe = Some(ListUnsubscribe {
        url: "mailto:unsub@example.com".into(),
        one_click: false,
    });
    let raw = build(&m).unwrap();
    let p = MessageParser::default().parse(&raw).unwrap();
    assert!(p.header_raw("List-Unsubscribe").is_some());
    assert!(p.header_raw("List-Unsubscribe-Post").is_none());
}

#[test]
fn unicode_subject_names_and_long_lines() {
    let mut m = base();
    m.subject = "Grüße aus Köln — 日本語のテキスト 🎉 "
        .repeat(6)
        .trim()
        .to_owned();
    m.from.name = Some("Zoë Æther, \"Ltd\"".into());
    m.to.name = Some("Łukasz Żółć".into());
    m.text = format!("{}\nÉtoile ✨\n", "word ".repeat(400));
    m.html = format!("<p>{}</p><p>Ünïcödé</p>", "x".repeat(3000));
    m.headers = vec![("X-Note".into(), "naïve café ".repeat(30))];
    let raw = build(&m).unwrap();
    check_wire_format(&raw);
    let text = String::from_utf8_lossy(&raw);
    assert!(text.contains("Subject: =?utf-8?"), "RFC 2047 subject");

    let p = MessageParser::default().parse(&raw).unwrap();
    assert_eq!(p.subject(), Some(m.subject.as_str()));
    assert_eq!(
        p.from().unwrap().first().unwrap().name(),
        Some("Zoë Æther, \"Ltd\"")
    );
    assert_eq!(p.to().unwrap().first().unwrap().name(), Some("Łukasz Żółć"));
    assert_eq!(
        p.body_text(0).unwrap().replace("\r\n", "\n"),
        m.text.as_str()
    );
    assert_eq!(p.body_html(0).unwrap(), m.html.as_str());
    // Unknown headers are only RFC 2047-decoded when asked for.
    let note = MessageParser::new()
        .header_text(mail_parser::HeaderName::Other("X-Note".into()))
        .parse(&raw)
        .unwrap();
    assert_eq!(
        note.header("X-Note").unwrap().as_text().unwrap().trim(),
        m.headers[0].1.trim()
    );
}

#[test]
fn attachments_inline_and_mixed() {
    let png: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
    let pdf = b"%PDF-1.4 binary \x00\x01\x02\xff".to_vec();
    let mut m = base();
    m.html = "<p><img src=\"cid:logo@herald\"></p>".into();
    m.attachments = vec![
        Attachment {
            filename: "logo.png".into(),
            content_type: "image/png".into(),
            content: png.clone(),
            content_id: Some("logo@herald".into()),
        },
        Attachment {
            filename: "Rechnung März.pdf".into(),
            content_type: "application/pdf".into(),
            content: pdf.clone(),
            content_id: None,
        },
    ];
    let raw = build(&m).unwrap();
    check_wire_format(&raw);
    let p = MessageParser::default().parse(&raw).unwrap();

    let ct = p.content_type().unwrap();
    assert_eq!((ct.ctype(), ct.subtype()), ("multipart", Some("mixed")));
    let text = String::from_utf8_lossy(&raw);
    let mixed = text.find("multipart/mixed").unwrap();
    let related = text.find("multipart/related").unwrap();
    let alt = text.find("multipart/alternative").unwrap();
    assert!(
        mixed < related && related < alt,
        "mixed > related > alternative"
    );

    assert_eq!(p.text_body_count(), 1);
    assert_eq!(p.html_body_count(), 1);
    assert_eq!(p.body_html(0).unwrap(), m.html.as_str());
    assert_eq!(p.attachment_count(), 2);
    let inline = p
        .attachments()
        .find(|a| a.content_id().is_some())
        .expect("inline part");
    assert_eq!(inline.content_id(), Some("logo@herald"));
    assert_eq!(inline.contents(), png.as_slice());
    assert!(inline.content_disposition().unwrap().is_inline());
    let ct = inline.content_type().unwrap();
    assert_eq!((ct.ctype(), ct.subtype()), ("image", Some("png")));

    let file = p
        .attachments()
        .find(|a| a.content_id().is_none())
        .expect("regular attachment");
    assert_eq!(file.attachment_name(), Some("Rechnung März.pdf"));
    assert_eq!(file.contents(), pdf.as_slice());
    assert!(file.content_disposition().unwrap().is_attachment());
}

#[test]
fn inline_only_is_related_and_attachment_only_is_mixed() {
    let mut m = base();
    m.attachments = vec![Attachment {
        filename: "a.gif".into(),
        content_type: "image/gif".into(),
        content: b"GIF89a".to_vec(),
        content_id: Some("a".into()),
    }];
    let raw = build(&m).unwrap();
    let p = MessageParser::default().parse(&raw).unwrap();
    let ct = p.content_type().unwrap();
    assert_eq!(ct.subtype(), Some("related"));

    m.attachments[0].content_id = None;
    let raw = build(&m).unwrap();
    let p = MessageParser::default().parse(&raw).unwrap();
    assert_eq!(p.content_type().unwrap().subtype(), Some("mixed"));
    assert!(!String::from_utf8_lossy(&raw).contains("multipart/related"));
    assert_eq!(p.attachment(0).unwrap().contents(), b"GIF89a");
}

#[test]
fn line_endings_and_ascii_binary_attachments() {
    let mut m = base();
    m.text = "a\rb\r\nc\nd\0e".into();
    m.html = "<p>\n\r</p>".into();
    let csv = b"id,name\n1,a\r2,b\x00\n".to_vec();
    m.attachments = vec![Attachment {
        filename: "data.csv".into(),
        content_type: "text/csv".into(),
        content: csv.clone(),
        content_id: None,
    }];
    let raw = build(&m).unwrap();
    check_wire_format(&raw);
    let p = MessageParser::default().parse(&raw).unwrap();
    assert_eq!(p.body_text(0).unwrap(), "a\r\nb\r\nc\r\nde");
    assert_eq!(p.attachment(0).unwrap().contents(), csv.as_slice());
}

#[test]
fn single_part_bodies() {
    let mut m = base();
    m.text = String::new();
    let p_raw = build(&m).unwrap();
    let p = MessageParser::default().parse(&p_raw).unwrap();
    assert_eq!(p.content_type().unwrap().subtype(), Some("html"));
    assert_eq!(p.body_html(0).unwrap().trim_end(), "<p>Hi</p>");

    let mut m = base();
    m.html = String::new();
    let p_raw = build(&m).unwrap();
    let p = MessageParser::default().parse(&p_raw).unwrap();
    assert_eq!(p.content_type().unwrap().subtype(), Some("plain"));
    assert_eq!(p.body_text(0).unwrap().trim_end(), "Hi");
}

#[test]
fn threading_headers_pass_and_every_reserved_name_is_refused() {
    let mut m = base();
    m.headers = vec![
        ("In-Reply-To".into(), "<a@example.com>".into()),
        (
            "References".into(),
            "<r@example.com> <a@example.com>".into(),
        ),
    ];
    let raw = build(&m).unwrap();
    let p = MessageParser::default().parse(&raw).unwrap();
    assert_eq!(p.in_reply_to().as_text(), Some("a@example.com"));
    assert_eq!(
        p.references().as_text_list().map(|l| l.len()),
        Some(2),
        "{}",
        String::from_utf8_lossy(&raw)
    );
    for name in herald_core::headers::RESERVED {
        let mut m = base();
        m.headers = vec![(name.to_ascii_lowercase(), "v".into())];
        assert!(
            matches!(build(&m), Err(MimeError::ReservedHeader(_))),
            "{name}"
        );
    }
}

#[test]
fn refuses_injection_and_bad_input() {
    type Case = (OutgoingMessage, fn(&MimeError) -> bool);
    let cases: Vec<Case> = vec![
        (
            OutgoingMessage {
                headers: vec![("X-Evil".into(), "a\r\nBcc: victim@example.com".into())],
                ..base()
            },
            |e| matches!(e, MimeError::InvalidHeaderValue(..)),
        ),
        (
            OutgoingMessage {
                headers: vec![("X-Evil\nBcc".into(), "a".into())],
                ..base()
            },
            |e| matches!(e, MimeError::InvalidHeaderName(_)),
        ),
        (
            OutgoingMessage {
                headers: vec![("X Bad".into(), "a".into())],
                ..base()
            },
            |e| matches!(e, MimeError::InvalidHeaderName(_)),
        ),
        (
            OutgoingMessage {
                headers: vec![("From".into(), "x@example.com".into())],
                ..base()
            },
            |e| matches!(e, MimeError::ReservedHeader(_)),
        ),
        (
            OutgoingMessage {
                headers: vec![("dkim-signature".into(), "v=1".into())],
                ..base()
            },
            |e| matches!(e, MimeError::ReservedHeader(_)),
        ),
        (
            OutgoingMessage {
                subject: "hi\nBcc: x@example.com".into(),
                ..base()
            },
            |e| matches!(e, MimeError::InvalidCharacters(_)),
        ),
        (
            OutgoingMessage {
                from: Mailbox {
                    name: Some("A\r\nB".into()),
                    email: "a@example.com".into(),
                },
                ..base()
            },
            |e| matches!(e, MimeError::InvalidCharacters(_)),
        ),
        (
            OutgoingMessage {
                to: Mailbox {
                    name: None,
                    email: "not an address".into(),
                },
                ..base()
            },
            |e| matches!(e, MimeError::InvalidAddress { field: "To", .. }),
        ),
        (
            OutgoingMessage {
                reply_to: Some("nope".into()),
                ..base()
            },
            |e| {
                matches!(
                    e,
                    MimeError::InvalidAddress {
                        field: "Reply-To",
                        ..
                    }
                )
            },
        ),
        (
            OutgoingMessage {
                message_id: "<abc@example.com>".into(),
                ..base()
            },
            |e| matches!(e, MimeError::InvalidMessageId(_)),
        ),
        (
            OutgoingMessage {
                message_id: "no-at-sign".into(),
                ..base()
            },
            |e| matches!(e, MimeError::InvalidMessageId(_)),
        ),
        (
            OutgoingMessage {
                list_unsubscribe: Some(ListUnsubscribe {
                    url: "https://x.example/u>\r\nBcc: y".into(),
                    one_click: true,
                }),
                ..base()
            },
            |e| matches!(e, MimeError::InvalidUnsubscribeUrl(_)),
        ),
        (
            OutgoingMessage {
                attachments: vec![Attachment {
                    filename: "a.txt".into(),
                    content_type: "not a type".into(),
                    content: vec![],
                    content_id: None,
                }],
                ..base()
            },
            |e| matches!(e, MimeError::InvalidContentType(_)),
        ),
        (
            OutgoingMessage {
                attachments: vec![Attachment {
                    filename: "a\r\n.txt".into(),
                    content_type: "text/plain".into(),
                    content: vec![],
                    content_id: None,
                }],
                ..base()
            },
            |e| matches!(e, MimeError::LineBreak(_)),
        ),
        (
            OutgoingMessage {
                attachments: vec![Attachment {
                    filename: "a.png".into(),
                    content_type: "image/png".into(),
                    content: vec![],
                    content_id: Some("a b".into()),
                }],
                ..base()
            },
            |e| matches!(e, MimeError::InvalidContentId(_)),
        ),
        (
            OutgoingMessage {
                date: chrono::Utc.with_ymd_and_hms(1960, 1, 1, 0, 0, 0).unwrap(),
                ..base()
            },
            |e| matches!(e, MimeError::InvalidDate(_)),
        ),
        (
            OutgoingMessage {
                subject: "red \u{1b}[31m alert".into(),
                ..base()
            },
            |e| matches!(e, MimeError::InvalidCharacters(_)),
        ),
        (
            OutgoingMessage {
                headers: vec![("X-Note".into(), "a\u{b}b".into())],
                ..base()
            },
            |e| matches!(e, MimeError::InvalidHeaderValue(..)),
        ),
        (
            OutgoingMessage {
                headers: vec![("X".repeat(77), "v".into())],
                ..base()
            },
            |e| matches!(e, MimeError::InvalidHeaderName(_)),
        ),
    ];
    for (i, (m, check)) in cases.into_iter().enumerate() {
        match build(&m) {
            Ok(raw) => panic!("case {i} accepted:\n{}", String::from_utf8_lossy(&raw)),
            Err(e) => assert!(check(&e), "case {i}: unexpected error {e:?}"),
        }
    }
}

/// The decoded value of a custom header (mail-parser decodes RFC 2047 only when asked).
fn custom_header(raw: &[u8], name: &str) -> String {
    let parsed = MessageParser::new()
        .header_text(mail_parser::HeaderName::Other(name.to_owned().into()))
        .parse(raw)
        .unwrap();
    parsed
        .header(name)
        .and_then(|h| h.as_text())
        .unwrap_or_default()
        .to_owned()
}

fn longest_line(raw: &[u8]) -> usize {
    raw.split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l).len())
        .max()
        .unwrap_or(0)
}

#[test]
fn subjects_of_every_allowed_length_without_spaces_are_built_and_decode_exactly() {
    for subject in [
        "x".repeat(998),
        "x".repeat(990),
        "ü".repeat(998),
        format!("{}{}", "a".repeat(900), "日本".repeat(49)),
        format!("{} tail", "y".repeat(993)),
        "=?utf-8?q?looks_encoded?=".repeat(39),
    ] {
        let m = OutgoingMessage {
            subject: subject.clone(),
            ..base()
        };
        let raw = build(&m).unwrap();
        check_wire_format(&raw);
        assert!(longest_line(&raw) <= 998);
        let p = MessageParser::default().parse(&raw).unwrap();
        assert_eq!(p.subject(), Some(subject.as_str()));
    }
}

#[test]
fn plain_ascii_subjects_with_spaces_stay_readable() {
    let subject = "Your weekly report is ready ".repeat(30).trim().to_owned();
    let raw = build(&OutgoingMessage {
        subject: subject.clone(),
        ..base()
    })
    .unwrap();
    let text = String::from_utf8_lossy(&raw);
    assert!(text.contains("Subject: Your weekly report"), "{text}");
    assert!(
        !text.contains("=?utf-8?"),
        "no encoded-words needed: {text}"
    );
    let p = MessageParser::default().parse(&raw).unwrap();
    assert_eq!(p.subject(), Some(subject.as_str()));
}

#[test]
fn custom_headers_whose_name_and_value_pass_998_bytes_are_encoded() {
    let name = format!("X-{}", "N".repeat(74));
    for value in ["v".repeat(998), format!("tok={}", "ä".repeat(990))] {
        let m = OutgoingMessage {
            headers: vec![(name.clone(), value.clone())],
            ..base()
        };
        let raw = build(&m).unwrap();
        check_wire_format(&raw);
        assert!(longest_line(&raw) <= 998);
        assert_eq!(custom_header(&raw, &name), value);
    }
    // Short ASCII values are written as given.
    let raw = build(&OutgoingMessage {
        headers: vec![("X-Id".into(), "abc-123".into())],
        ..base()
    })
    .unwrap();
    assert!(String::from_utf8_lossy(&raw).contains("X-Id: abc-123\r\n"));
}

#[test]
fn international_domains_are_written_as_a_labels() {
    let mut m = base();
    m.to.email = "user@bücher.example".into();
    m.reply_to = Some("Help <help@bücher.example>".into());
    let raw = build(&m).unwrap();
    check_wire_format(&raw);
    let text = String::from_utf8_lossy(&raw);
    assert!(text.contains("<user@xn--bcher-kva.example>"), "{text}");
    assert!(text.contains("<help@xn--bcher-kva.example>"), "{text}");

    // A non-ASCII local part cannot be converted: it stays UTF-8 (RFC 6532).
    m.to.email = "josé@bücher.example".into();
    let raw = build(&m).unwrap();
    let p = MessageParser::default().parse(&raw).unwrap();
    assert_eq!(
        p.to().unwrap().first().unwrap().address(),
        Some("josé@xn--bcher-kva.example")
    );
    m.to.email = "a@b\u{200d}c.example".into();
    assert!(matches!(
        build(&m),
        Err(MimeError::InvalidAddress { field: "To", .. })
    ));
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    /// Characters a subject may hold: anything but CR, LF and the other C0 controls (tab is
    /// allowed), weighted towards ASCII so that long runs without spaces are common.
    fn subject_char() -> impl Strategy<Value = char> {
        prop_oneof![
            6 => proptest::char::range('!', '~'),
            1 => Just(' '),
            1 => Just('\t'),
            2 => any::<char>().prop_filter("no controls", |c| !c.is_control()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn any_allowed_subject_round_trips_and_no_line_passes_998_bytes(
            chars in proptest::collection::vec(subject_char(), 1..=998),
        ) {
            let subject: String = chars.into_iter().collect();
            let raw = build(&OutgoingMessage { subject: subject.clone(), ..base() }).unwrap();
            prop_assert!(longest_line(&raw) <= 998);
            prop_assert!(raw.is_ascii());
            let p = MessageParser::default().parse(&raw).unwrap();
            // Unfolding cannot tell leading or trailing whitespace from folding whitespace.
            prop_assert_eq!(p.subject().map(str::trim), Some(subject.trim()));
        }
    }
}

#[test]
fn attachments_are_encoded_as_lettre_encodes_them_into_one_buffer() {
    // Every length around the line and group edges, and an empty one.
    for len in [0usize, 1, 2, 3, 56, 57, 58, 113, 114, 115, 171, 1000, 4096] {
        let content: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
        let mut ours = Vec::new();
        push_base64_lines(&mut ours, &content);
        let lettre =
            Body::new_with_encoding(content.clone(), ContentTransferEncoding::Base64).unwrap();
        assert_eq!(ours, lettre.as_ref(), "{len} bytes");
        assert_eq!(ours.len(), base64_lines_len(len), "{len} bytes");
    }
    // Two attachments (the same bytes twice, one inline) around text that looks like base64.
    let big: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 253) as u8).collect();
    let mut m = base();
    m.html = "<p>QUJD QUJD</p><img src=\"cid:x\">".into();
    m.attachments = vec![
        Attachment {
            filename: "a.bin".into(),
            content_type: "application/octet-stream".into(),
            content: big.clone(),
            content_id: None,
        },
        Attachment {
            filename: "b.bin".into(),
            content_type: "application/octet-stream".into(),
            content: big.clone(),
            content_id: Some("x".into()),
        },
    ];
    let raw = build(&m).unwrap();
    check_wire_format(&raw);
    assert!(
        raw.capacity() >= raw.len() + HEADER_ROOM,
        "room for the signature"
    );
    let p = MessageParser::default().parse(&raw).unwrap();
    assert_eq!(p.attachment_count(), 2);
    for a in p.attachments() {
        assert_eq!(a.contents(), big.as_slice());
    }
    assert_eq!(p.body_html(0).unwrap(), m.html.as_str());
}
