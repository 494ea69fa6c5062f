//! The rules of a contacts CSV import (DECISIONS.md "Jobs"), with no I/O: the parser reads a
//! byte slice and yields one outcome per data row.
//!
//! Invariants:
//! - A header row is required and must name an `email` column (names are trimmed and compared
//!   without regard to case); `subscribed` is optional (`true`/`1`/`yes`, `false`/`0`/`no`,
//!   empty = not given); every other column is a custom field of `data`.
//! - At most [`IMPORT_MAX_COLUMNS`] columns, refused before any name is looked at; the check
//!   of the names is linear in their number (duplicates through a set), so it costs nothing
//!   next to the upload, and the import job may run it again on the stored file.
//! - Values are typed: a finite number becomes a number, `true`/`false` a boolean, anything
//!   else a string; an empty cell changes nothing (the custom-field rules of `DataPatch`).
//! - A row is reported by the 1-based line on which it starts (the header is line 1), so a
//!   quoted field spanning lines does not shift later numbers. A UTF-8 BOM and CRLF line ends
//!   are accepted. Rows are returned in file order with their byte offset, so a job can resume
//!   after the last row it committed.

use std::collections::HashSet;

use serde_json::{Map, Number, Value};

use crate::email::EmailAddress;
use crate::fields::{DataPatch, MAX_KEY_LEN, is_valid_key};

/// The largest CSV file accepted (5 MB).
pub const IMPORT_MAX_BYTES: usize = 5 * 1024 * 1024;

/// The most columns a header may have.
pub const IMPORT_MAX_COLUMNS: usize = 1000;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The columns of the file, from its header row.
#[derive(Clone, Debug)]
pub struct ImportHeader {
    email: usize,
    subscribed: Option<usize>,
    /// (column, custom-field key)
    data: Vec<(usize, String)>,
    width: usize,
}

/// One valid data row.
#[derive(Clone, Debug)]
pub struct ImportRow {
    pub email: EmailAddress,
    pub subscribed: Option<bool>,
    pub patch: DataPatch,
}

/// A data row as read: where it starts, where the next one starts, and what it holds.
#[derive(Debug)]
pub struct ParsedRow {
    /// 1-based line on which the row starts.
    pub line: u64,
    /// Byte offset of the row in the file.
    pub offset: u64,
    pub outcome: Result<ImportRow, String>,
}

/// A problem with the whole file (no data row can be read).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FileProblem(pub String, pub FileProblemKind);

/// What kind of problem: a machine-readable code for the API's field error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileProblemKind {
    /// Unreadable, empty, or a header whose names are unusable.
    InvalidCsv,
    /// More than [`IMPORT_MAX_COLUMNS`] columns.
    TooManyColumns,
}

impl FileProblemKind {
    pub fn code(self) -> &'static str {
        match self {
            FileProblemKind::InvalidCsv => "invalid_csv",
            FileProblemKind::TooManyColumns => "too_many_columns",
        }
    }
}

fn invalid(message: String) -> FileProblem {
    FileProblem(message, FileProblemKind::InvalidCsv)
}

fn reader(bytes: &[u8]) -> csv::Reader<&[u8]> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(bytes)
}

/// The file without its UTF-8 BOM.
pub fn strip_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(BOM).unwrap_or(bytes)
}

/// Reads the header row; checks the columns.
pub fn read_header(bytes: &[u8]) -> Result<ImportHeader, FileProblem> {
    let mut rdr = reader(strip_bom(bytes));
    let mut record = csv::StringRecord::new();
    match rdr.read_record(&mut record) {
        Ok(true) => {}
        Ok(false) => {
            return Err(invalid(
                "the file is empty: a header row is required".into(),
            ));
        }
        Err(e) => return Err(invalid(format!("the header row cannot be read: {e}"))),
    }
    if record.len() > IMPORT_MAX_COLUMNS {
        return Err(FileProblem(
            format!(
                "the header row has {} columns; at most {IMPORT_MAX_COLUMNS} are accepted",
                record.len()
            ),
            FileProblemKind::TooManyColumns,
        ));
    }
    ImportHeader::from_names(record.iter())
}

