//! The reading side of an import: a thread of its own parses the stored file and hands the
//! writer batches that are ready to insert, one batch ahead, so parsing and building rows
//! (about half of an import's CPU) overlap the writes instead of alternating with them.
//!
//! Each batch holds up to `batch_rows` valid rows, with the id and data each gets if its
//! email is new, and the rows skipped since the batch before (invalid, or an email seen
//! earlier in the file); its end says where a resumed import starts again. The last batch
//! (`end: None`) takes what is left of the file.

use std::collections::HashMap;

use herald_core::contact_import::{ImportHeader, ImportRow, rows};
use herald_core::contact_jobs::progress;
use herald_core::ids::{Uuid, new_id};
use herald_store::contacts_batch::NewContact;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

/// A valid row and the contact it becomes if its email is new.
pub(crate) struct ReadyRow {
    pub row: ImportRow,
    pub id: Uuid,
    /// The new contact's data, encoded.
    pub data: Box<RawValue>,
}

/// Where a batch ends: the checkpoint written with it.
pub(crate) struct BatchEnd {
    /// Byte offset of the first row after the batch.
    pub next: u64,
    /// Line of the batch's last row.
    pub line: u64,
    pub progress: i32,
}

pub(crate) struct ReadBatch {
    pub rows: Vec<ReadyRow>,
    /// (line, error) of the rows skipped since the previous batch, in file order.
    pub skipped: Vec<(u64, String)>,
    /// `None` for the last batch.
    pub end: Option<BatchEnd>,
}

impl ReadBatch {
    fn empty(capacity: usize) -> Self {
        Self {
            rows: Vec::with_capacity(capacity),
            skipped: Vec::new(),
            end: None,
        }
    }
}

/// What the reader needs: the file, its header, where to resume, the batch size.
pub(crate) struct ReadPlan {
    pub bytes: Vec<u8>,
    pub header: ImportHeader,
    pub resume: u64,
    pub batch_rows: usize,
}

/// Starts the reader on a blocking thread; batches arrive in file order and the last one has
/// no `end`. The reader stops early when the receiver is dropped.
pub(crate) fn spawn(plan: ReadPlan) -> mpsc::Receiver<ReadBatch> {
    let (tx, rx) = mpsc::channel(1);
    tokio::task::spawn_blocking(move || read(&plan, &tx));
    rx
}

fn read(plan: &ReadPlan, out: &mpsc::Sender<ReadBatch>) {
    let total = plan.bytes.len() as u64;
    // Email to the line of its first occurrence, rows before the resume point included.
    let mut seen: HashMap<String, u64> = HashMap::new();
    let mut batch = ReadBatch::empty(plan.batch_rows);
    for row in rows(&plan.bytes, &plan.header) {
        if row.offset < plan.resume {
            if let Ok(r) = row.outcome {
                seen.entry(r.email.into_string()).or_insert(row.line);
            }
            continue;
        }
        match row.outcome {
            Err(e) => batch.skipped.push((row.line, e)),
            Ok(r) => match seen.get(r.email.as_str()) {
                Some(first) => {
                    let msg = format!(
                        "duplicate email {} (first on line {first})",
                        r.email.as_str()
                    );
                    batch.skipped.push((row.line, msg));
                }
                None => match NewContact::encode(&r.patch) {
                    Ok(data) => {
                        seen.insert(r.email.as_str().to_owned(), row.line);
                        batch.rows.push(ReadyRow {
                            row: r,
                            id: new_id(),
                            data,
                        });
                    }
                    Err(e) => batch.skipped.push((row.line, e.to_string())),
                },
            },
        }
        if batch.rows.len() >= plan.batch_rows {
            batch.end = Some(BatchEnd {
                next: row.offset + 1,
                line: row.line,
                progress: progress(row.offset + 1, total).min(99),
            });
            let full = std::mem::replace(&mut batch, ReadBatch::empty(plan.batch_rows));
            if out.blocking_send(full).is_err() {
                return; // the writer stopped
            }
        }
    }
    let _ = out.blocking_send(batch);
}
