//! The signed-in user's own account: its live sessions (listed, and ended one by one or all
//! but the caller's) and the deletion of the account. The dashboard's account page calls
//! these; no API route exposes them yet, so a future one calls the same functions.
//!
//! Invariants:
//! - A session is named outside the server by a handle (a prefix of the SHA-256 of its id),
//!   never by the id its cookie carries; a handle only ever matches the caller's own sessions.
//! - The caller's own session is not ended here (that is logging out).
//! - An account is deleted only when no project would be left without an owner while other
//!   members remain: the sole owner of a shared project hands it over or deletes it first.
//!   Projects the user is the only member of go with the account; other memberships end.

use herald_core::ids::Uuid;
use herald_core::kinds::Role;
use herald_core::time::Millis;
use herald_store::accounts::Project;

use crate::account_mail::token_hash;
use crate::auth::UserAuth;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Length of a session's handle (hex characters of the SHA-256 of its id).
const HANDLE_LEN: usize = 16;

/// One live session of the user.
#[derive(Debug, Clone)]
pub struct SessionInfo {
    /// Names the session in a form; not its secret id.
    pub handle: String,
    pub created_at: Millis,
    pub expires_at: Millis,
    /// The session of the request that asked.
    pub current: bool,
}

fn handle_of(sid: &str) -> String {
    token_hash(sid).chars().take(HANDLE_LEN).collect()
}

/// The caller's live sessions, newest first, the caller's own marked.
pub async fn list_sessions(state: &AppState, auth: &UserAuth) -> ApiResult<Vec<SessionInfo>> {
    let rows = state
        .store
        .sessions_of_user(auth.user, state.engine.now())
        .await?;
    Ok(rows
        .into_iter()
        .map(|(sid, created_at, expires_at)| SessionInfo {
            handle: handle_of(&sid),
            current: sid == auth.sid,
            created_at,
            expires_at,
        })
        .collect())
}

/// Ends the caller's session named by `handle`; 404 when no other live session of the caller
/// has it, 422 for the caller's own (log out instead).
pub async fn revoke_session(state: &AppState, auth: &UserAuth, handle: &str) -> ApiResult<()> {
    let rows = state
        .store
        .sessions_of_user(auth.user, state.engine.now())
        .await?;
    let Some((sid, ..)) = rows.into_iter().find(|(sid, ..)| handle_of(sid) == handle) else {
        return Err(ApiError::not_found("SESSION_NOT_FOUND", "Session"));
    };
    if sid == auth.sid {
        return Err(ApiError::field(
            "session",
            "this is the session you are using: log out to end it",
            "current_session",
        ));
    }
    state.store.delete_session_of_user(auth.user, &sid).await?;
    Ok(())
}

/// Ends every session of the caller but the one asking; how many ended.
pub async fn revoke_other_sessions(state: &AppState, auth: &UserAuth) -> ApiResult<u64> {
    Ok(state
        .store
        .delete_user_sessions(auth.user, Some(&auth.sid))
        .await?)
}

/// What deleting the account of a user would do.
#[derive(Debug, Default)]
pub struct AccountDeletion {
    /// Projects the user is the only member of: deleted with the account.
    pub deleted: Vec<Project>,
    /// Projects where the user is the only owner and others are members: they block the
    /// deletion until ownership passes on or the project is deleted.
    pub blocking: Vec<Project>,
}

/// What deleting `user`'s account would delete, and what blocks it.
pub async fn account_deletion(state: &AppState, user: Uuid) -> ApiResult<AccountDeletion> {
    let mut out = AccountDeletion::default();
    for m in state.store.projects_of_user(user).await? {
        let members = state.store.list_members(m.project.id).await?;
        if members.iter().all(|x| x.user_id == user) {
            out.deleted.push(m.project);
        } else if m.role == Role::Owner
            && !members
                .iter()
                .any(|x| x.user_id != user && x.role == Role::Owner)
        {
            out.blocking.push(m.project);
        }
    }
    Ok(out)
}

/// Deletes the caller's account after `confirmation` (its email address, typed): the
/// projects only the user belongs to, then the user with its sessions and memberships.
/// 422 on a wrong confirmation; 409 while [`AccountDeletion::blocking`] is not empty.
pub async fn delete_account(
    state: &AppState,
    auth: &UserAuth,
    confirmation: &str,
) -> ApiResult<()> {
    let Some(user) = state.store.user_by_id(auth.user).await? else {
        return Err(ApiError::not_found("USER_NOT_FOUND", "User"));
    };
    if !confirmation.trim().eq_ignore_ascii_case(&user.email) {
        return Err(ApiError::field(
            "confirmation",
            "type your email address exactly to delete the account",
            "confirmation_mismatch",
        ));
    }
    let plan = account_deletion(state, user.id).await?;
    if !plan.blocking.is_empty() {
        let names: Vec<&str> = plan.blocking.iter().map(|p| p.name.as_str()).collect();
        return Err(ApiError::conflict(format!(
            "You are the only owner of {}, which other members use: make one of them an owner, or delete the project, first",
            names.join(", ")
        )));
    }
    for project in &plan.deleted {
        state.engine.delete_project(Role::Owner, project.id).await?;
    }
    state.store.delete_user(user.id).await?;
    Ok(())
}
