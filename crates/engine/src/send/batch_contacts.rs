//! What a batch of the acceptance group commit reads and writes once for all its requests,
//! before they are staged one by one ([`super::batch`]): the contacts that are new, inserted
//! with multi-row statements, and the suppression list entries of its sends' recipients.
//! A statement per request was most of a batch's round trips on PostgreSQL.
//!
//! Each request still takes effect in its order:
//! - A new contact is inserted ahead only for the first request of the batch naming its
//!   (project, email), and only for a request that cannot be refused: none with an
//!   `Idempotency-Key` (its claim comes before any write) and no send of a project with a
//!   monthly cap (the cap is checked before any write). The others take the upsert.
//! - The suppression list is read ahead only when nothing in the batch can change it before a
//!   send is staged: no request sets `subscribed: true` (a flip to subscribed lifts a
//!   suppression in the same transaction). Otherwise each send reads its own, after its
//!   contacts' upserts.

use std::collections::{HashMap, HashSet};

use herald_core::billing::Category;
use herald_core::ids::Uuid;
use herald_core::time::Millis;
use herald_store::billing;
use herald_store::contacts_batch::{NewContact, insert_new_many};
use herald_store::{StoreResult, Tx, suppressions};

use super::accept::{AcceptRequest, Staged};
use super::batch::Work;
use crate::track::{TrackPlan, TrackRows};

/// Inserts the batch's new contacts (tracks' and sends') and reads its sends' suppression
/// list entries, into `sends` and `tracks` for their staging.
pub(super) async fn prepare<'a>(
    reqs: &[&'a Work],
    sends: &mut Staged<'a>,
    tracks: &mut TrackRows,
    tx: &mut Tx,
    now: Millis,
) -> StoreResult<()> {
    read_caps(reqs, sends, tx).await?;
    let mut seen: HashSet<(Uuid, &str)> = HashSet::with_capacity(reqs.len());
    let mut fresh_tracks: Vec<&TrackPlan> = Vec::new();
    let mut fresh_sends: Vec<(&AcceptRequest, &str)> = Vec::new();
    for work in reqs {
        match work {
            Work::Track(t) => {
                let first = seen.insert((t.project_id, t.email.as_str()));
                if first && t.idempotency_key.is_none() {
                    fresh_tracks.push(t);
                }
            }
            Work::Send(r) => {
                let ahead = r.may_insert_ahead(sends);
                for recipient in &r.recipients {
                    let email = recipient.email.as_str();
                    if seen.insert((r.project_id(), email)) && ahead {
                        fresh_sends.push((r, email));
                    }
                }
            }
            Work::Inbound(m) => seen.extend(m.senders()),
        }
    }
    insert_ahead(fresh_tracks, fresh_sends, sends, tracks, tx, now).await?;
    if suppressions_stable(reqs) {
        read_suppressions(reqs, sends, tx).await?;
    }
    Ok(())
}

/// Inserts the new contacts of the batch's first requests naming them, with multi-row
/// statements, and notes in `tracks` and `sends` those that were new and those that existed. In (project, email)
/// order, so two batches on PostgreSQL inserting some of the same addresses wait for each other
/// in one order.
async fn insert_ahead(
    fresh_tracks: Vec<&TrackPlan>,
    fresh_sends: Vec<(&AcceptRequest, &str)>,
    sends: &mut Staged<'_>,
    tracks: &mut TrackRows,
    tx: &mut Tx,
    now: Millis,
) -> StoreResult<()> {
    // (made by a track request, the contact)
    let mut rows: Vec<(bool, NewContact)> = Vec::with_capacity(fresh_tracks.len());
    for p in fresh_tracks {
        let subscribed = p.subscribed.unwrap_or(true);
        let row = NewContact::new(p.project_id, p.email.as_str(), subscribed, &p.data)?;
        rows.push((true, row));
    }
    for (r, email) in fresh_sends {
        rows.push((false, r.new_contact(email)?));
    }
    if rows.is_empty() {
        return Ok(());
    }
    rows.sort_by(|(_, a), (_, b)| (a.project_id, a.email).cmp(&(b.project_id, b.email)));
    let (by_track, rows): (Vec<bool>, Vec<NewContact>) = rows.into_iter().unzip();
    let inserted = insert_new_many(tx, &rows, now).await?;
    for (row, by_track) in rows.iter().zip(by_track) {
        let key = (row.project_id, row.email.to_owned());
        match (inserted.contains(&row.id), by_track) {
            (true, true) => {
                tracks.created.insert(key, row.id);
            }
            (true, false) => {
                sends.created.insert(key, (row.id, row.subscribed));
            }
            // Its email existed: the requests naming it skip the upsert's insert.
            (false, true) => {
                tracks.existed.insert(key);
            }
            (false, false) => {
                sends.existed.insert(key);
            }
        }
    }
    Ok(())
}

/// Reads, once per project of the batch's sends without an `Idempotency-Key`, whether its
/// transactional mail has a monthly cap: an uncapped project is remembered in `sends`, and
/// its requests' new contacts may be inserted ahead.
async fn read_caps(reqs: &[&Work], sends: &mut Staged<'_>, tx: &mut Tx) -> StoreResult<()> {
    let mut asked: HashSet<Uuid> = HashSet::new();
    for work in reqs {
        let Work::Send(r) = work else { continue };
        let project = r.project_id();
        if r.idempotency_key().is_some() || !asked.insert(project) {
            continue;
        }
        let category = Category::Transactional;
        if !billing::capped(tx, project, category).await? {
            sends.uncapped.insert((project, category));
        }
    }
    Ok(())
}

/// No request of the batch can lift a suppression: none sets `subscribed: true`.
fn suppressions_stable(reqs: &[&Work]) -> bool {
    reqs.iter().all(|work| match work {
        Work::Send(r) => r.subscribed() != Some(true),
        Work::Track(t) => t.subscribed != Some(true),
        Work::Inbound(_) => true,
    })
}

/// The suppression list entries among the recipients of the batch's sends, one statement per
/// project (in chunks of addresses).
async fn read_suppressions(reqs: &[&Work], sends: &mut Staged<'_>, tx: &mut Tx) -> StoreResult<()> {
    let mut by_project: HashMap<Uuid, Vec<&str>> = HashMap::new();
    for work in reqs {
        let Work::Send(r) = work else { continue };
        let emails = by_project.entry(r.project_id()).or_default();
        emails.extend(r.recipients.iter().map(|x| x.email.as_str()));
    }
    for (project, emails) in by_project {
        let found = suppressions::suppressed_among(tx, project, &emails).await?;
        sends.suppressions.insert(project, found);
    }
    Ok(())
}