impl ImportHeader {
    /// The columns from their names (any number of them: [`read_header`] applies the cap).
    pub fn from_names<'a>(names: impl Iterator<Item = &'a str>) -> Result<Self, FileProblem> {
        let mut email = None;
        let mut subscribed = None;
        let mut data: Vec<(usize, String)> = Vec::new();
        let mut seen: HashSet<&'a str> = HashSet::new();
        let mut width = 0;
        for (i, raw) in names.enumerate() {
            width = i + 1;
            let name = raw.trim();
            // No lower-cased copy of every name: only the two reserved ones are compared so.
            let reserved = ["email", "subscribed"]
                .into_iter()
                .find(|r| name.eq_ignore_ascii_case(r));
            match reserved.unwrap_or(name) {
                "email" if email.is_none() => email = Some(i),
                "subscribed" if subscribed.is_none() => subscribed = Some(i),
                _ if reserved.is_some() => {
                    return Err(invalid(format!("the column {name:?} appears twice")));
                }
                "" => return Err(invalid(format!("column {} has no name", i + 1))),
                _ => {
                    if !is_valid_key(name) {
                        return Err(invalid(format!(
                            "column name {name:?} must be 1 to {MAX_KEY_LEN} characters without control characters"
                        )));
                    }
                    if !seen.insert(name) {
                        return Err(invalid(format!("the column {name:?} appears twice")));
                    }
                    data.push((i, name.to_owned()));
                }
            }
        }
        let email =
            email.ok_or_else(|| invalid("the header row has no \"email\" column".into()))?;
        Ok(ImportHeader {
            email,
            subscribed,
            data,
            width,
        })
    }

    /// The outcome of one data row.
    pub fn row(&self, fields: &csv::StringRecord) -> Result<ImportRow, String> {
        if fields.len() > self.width {
            return Err(format!(
                "the row has {} fields, the header {}",
                fields.len(),
                self.width
            ));
        }
        let cell = |i: usize| fields.get(i).unwrap_or("").trim();
        let email = cell(self.email);
        if email.is_empty() {
            return Err("email is required".into());
        }
        let email = EmailAddress::parse(email).map_err(|e| format!("invalid email: {e}"))?;
        let subscribed = match self.subscribed.map(cell) {
            None | Some("") => None,
            Some(s) => Some(parse_subscribed(s).ok_or_else(|| {
                format!("subscribed must be true/1/yes or false/0/no, not {s:?}")
            })?),
        };
        let mut data = Map::new();
        for (i, key) in &self.data {
            let v = cell(*i);
            if !v.is_empty() {
                data.insert(key.clone(), typed_value(v));
            }
        }
        let patch = DataPatch::parse(Some(&Value::Object(data))).map_err(|p| p.message)?;
        Ok(ImportRow {
            email,
            subscribed,
            patch,
        })
    }
}

fn parse_subscribed(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Some(true),
        "false" | "0" | "no" => Some(false),
        _ => None,
    }
}

/// Numbers as numbers, `true`/`false` as booleans, everything else as a string.
pub fn typed_value(s: &str) -> Value {
    match s {
        "true" => return Value::Bool(true),
        "false" => return Value::Bool(false),
        _ => {}
    }
    let numeric = s
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E'))
        && s.bytes().any(|b| b.is_ascii_digit());
    if numeric {
        if let Ok(i) = s.parse::<i64>() {
            return Value::Number(i.into());
        }
        if let Some(n) = s.parse::<f64>().ok().and_then(Number::from_f64) {
            return Value::Number(n);
        }
    }
    Value::String(s.to_owned())
}

