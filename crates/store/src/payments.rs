//! A project's standing with the payment provider (docs/accounts.md "Payments"; rules in
//! `herald_core::payments`).
//!
//! The customer is stored once per project (the first one kept, so two concurrent checkouts
//! agree on it). A webhook event is applied in one transaction with the insert of its id, so
//! a replay (same id) changes nothing twice; applied ids are kept for
//! [`EVENT_IDS_KEPT_MS`], far longer than the provider retries a delivery.

use herald_core::ids::Uuid;
use herald_core::payments::{PaymentChange, PaymentEvent, PaymentState};
use herald_core::time::Millis;

use crate::{Store, StoreResult};

/// How long an applied event id is remembered (30 days; Stripe retries for 3).
pub const EVENT_IDS_KEPT_MS: Millis = 30 * 24 * 3600 * 1000;

/// The stored row.
#[derive(Clone, Debug, Default, sqlx::FromRow)]
pub struct PaymentAccount {
    pub customer_id: Option<String>,
    pub subscription_id: Option<String>,
    pub status: Option<String>,
    pub status_at: Millis,
    pub updated_at: Millis,
}

/// What became of a webhook event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventOutcome {
    Applied,
    /// Its id was applied before: nothing changed.
    Replayed,
    /// It names no project of this server (or a customer linked to another one).
    Unmatched,
    /// A type Herald does not act on.
    Ignored,
}

const SELECT_ACCOUNT: &str = "SELECT customer_id, subscription_id, status, status_at, updated_at \
                              FROM payment_accounts WHERE project_id = $1";

impl Store {
    pub async fn payment_account(&self, project_id: Uuid) -> StoreResult<Option<PaymentAccount>> {
        Ok(db_read!(self, |pool| {
            sqlx::query_as(SELECT_ACCOUNT)
                .bind(project_id)
                .fetch_optional(pool)
                .await?
        }))
    }

    /// Links `customer` to the project unless it has one already; returns the one linked.
    pub async fn link_payment_customer(
        &self,
        project_id: Uuid,
        customer: &str,
        now: Millis,
    ) -> StoreResult<String> {
        let (linked,): (Option<String>,) = db_write!(self, |pool| {
            sqlx::query_as(
                "INSERT INTO payment_accounts (project_id, customer_id, updated_at) \
                 VALUES ($1, $2, $3) ON CONFLICT (project_id) DO UPDATE SET \
                 customer_id = COALESCE(payment_accounts.customer_id, excluded.customer_id), \
                 updated_at = excluded.updated_at RETURNING customer_id",
            )
            .bind(project_id)
            .bind(customer)
            .bind(now)
            .fetch_one(pool)
            .await?
        });
        Ok(linked.unwrap_or_else(|| customer.to_owned()))
    }

    /// Applies a verified event once.
    pub async fn apply_payment_event(
        &self,
        event: &PaymentEvent,
        now: Millis,
    ) -> StoreResult<EventOutcome> {
        let (named, customer) = match &event.change {
            PaymentChange::Ignored(_) => return Ok(EventOutcome::Ignored),
            PaymentChange::CheckoutCompleted {
                project, customer, ..
            } => (*project, customer.clone()),
            PaymentChange::Subscription {
                project, customer, ..
            } => (*project, Some(customer.clone())),
            PaymentChange::PaymentFailed { customer, .. } => (None, Some(customer.clone())),
        };
        let mut tx = self.begin().await?;
        let outcome = db_tx!(&mut tx, |conn| {
            let owner: Option<(Uuid,)> = match &customer {
                Some(c) => {
                    sqlx::query_as("SELECT project_id FROM payment_accounts WHERE customer_id = $1")
                        .bind(c)
                        .fetch_optional(&mut *conn)
                        .await?
                }
                None => None,
            };
            // The customer Herald linked decides; a project named in the event only counts
            // when it exists and the customer is not another project's.
            let project = match (owner, named) {
                (Some((o,)), Some(n)) if o != n => None,
                (Some((o,)), _) => Some(o),
                (None, Some(n)) => {
                    let found: Option<(Uuid,)> =
                        sqlx::query_as("SELECT id FROM projects WHERE id = $1")
                            .bind(n)
                            .fetch_optional(&mut *conn)
                            .await?;
                    found.map(|f| f.0)
                }
                (None, None) => None,
            };
            match project {
                None => EventOutcome::Unmatched,
                Some(project) => {
                    let fresh = sqlx::query(
                        "INSERT INTO payment_events (event_id, project_id, received_at) \
                         VALUES ($1, $2, $3) ON CONFLICT (event_id) DO NOTHING",
                    )
                    .bind(&event.id)
                    .bind(project)
                    .bind(now)
                    .execute(&mut *conn)
                    .await?
                    .rows_affected();
                    if fresh == 0 {
                        EventOutcome::Replayed
                    } else {
                        sqlx::query("DELETE FROM payment_events WHERE received_at < $1")
                            .bind(now - EVENT_IDS_KEPT_MS)
                            .execute(&mut *conn)
                            .await?;
                        // Creates the row if need be and locks it (on PostgreSQL), so two
                        // events of one project apply one after the other, each on the
                        // other's result.
                        let row: PaymentAccount = sqlx::query_as(
                            "INSERT INTO payment_accounts (project_id, updated_at) VALUES ($1, $2) \
                             ON CONFLICT (project_id) DO UPDATE SET updated_at = payment_accounts.updated_at \
                             RETURNING customer_id, subscription_id, status, status_at, updated_at",
                        )
                        .bind(project)
                        .bind(now)
                        .fetch_one(&mut *conn)
                        .await?;
                        let next = state_of(row).apply(&event.change, event.created);
                        sqlx::query(
                            "UPDATE payment_accounts SET customer_id = $2, subscription_id = $3, \
                             status = $4, status_at = $5, updated_at = $6 WHERE project_id = $1",
                        )
                        .bind(project)
                        .bind(&next.customer)
                        .bind(&next.subscription)
                        .bind(&next.status)
                        .bind(next.status_at)
                        .bind(now)
                        .execute(&mut *conn)
                        .await?;
                        EventOutcome::Applied
                    }
                }
            }
        });
        tx.commit().await?;
        Ok(outcome)
    }
}

fn state_of(r: PaymentAccount) -> PaymentState {
    PaymentState {
        customer: r.customer_id,
        subscription: r.subscription_id,
        status: r.status,
        status_at: r.status_at,
    }
}
