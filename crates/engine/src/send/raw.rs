//! The exact bytes of a message as they were handed over, for `GET /emails/:id/raw`. Only the
//! local outbox keeps them. The file read runs on the blocking pool, never on the async
//! threads; callers check first that the message belongs to the asking project.

use herald_core::ids::Uuid;
use herald_mail::transport::Transport;

use crate::Engine;

/// Why there are no bytes to show.
#[derive(Debug, thiserror::Error)]
pub enum RawError {
    /// The configured transport (an SMTP relay) keeps no copy.
    #[error("raw messages are kept only by the local outbox transport")]
    NotKept,
    /// The outbox has no file for it (not sent yet, or never will be).
    #[error("the message has no stored bytes yet")]
    NotFound,
    #[error("could not read the stored message: {0}")]
    Io(#[from] std::io::Error),
}

impl Engine {
    /// The stored bytes of message `id` (the outbox's `<id>.eml`).
    pub async fn raw_message(&self, id: Uuid) -> Result<Vec<u8>, RawError> {
        let Transport::Outbox(outbox) = &self.transport else {
            return Err(RawError::NotKept);
        };
        let outbox = outbox.clone();
        let read = tokio::task::spawn_blocking(move || outbox.read(&id.to_string()))
            .await
            .map_err(|e| RawError::Io(std::io::Error::other(e)))?;
        match read {
            Ok(bytes) => Ok(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(RawError::NotFound),
            Err(e) => Err(RawError::Io(e)),
        }
    }
}
