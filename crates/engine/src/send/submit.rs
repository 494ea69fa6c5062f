//! The acceptance of a message a client composed itself (`POST /v1/send`, SMTP submission):
//! the sender-domain rule (DECISIONS.md: a `from` not on a verified domain of the project is
//! refused), then [`Engine::accept_send`]. One function, so both entry points apply the same
//! rules in the same order and neither holds a copy of them.

use super::accept::{AcceptError, Accepted, SendPlan};
use crate::Engine;
use crate::domains::SenderDomainError;

/// Why a submitted send was refused.
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    #[error(transparent)]
    Sender(#[from] SenderDomainError),
    #[error(transparent)]
    Accept(#[from] AcceptError),
}

impl Engine {
    /// Checks the plan's sender against the project's verified domains, then accepts it
    /// (answering once its rows are committed).
    pub async fn submit_send(&self, plan: &SendPlan) -> Result<Vec<Accepted>, SubmitError> {
        self.require_verified_sender(plan.project_id, &plan.message.from)
            .await?;
        Ok(self.accept_send(plan).await?)
    }
}
