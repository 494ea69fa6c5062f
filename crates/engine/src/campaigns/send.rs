//! "Send a campaign" as one service (the API handler, the dashboard and MCP call it): the rules
//! checked before a campaign is handed to the fan-out, in this order: the campaign exists, its
//! status allows a send, a scheduled time is in the future, its sender is on a verified domain
//! of the project (a domain can lose its verification after create), its segment still
//! exists, and its audience fits in the project's monthly campaigns limit. The move itself
//! (`Store::send_campaign`) re-reads the status in its transaction, so concurrent sends and
//! cancels cannot both win.
//!
//! The limit check here is a forecast over the audience as it is now; the fan-out counts again
//! page by page (the audience may grow meanwhile) and stops at the limit
//! (`StoppedReason::BillingLimit`).

use herald_core::billing::Category;
use herald_core::campaign::CampaignStatus;
use herald_core::email::EmailAddress;
use herald_core::ids::Uuid;
use herald_core::time::Millis;
use herald_store::StoreError;
use herald_store::campaigns::{Campaign, Outcome};

use crate::Engine;
use crate::domains::SenderDomainError;

/// Why a campaign was not sent.
#[derive(Debug, thiserror::Error)]
pub enum CampaignSendError {
    #[error("campaign not found")]
    NotFound,
    /// The campaign's status does not allow a send.
    #[error("a {0} campaign cannot be sent")]
    Refused(CampaignStatus),
    #[error("scheduledFor must be in the future")]
    InThePast,
    #[error("the campaign's sender is not a valid address")]
    InvalidSender,
    #[error(transparent)]
    Sender(#[from] SenderDomainError),
    #[error("the campaign's segment was deleted; choose another audience")]
    SegmentDeleted,
    #[error(
        "sending to {audience} contacts would pass the project's monthly campaigns limit \
         ({used} used this month)"
    )]
    OverLimit { audience: i64, used: i64 },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Engine {
    /// Sends the project's campaign now (`at` `None`) or schedules it at `at`; returns the
    /// campaign as it is after the move (SENDING or SCHEDULED).
    pub async fn send_campaign(
        &self,
        project_id: Uuid,
        id: Uuid,
        at: Option<Millis>,
    ) -> Result<Campaign, CampaignSendError> {
        let campaign = self
            .store
            .campaign(project_id, id)
            .await?
            .ok_or(CampaignSendError::NotFound)?;
        let now = self.now();
        if at.is_some_and(|at| at <= now) {
            return Err(CampaignSendError::InThePast);
        }
        if !campaign.status.can_send() {
            return Err(CampaignSendError::Refused(campaign.status));
        }
        let from = EmailAddress::parse(&campaign.content.from_email)
            .map_err(|_| CampaignSendError::InvalidSender)?;
        self.require_verified_sender(project_id, &from).await?;
        if let Some(segment) = campaign.content.segment_id
            && self.store.segment(project_id, segment).await?.is_none()
        {
            return Err(CampaignSendError::SegmentDeleted);
        }
        self.require_campaign_within_limit(&campaign).await?;
        let max_attempts = i32::try_from(self.settings.send_max_attempts).unwrap_or(i32::MAX);
        let outcome = self
            .store
            .send_campaign(project_id, id, at.unwrap_or(now), now, max_attempts)
            .await?;
        match outcome {
            Outcome::Done(c) => Ok(c),
            Outcome::NotFound => Err(CampaignSendError::NotFound),
            Outcome::Refused(status) => Err(CampaignSendError::Refused(status)),
        }
    }

    /// Refuses a send whose audience would pass the project's monthly campaigns limit.
    async fn require_campaign_within_limit(&self, c: &Campaign) -> Result<(), CampaignSendError> {
        let limits = self.store.billing_limits(c.project_id).await?;
        if limits.get(Category::Campaigns).is_none() {
            return Ok(());
        }
        let used = self
            .store
            .billing_consumption(c.project_id, self.now())
            .await?
            .used
            .into_iter()
            .find(|(k, _)| *k == Category::Campaigns)
            .map_or(0, |(_, n)| n);
        let audience = self.campaign_audience_size(c).await?;
        let audience = i64::try_from(audience).unwrap_or(i64::MAX);
        if limits.allows(Category::Campaigns, used, audience) {
            return Ok(());
        }
        Err(CampaignSendError::OverLimit { audience, used })
    }
}
