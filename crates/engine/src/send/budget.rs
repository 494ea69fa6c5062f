//! Memory of deliveries in flight: a node's deliveries share one byte budget
//! (`send_memory_budget_bytes`), as request bodies share theirs in the API.
//!
//! Invariants:
//! - A delivery reserves its message's [`DeliveryCost`] before it reads the attachments' bytes
//!   and composes, and holds the reservation until the transport is done with the message
//!   (its attachments' share is given back once the message is composed, see
//!   [`Reservation::composed`]). So the bytes reserved at any moment bound what deliveries hold;
//!   deliveries that do not fit wait their turn, first come first served.
//! - A message larger than the whole budget reserves all of it: it still goes, alone.
//! - The cost is an estimate from what the message row says (its HTML and its attachments'
//!   recorded sizes), never from reading the bytes: the point is to wait before reading them.

use std::sync::Arc;

use herald_mail::mime::base64_lines_len;
use herald_store::messages::Message;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The budget is counted in KiB, so one reservation of up to 4 TiB fits a semaphore's `u32`.
const UNIT: usize = 1024;
/// What every message holds besides its parts: headers, the DKIM signature, buffers.
const OVERHEAD: usize = 16 * 1024;

/// The node's delivery budget. Cheap to clone.
#[derive(Clone, Debug)]
pub struct SendBudget {
    units: Arc<Semaphore>,
    total: u32,
}

/// What one message holds while it is delivered, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeliveryCost {
    /// The attachments' bytes, read from the store for composing.
    pub attachments: usize,
    /// The composed message (base64 attachments, the HTML, its text version and headers),
    /// with the copies the transport makes of a small message.
    pub message: usize,
}

impl DeliveryCost {
    /// The cost of delivering `msg`, from its HTML and its attachments' recorded sizes.
    pub fn of(msg: &Message) -> DeliveryCost {
        let attachments: usize = msg
            .attachments
            .0
            .as_array()
            .map(|items| items.iter().map(attachment_size).sum())
            .unwrap_or(0);
        let encoded = base64_lines_len(attachments);
        // The HTML part, the text derived from it, their transfer encodings, and the copies
        // the SMTP hand-over makes of a message too small to stream.
        let body = msg.html.len().saturating_mul(4);
        DeliveryCost {
            attachments,
            message: encoded.saturating_add(body).saturating_add(OVERHEAD),
        }
    }

    pub fn total(&self) -> usize {
        self.attachments.saturating_add(self.message)
    }
}

/// An attachment's size as its row records it (`size`), or for rows written before blobs
/// existed, from its inline base64 `content`.
fn attachment_size(v: &serde_json::Value) -> usize {
    if let Some(size) = v.get("size").and_then(serde_json::Value::as_u64) {
        return usize::try_from(size).unwrap_or(usize::MAX);
    }
    v.get("content")
        .and_then(serde_json::Value::as_str)
        .map_or(0, |c| c.len() / 4 * 3)
}

/// Bytes of the budget held by one delivery; given back when dropped.
#[derive(Debug)]
pub struct Reservation {
    permit: OwnedSemaphorePermit,
    /// Units given back by [`Reservation::composed`]: the attachments' share.
    attachments: u32,
}

impl Reservation {
    /// The message is composed and its attachments' bytes dropped: gives back their share,
    /// keeping the composed message's until the transport is done.
    pub fn composed(&mut self) {
        if self.attachments > 0
            && let Some(part) = self.permit.split(self.attachments as usize)
        {
            drop(part);
        }
        self.attachments = 0;
    }

    /// Bytes held now (rounded up to whole KiB).
    pub fn bytes(&self) -> usize {
        self.permit.num_permits() * UNIT
    }
}

impl SendBudget {
    /// A budget of `bytes` (at least 1 KiB).
    pub fn new(bytes: usize) -> SendBudget {
        let total = u32::try_from(bytes.div_ceil(UNIT))
            .unwrap_or(u32::MAX >> 4)
            .clamp(1, u32::MAX >> 4);
        SendBudget {
            units: Arc::new(Semaphore::new(total as usize)),
            total,
        }
    }

    /// Units `bytes` takes: at least one, never more than the whole budget.
    fn units_for(&self, bytes: usize) -> u32 {
        u32::try_from(bytes.div_ceil(UNIT)).map_or(self.total, |u| u.clamp(1, self.total))
    }

    /// Waits until `cost` fits (or, for a cost over the whole budget, until nothing else is
    /// reserved) and reserves it. `None` only if the budget was closed, which nothing does.
    pub async fn reserve(&self, cost: DeliveryCost) -> Option<Reservation> {
        let units = self.units_for(cost.total());
        // What composing frees: the total less what the composed message keeps.
        let attachments = units.saturating_sub(self.units_for(cost.message));
        let permit = self.units.clone().acquire_many_owned(units).await.ok()?;
        Some(Reservation {
            permit,
            attachments,
        })
    }

