//! The `attachments` of a `/v1/send` body, decoded while the JSON is read.
//!
//! Invariants: each `content` is base64-decoded straight from the request bytes (serde_json
//! hands the string borrowed from the body when it has no escapes), so a message holds one
//! copy of each file: its decoded bytes. Reading never fails on shape: a value of the wrong
//! type is kept as such and reported with its field path by
//! [`super::send_parse::attachments`]. Once the decoded total passes
//! [`MAX_ATTACHMENT_BYTES`] the request is refused anyway, so further bytes are counted and
//! dropped instead of kept.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::send_parse::MAX_ATTACHMENT_BYTES;

/// What `attachments` held.
#[derive(Debug)]
pub enum AttachmentsField {
    /// A value that is not an array.
    NotArray,
    Items(Vec<RawAttachment>),
}

/// One item; a value that is not an object reads as an item with no fields.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawAttachment {
    pub filename: Option<Value>,
    pub content_type: Option<Value>,
    pub content: Option<Content>,
    pub disposition: Option<Value>,
    pub content_id: Option<Value>,
}

#[derive(Debug)]
pub enum Content {
    Decoded(Vec<u8>),
    /// Valid base64 of this many bytes, not kept: the request is over the limit.
    Dropped(usize),
    InvalidBase64,
    NotString,
}

impl Content {
    pub fn decoded_len(&self) -> Option<usize> {
        match self {
            Content::Decoded(b) => Some(b.len()),
            Content::Dropped(n) => Some(*n),
            Content::InvalidBase64 | Content::NotString => None,
        }
    }
}

/// Consumes any value.
fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Implements the scalar visits of a visitor as "some other value".
macro_rules! other_scalars {
    ($other:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($other)
        }
    };
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Content;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("base64 content")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Content, E> {
                Ok(STANDARD
                    .decode(s.trim())
                    .map_or(Content::InvalidBase64, Content::Decoded))
            }
            other_scalars!(Content::NotString);
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Content, A::Error> {
                drain_seq(seq).map(|()| Content::NotString)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Content, A::Error> {
                drain_map(map).map(|()| Content::NotString)
            }
        }
        d.deserialize_any(V)
    }
}

/// An item: an object's fields, or nothing for another value.
struct Item(RawAttachment);

impl<'de> Deserialize<'de> for Item {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Item;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an attachment object")
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Item, E> {
                Ok(Item(RawAttachment::default()))
            }
            other_scalars!(Item(RawAttachment::default()));
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Item, A::Error> {
                drain_seq(seq).map(|()| Item(RawAttachment::default()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Item, A::Error> {
                RawAttachment::deserialize(de::value::MapAccessDeserializer::new(map)).map(Item)
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for AttachmentsField {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AttachmentsField;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of attachments")
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<AttachmentsField, E> {
                Ok(AttachmentsField::NotArray)
            }
            other_scalars!(AttachmentsField::NotArray);
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<AttachmentsField, A::Error> {
                drain_map(map).map(|()| AttachmentsField::NotArray)
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<AttachmentsField, A::Error> {
                let mut items = Vec::new();
                let mut total = 0usize;
                while let Some(Item(mut item)) = seq.next_element::<Item>()? {
                    if let Some(n) = item.content.as_ref().and_then(Content::decoded_len) {
                        total = total.saturating_add(n);
                        if total > MAX_ATTACHMENT_BYTES {
                            item.content = Some(Content::Dropped(n));
                        }
                    }
                    items.push(item);
                }
                Ok(AttachmentsField::Items(items))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: &str) -> AttachmentsField {
        serde_json::from_str(json).expect("never fails on shape")
    }

    #[test]
    fn contents_are_decoded_while_reading() {
        let AttachmentsField::Items(items) = read(
            r#"[{"filename":"a.txt","content":" aGk= ","contentType":"text/plain"},
                {"filename":"b","content":"@@"}, {"content":5}, 7, "x", {"content":{"a":[1]}}]"#,
        ) else {
            panic!("items")
        };
        assert_eq!(items.len(), 6);
        assert!(matches!(&items[0].content, Some(Content::Decoded(b)) if b == b"hi"));
        assert_eq!(items[0].filename, Some(Value::from("a.txt")));
        assert!(matches!(items[1].content, Some(Content::InvalidBase64)));
        assert!(matches!(items[2].content, Some(Content::NotString)));
        assert!(items[3].content.is_none() && items[4].filename.is_none());
        assert!(matches!(items[5].content, Some(Content::NotString)));
        // Escaped slashes are read as well.
        let AttachmentsField::Items(items) = read(r#"[{"content":"Lz8\/"}]"#) else {
            panic!("items")
        };
        assert!(matches!(&items[0].content, Some(Content::Decoded(b)) if b == b"/??"));
    }

    #[test]
    fn other_shapes_are_not_arrays() {
        assert!(matches!(read("{}"), AttachmentsField::NotArray));
        assert!(matches!(read("\"a\""), AttachmentsField::NotArray));
        assert!(matches!(read("3"), AttachmentsField::NotArray));
        let f: Option<AttachmentsField> = serde_json::from_str("null").expect("null");
        assert!(f.is_none());
    }
}