/// Every data row of the file in order (the header must have been read by [`read_header`]).
/// A row that cannot be read at all (invalid UTF-8) is an error outcome like an invalid row.
pub fn rows<'a>(bytes: &'a [u8], header: &'a ImportHeader) -> impl Iterator<Item = ParsedRow> + 'a {
    let body = strip_bom(bytes);
    let bom = (bytes.len() - body.len()) as u64;
    let mut rdr = reader(body);
    let mut record = csv::ByteRecord::new();
    let mut first = true;
    // Lines are counted here (the parser's own count skips blank lines): newlines before the
    // row's first byte, counted once as the reader moves forward.
    let (mut counted_to, mut newlines) = (0usize, 0u64);
    let mut line_at = move |start: usize| {
        let start = start.min(body.len());
        newlines += body[counted_to..start.max(counted_to)]
            .iter()
            .filter(|b| **b == b'\n')
            .count() as u64;
        counted_to = counted_to.max(start);
        newlines + 1
    };
    std::iter::from_fn(move || {
        loop {
            let before = rdr.position().byte();
            let read = rdr.read_byte_record(&mut record);
            // The row starts at its first byte that is not a line end (blank lines are skipped).
            let mut start = record
                .position()
                .map_or(before, csv::Position::byte)
                .max(before) as usize;
            while start < body.len() && matches!(body[start], b'\r' | b'\n') {
                start += 1;
            }
            match read {
                Ok(false) => return None,
                Ok(true) => {}
                Err(e) => {
                    // A malformed row: report it and go on with the next line.
                    return Some(ParsedRow {
                        line: line_at(start),
                        offset: start as u64 + bom,
                        outcome: Err(format!("the row cannot be read: {e}")),
                    });
                }
            }
            if std::mem::take(&mut first) {
                continue; // the header row
            }
            if record.len() == 1 && record.get(0).is_some_and(<[u8]>::is_empty) {
                continue; // a blank line
            }
            let outcome = match csv::StringRecord::from_byte_record(record.clone()) {
                Ok(r) => header.row(&r),
                Err(_) => Err("the row is not valid UTF-8".to_owned()),
            };
            return Some(ParsedRow {
                line: line_at(start),
                offset: start as u64 + bom,
                outcome,
            });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (email, subscribed, data) of a valid row.
    type Parsed = (String, Option<bool>, Value);

    fn outcomes(csv: &str) -> Vec<(u64, Result<Parsed, String>)> {
        let header = read_header(csv.as_bytes()).expect("header");
        rows(csv.as_bytes(), &header)
            .map(|r| {
                (
                    r.line,
                    r.outcome.map(|row| {
                        (
                            row.email.into_string(),
                            row.subscribed,
                            Value::Object(row.patch.set),
                        )
                    }),
                )
            })
            .collect()
    }

    #[test]
    fn quoted_fields_bom_and_crlf() {
        let csv = "\u{FEFF}Email,subscribed,note,plan\r\na@x.com,yes,\"one, two\nthree\",pro\r\nb@x.com,0,,\r\n";
        let out = outcomes(csv);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].0, 2);
        let (email, sub, data) = out[0].1.clone().expect("row 2");
        assert_eq!(email, "a@x.com");
        assert_eq!(sub, Some(true));
        assert_eq!(data["note"], "one, two\nthree");
        assert_eq!(
            out[1].0, 4,
            "the quoted newline moves the next row to line 4"
        );
        assert_eq!(out[1].1.clone().expect("row 4").1, Some(false));
    }

    #[test]
    fn values_are_typed() {
        assert_eq!(typed_value("42"), Value::from(42));
        assert_eq!(typed_value("-1.5"), Value::from(-1.5));
        assert_eq!(typed_value("true"), Value::Bool(true));
        assert_eq!(typed_value("1e3x"), Value::from("1e3x"));
        assert_eq!(typed_value("e"), Value::from("e"));
        assert_eq!(typed_value("Oslo"), Value::from("Oslo"));
    }

    #[test]
    fn bad_rows_are_reported_by_line() {
        let out = outcomes("email,subscribed\nnot-an-email,\n\nok@x.com,maybe\nok2@x.com\n");
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].0, 2);
        assert!(out[0].1.is_err());
        assert_eq!(out[1].0, 4);
        assert!(out[1].1.as_ref().is_err_and(|e| e.contains("subscribed")));
        assert!(out[2].1.is_ok(), "a short row is fine");
    }

    #[test]
    fn the_header_needs_an_email_column() {
        assert!(read_header(b"name,plan\nx,y\n").is_err());
        assert!(read_header(b"").is_err());
        assert!(read_header(b"email,email\n").is_err());
        assert!(read_header(b"EMAIL\n").is_ok());
    }

    /// Duplicates are found through a set: a header far past the cap is still checked in
    /// linear time.
    #[test]
    fn a_hundred_thousand_distinct_columns_are_checked_fast() {
        let names: Vec<String> = std::iter::once("email".to_owned())
            .chain((0..100_000).map(|i| format!("c{i}")))
            .collect();
        let started = std::time::Instant::now();
        let header = ImportHeader::from_names(names.iter().map(String::as_str)).expect("header");
        let took = started.elapsed();
        assert_eq!(header.width, 100_001);
        println!("100,001 columns checked in {took:?}");
        // About 0.5 s in an unoptimised test build on a loaded machine (a pairwise check: 8.6 s
        // for 60,000 names, so about 24 s here); the bound leaves room for a busy CI runner.
        assert!(took < std::time::Duration::from_secs(2), "{took:?}");
        let mut dup = names.clone();
        dup.push("c99999".to_owned());
        let err = ImportHeader::from_names(dup.iter().map(String::as_str)).unwrap_err();
        assert!(err.0.contains("appears twice"), "{err}");
    }

    #[test]
    fn more_than_the_cap_of_columns_is_its_own_problem() {
        let header = |n: usize| {
            let mut h = "email".to_owned();
            for i in 1..n {
                h.push_str(&format!(",c{i}"));
            }
            h.push('\n');
            h
        };
        assert!(read_header(header(IMPORT_MAX_COLUMNS).as_bytes()).is_ok());
        let err = read_header(header(IMPORT_MAX_COLUMNS + 1).as_bytes()).unwrap_err();
        assert_eq!(err.1, FileProblemKind::TooManyColumns);
        assert_eq!(err.1.code(), "too_many_columns");
        assert_eq!(
            read_header(b"name\n").unwrap_err().1,
            FileProblemKind::InvalidCsv
        );
    }
}
