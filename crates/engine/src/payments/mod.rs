//! Payments through a provider (DECISIONS.md "Billing", docs/accounts.md "Payments"): the
//! [`PaymentProvider`] interface and its Stripe implementation ([`stripe`]), active only when
//! configured; without one [`Engine::payments`] is `None` and the routes answer 501.
//!
//! Invariants:
//! - A project has at most one customer at the provider: it is created at the project's first
//!   checkout under an idempotency key derived from the project id (a retried or concurrent
//!   first checkout gets the same customer back) and stored before the session is opened.
//! - Every provider failure (an error answer, no answer within the timeout) is a
//!   [`ProviderError`] carrying the provider's message, never a panic.
//! - A webhook event is verified by the provider before anything of it is read, then applied
//!   once (`herald_store::payments`).

pub mod stripe;

use std::future::Future;
use std::pin::Pin;

use herald_core::ids::Uuid;
use herald_core::payments::{PaymentEvent, SignatureError};
use herald_core::time::Millis;
use herald_store::StoreError;
use herald_store::payments::EventOutcome;

use crate::Engine;

pub use stripe::{Stripe, StripeSettings};

pub type ProviderFuture<'a, T> =
    Pin<Box<dyn Future<Output = Result<T, ProviderError>> + Send + 'a>>;

/// The provider failed: its message (an error answer) or why it could not be reached.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{0}")]
pub struct ProviderError(pub String);

/// A checkout of the configured plan for a project.
#[derive(Clone, Debug)]
pub struct CheckoutRequest<'a> {
    pub project_id: Uuid,
    pub customer: &'a str,
    pub success_url: &'a str,
    pub cancel_url: &'a str,
}

/// An invoice as the provider reports it (amounts in the currency's smallest unit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invoice {
    pub id: String,
    pub number: Option<String>,
    pub status: Option<String>,
    pub amount_due: i64,
    pub amount_paid: i64,
    pub currency: String,
    pub created_at: Millis,
    pub hosted_invoice_url: Option<String>,
    pub pdf_url: Option<String>,
}

/// Why a webhook was refused.
#[derive(Clone, Debug, thiserror::Error)]
pub enum WebhookRefusal {
    #[error(transparent)]
    Signature(#[from] SignatureError),
    #[error("{0}")]
    Malformed(String),
}

/// A payment provider: customers, hosted checkout and billing portal, invoices, and the
/// verification of its webhooks.
pub trait PaymentProvider: Send + Sync {
    /// Creates the project's customer (idempotent per project); returns its id.
    fn create_customer<'a>(&'a self, project_id: Uuid, name: &'a str)
    -> ProviderFuture<'a, String>;
    /// Opens a hosted checkout of the configured plan; returns its URL.
    fn checkout_session<'a>(&'a self, req: CheckoutRequest<'a>) -> ProviderFuture<'a, String>;
    /// Opens the customer's billing portal; returns its URL.
    fn portal_session<'a>(
        &'a self,
        customer: &'a str,
        return_url: &'a str,
    ) -> ProviderFuture<'a, String>;
    /// The customer's latest invoices, newest first.
    fn invoices<'a>(&'a self, customer: &'a str, limit: u32) -> ProviderFuture<'a, Vec<Invoice>>;
    /// Verifies a webhook (its signature header and raw body) and reads its event.
    fn webhook_event(
        &self,
        signature: Option<&str>,
        body: &[u8],
        now: Millis,
    ) -> Result<PaymentEvent, WebhookRefusal>;
}

/// Why a payment operation failed.
#[derive(Debug, thiserror::Error)]
pub enum PaymentError {
    #[error("no payment provider is configured")]
    NotConfigured,
    #[error("the project has no customer at the payment provider yet")]
    NoCustomer,
    #[error("the payment provider failed: {0}")]
    Provider(#[from] ProviderError),
    #[error(transparent)]
    Refused(#[from] WebhookRefusal),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Engine {
    /// The configured provider, if any.
    pub fn payments(&self) -> Option<&dyn PaymentProvider> {
        self.payments.as_deref()
    }

    fn provider(&self) -> Result<&dyn PaymentProvider, PaymentError> {
        self.payments().ok_or(PaymentError::NotConfigured)
    }

    /// The project's customer, created (and stored) at the first call.
    pub async fn payment_customer(
        &self,
        project_id: Uuid,
        name: &str,
    ) -> Result<String, PaymentError> {
        let provider = self.provider()?;
        let known = self.store.payment_account(project_id).await?;
        if let Some(c) = known.and_then(|a| a.customer_id) {
            return Ok(c);
        }
        let created = provider.create_customer(project_id, name).await?;
        Ok(self
            .store
            .link_payment_customer(project_id, &created, self.now())
            .await?)
    }

    /// A checkout of the configured plan for the project; returns the page to send the user to.
    pub async fn checkout(&self, project_id: Uuid, name: &str) -> Result<String, PaymentError> {
        let customer = self.payment_customer(project_id, name).await?;
        let base = &self.settings.public_url;
        let success_url = format!(
            "{base}/?project={project_id}&checkout=success&session={{CHECKOUT_SESSION_ID}}"
        );
        let cancel_url = format!("{base}/?project={project_id}&checkout=canceled");
        Ok(self
            .provider()?
            .checkout_session(CheckoutRequest {
                project_id,
                customer: &customer,
                success_url: &success_url,
                cancel_url: &cancel_url,
            })
            .await?)
    }

    /// The billing portal of the project's customer ([`PaymentError::NoCustomer`] before its
    /// first checkout).
    pub async fn billing_portal(&self, project_id: Uuid) -> Result<String, PaymentError> {
        let provider = self.provider()?;
        let customer = self.known_customer(project_id).await?;
        let customer = customer.ok_or(PaymentError::NoCustomer)?;
        let return_url = format!("{}/?project={project_id}", self.settings.public_url);
        Ok(provider.portal_session(&customer, &return_url).await?)
    }

    /// The project's invoices, newest first (none before its first checkout).
    pub async fn invoices(
        &self,
        project_id: Uuid,
        limit: u32,
    ) -> Result<Vec<Invoice>, PaymentError> {
        let provider = self.provider()?;
        match self.known_customer(project_id).await? {
            Some(c) => Ok(provider.invoices(&c, limit).await?),
            None => Ok(Vec::new()),
        }
    }

    async fn known_customer(&self, project_id: Uuid) -> Result<Option<String>, PaymentError> {
        let account = self.store.payment_account(project_id).await?;
        Ok(account.and_then(|a| a.customer_id))
    }

    /// Verifies and applies a provider webhook.
    pub async fn payment_webhook(
        &self,
        signature: Option<&str>,
        body: &[u8],
    ) -> Result<EventOutcome, PaymentError> {
        let event = self
            .provider()?
            .webhook_event(signature, body, self.now())?;
        let outcome = self.store.apply_payment_event(&event, self.now()).await?;
        if outcome == EventOutcome::Unmatched {
            tracing::warn!(event = %event.id, "payment event names no project of this server");
        }
        Ok(outcome)
    }
}