    /// Bytes not reserved now (rounded to whole KiB).
    pub fn available_bytes(&self) -> usize {
        self.units.available_permits() * UNIT
    }

    /// The whole budget in bytes (rounded up to whole KiB).
    pub fn total_bytes(&self) -> usize {
        self.total as usize * UNIT
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    fn cost(attachments: usize, message: usize) -> DeliveryCost {
        DeliveryCost {
            attachments,
            message,
        }
    }

    #[test]
    fn units_are_at_least_one_and_at_most_the_budget() {
        let b = SendBudget::new(10 * 1024);
        assert_eq!(b.total_bytes(), 10 * 1024);
        assert_eq!(b.units_for(0), 1);
        assert_eq!(b.units_for(1), 1);
        assert_eq!(b.units_for(4 * 1024 + 1), 5);
        assert_eq!(b.units_for(1 << 50), 10);
        assert_eq!(SendBudget::new(0).total_bytes(), 1024);
    }

    #[tokio::test]
    async fn reservations_never_exceed_the_budget_and_a_larger_one_goes_alone() {
        let budget = SendBudget::new(100 * 1024);
        let held = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let (small, most_small) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let mut tasks = tokio::task::JoinSet::new();
        // 30 KiB each (3 fit at once), and one of 1 MiB, over the whole budget.
        for i in 0..20 {
            let size = if i == 7 { 1 << 20 } else { 30 * 1024 };
            let (budget, held, most) = (budget.clone(), held.clone(), most.clone());
            let (small, most_small) = (small.clone(), most_small.clone());
            tasks.spawn(async move {
                let r = budget.reserve(cost(0, size)).await.unwrap();
                let now = held.fetch_add(r.bytes(), Ordering::SeqCst) + r.bytes();
                most.fetch_max(now, Ordering::SeqCst);
                let large = size > budget.total_bytes();
                if large {
                    assert_eq!(now, budget.total_bytes(), "the large one is alone");
                } else {
                    let n = small.fetch_add(1, Ordering::SeqCst) + 1;
                    most_small.fetch_max(n, Ordering::SeqCst);
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
                if !large {
                    small.fetch_sub(1, Ordering::SeqCst);
                }
                held.fetch_sub(r.bytes(), Ordering::SeqCst);
            });
        }
        while let Some(r) = tasks.join_next().await {
            r.unwrap();
        }
        // The large one held the whole budget; the others at most three at once.
        assert_eq!(most.load(Ordering::SeqCst), 100 * 1024);
        assert_eq!(most_small.load(Ordering::SeqCst), 3, "three fit at once");
        assert_eq!(budget.available_bytes(), budget.total_bytes());
    }

    #[tokio::test]
    async fn a_composed_message_gives_back_its_attachments_share() {
        let budget = SendBudget::new(100 * 1024);
        let mut r = budget.reserve(cost(40 * 1024, 50 * 1024)).await.unwrap();
        assert_eq!(budget.available_bytes(), 10 * 1024);
        r.composed();
        assert_eq!(r.bytes(), 50 * 1024);
        assert_eq!(budget.available_bytes(), 50 * 1024);
        drop(r);
        assert_eq!(budget.available_bytes(), 100 * 1024);
        // Over the whole budget: all of it, kept while the composed message is over it too.
        let mut r = budget.reserve(cost(1 << 30, 1 << 30)).await.unwrap();
        assert_eq!(budget.available_bytes(), 0);
        r.composed();
        assert_eq!(r.bytes(), 100 * 1024);
        drop(r);
        let mut r = budget.reserve(cost(1 << 30, 60 * 1024)).await.unwrap();
        r.composed();
        assert_eq!(r.bytes(), 60 * 1024);
    }

    #[test]
    fn the_cost_counts_attachments_from_their_recorded_sizes() {
        let base = DeliveryCost::of(&message("<p>hi</p>", serde_json::json!([])));
        assert_eq!(base.attachments, 0);
        assert_eq!(base.message, OVERHEAD + 4 * "<p>hi</p>".len());
        let with = DeliveryCost::of(&message(
            "<p>hi</p>",
            serde_json::json!([{"size": 5_000_000, "sha256": "ab"}, {"content": "QUJD"}]),
        ));
        assert_eq!(with.attachments, 5_000_003);
        assert_eq!(with.message, base.message + base64_lines_len(5_000_003));
    }

    fn message(html: &str, attachments: serde_json::Value) -> Message {
        crate::send::test_message::message(
            herald_core::kinds::TemplateType::Transactional,
            html,
            attachments,
        )
    }
}
