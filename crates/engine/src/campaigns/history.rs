//! A campaign's send written as history after the fact, at a past time (`herald demo`): the
//! audience is read and each message rendered exactly as the fan-out does ([`super::prepare`],
//! [`super::render_page`], the send path's staging), then the messages are recorded SENT at
//! that time with their history and `email.sent` events, and the campaign SENT, all in one
//! transaction. No send job is queued, so no message is ever handed to a transport, and
//! nothing is counted for billing. Only a DRAFT campaign is recorded; the suppression list
//! and the unsubscribe rule skip recipients as they do in a fan-out.

use herald_core::campaign::CampaignStatus;
use herald_core::ids::Uuid;
use herald_core::time::Millis;
use herald_store::audience::Audience;
use herald_store::campaigns as store_campaigns;
use herald_store::{StoreError, StoreResult, suppressions};

use crate::Engine;
use crate::send::accept::{Addressee, Staged};

/// The detail of the SENT step of a message recorded this way.
const REPLY: &str = "recorded as history by herald demo: never handed to a transport";

/// A message recorded SENT: its id and its contact's.
#[derive(Clone, Copy, Debug)]
pub struct SentMessage {
    pub message_id: Uuid,
    pub contact_id: Uuid,
}

impl Engine {
    /// Records the project's DRAFT campaign as sent at `sent_at` to its audience as it is now
    /// (subscribed contacts), finished `duration_ms` later; returns the messages recorded.
    pub async fn record_campaign_history(
        &self,
        project_id: Uuid,
        campaign_id: Uuid,
        sent_at: Millis,
        duration_ms: Millis,
    ) -> StoreResult<Vec<SentMessage>> {
        let campaign = self
            .store
            .campaign(project_id, campaign_id)
            .await?
            .ok_or(StoreError::NotFound)?;
        if campaign.status != CampaignStatus::Draft {
            return Err(StoreError::Other(anyhow::anyhow!(
                "only a DRAFT campaign can be recorded as sent (this one is {})",
                campaign.status.as_str()
            )));
        }
        let (filter, spec) = super::prepare(self, &campaign)
            .await?
            .map_err(|(_, why)| StoreError::Other(anyhow::anyhow!(why)))?;
        let size = self.settings.campaign_page_size.max(1);
        let mut page = Vec::new();
        let mut after = None;
        loop {
            let audience = Audience::new(filter.as_ref(), true);
            let contacts = self
                .store
                .matching_contacts_page(project_id, audience, after, size, sent_at)
                .await?;
            let done = contacts.len() < size as usize;
            after = contacts.last().map(|c| c.id);
            page.extend(super::render_page(&spec, contacts));
            if done || after.is_none() {
                break;
            }
        }
        let mut tx = self.store.begin().await?;
        let emails: Vec<&str> = page.iter().map(|(c, _)| c.email.as_str()).collect();
        let mut suppressed = suppressions::suppressed_among(&mut tx, project_id, &emails).await?;
        let mut staged = Staged::default();
        for (contact, rendered) in page {
            let addressee = Addressee {
                contact_id: contact.id,
                suppressed: suppressions::take_reason(&mut suppressed, &contact.email),
                email: contact.email,
                name: None,
                subscribed: contact.subscribed,
            };
            spec.stage_rendered(&mut staged, addressee, rendered);
        }
        let sent = staged.flush_as_sent(&mut tx, REPLY, sent_at).await?;
        let recipients = i64::try_from(sent.len()).unwrap_or(i64::MAX);
        let finished_at = sent_at + duration_ms.max(0);
        if !store_campaigns::record_past_send(
            &mut tx,
            project_id,
            campaign_id,
            recipients,
            sent_at,
            finished_at,
        )
        .await?
        {
            // Sent or deleted meanwhile: write nothing.
            return Err(StoreError::Conflict(
                "the campaign is no longer a DRAFT".into(),
            ));
        }
        tx.commit().await?;
        Ok(sent
            .into_iter()
            .map(|(message_id, contact_id)| SentMessage {
                message_id,
                contact_id,
            })
            .collect())
    }
}
