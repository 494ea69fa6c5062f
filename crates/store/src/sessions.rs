//! Dashboard sessions: one row per signed-in session, named by the `sid` its JWT carries.
//! A session is valid while its row exists and has not expired; deleting the row ends it.

use herald_core::ids::Uuid;
use herald_core::time::Millis;

use crate::{Store, StoreResult};

impl Store {
    pub async fn create_session(
        &self,
        sid: &str,
        user: Uuid,
        now: Millis,
        expires_at: Millis,
    ) -> StoreResult<()> {
        db_write!(self, |pool| {
            sqlx::query(
                "INSERT INTO sessions (id, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)",
            )
            .bind(sid)
            .bind(user)
            .bind(now)
            .bind(expires_at)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// Whether `sid` is a live session of `user`.
    pub async fn session_is_live(&self, sid: &str, user: Uuid, now: Millis) -> StoreResult<bool> {
        let q = "SELECT 1 FROM sessions WHERE id = $1 AND user_id = $2 AND expires_at > $3";
        let row: Option<(i32,)> = db_read!(self, |pool| sqlx::query_as(q)
            .bind(sid)
            .bind(user)
            .bind(now)
            .fetch_optional(pool)
            .await?);
        Ok(row.is_some())
    }

    /// The live sessions of `user`, newest first: `(sid, created_at, expires_at)`.
    pub async fn sessions_of_user(
        &self,
        user: Uuid,
        now: Millis,
    ) -> StoreResult<Vec<(String, Millis, Millis)>> {
        let q = "SELECT id, created_at, expires_at FROM sessions \
                 WHERE user_id = $1 AND expires_at > $2 ORDER BY created_at DESC, id";
        Ok(db_read!(self, |pool| sqlx::query_as(q)
            .bind(user)
            .bind(now)
            .fetch_all(pool)
            .await?))
    }

    /// Ends session `sid` of `user` only (another user's id ends nothing); whether it existed.
    pub async fn delete_session_of_user(&self, user: Uuid, sid: &str) -> StoreResult<bool> {
        let n = db_write!(self, |pool| {
            sqlx::query("DELETE FROM sessions WHERE id = $1 AND user_id = $2")
                .bind(sid)
                .bind(user)
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(n > 0)
    }

    /// Ends one session (logout).
    pub async fn delete_session(&self, sid: &str) -> StoreResult<()> {
        db_write!(self, |pool| {
            sqlx::query("DELETE FROM sessions WHERE id = $1")
                .bind(sid)
                .execute(pool)
                .await?;
        });
        Ok(())
    }

    /// Ends every session of `user` except `keep` (password change keeps the caller's).
    pub async fn delete_user_sessions(&self, user: Uuid, keep: Option<&str>) -> StoreResult<u64> {
        let n = db_write!(self, |pool| {
            sqlx::query("DELETE FROM sessions WHERE user_id = $1 AND id <> COALESCE($2, '')")
                .bind(user)
                .bind(keep)
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(n)
    }

    /// Removes expired sessions (retention).
    pub async fn purge_expired_sessions(&self, now: Millis) -> StoreResult<u64> {
        let n = db_write!(self, |pool| {
            sqlx::query("DELETE FROM sessions WHERE expires_at <= $1")
                .bind(now)
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(n)
    }
}

impl Store {
    /// Sets a user's password and ends every session but `keep` (the one that changed it), in
    /// one transaction.
    pub async fn change_password(
        &self,
        user: Uuid,
        password_hash: &str,
        keep: &str,
        now: Millis,
    ) -> StoreResult<()> {
        let mut tx = self.begin().await?;
        db_tx!(&mut tx, |conn| {
            sqlx::query("UPDATE users SET password_hash = $2, updated_at = $3 WHERE id = $1")
                .bind(user)
                .bind(password_hash)
                .bind(now)
                .execute(&mut *conn)
                .await?;
            sqlx::query("DELETE FROM sessions WHERE user_id = $1 AND id <> $2")
                .bind(user)
                .bind(keep)
                .execute(&mut *conn)
                .await?;
        });
        tx.commit().await
    }
}
