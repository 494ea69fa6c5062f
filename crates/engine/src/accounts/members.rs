//! The owner rules of members and projects (DECISIONS.md "Accounts"), checked against the
//! acting user's role in the project:
//! - only an OWNER or ADMIN manages members;
//! - only an OWNER grants, changes or removes the OWNER role, and deletes or resets a project;
//! - the last OWNER can be neither removed nor demoted (checked by the store in the write's
//!   own transaction, so two concurrent demotions cannot both pass).
//!
//! The caller has already established that the actor is a member (its `actor` role) and that
//! the project accepts writes.

use herald_core::email::EmailAddress;
use herald_core::ids::Uuid;
use herald_core::kinds::Role;
use herald_store::StoreError;
use herald_store::accounts::Project;
use herald_store::members::{Member, MemberChangeError};

/// Why a member or project change was refused.
#[derive(Debug, thiserror::Error)]
pub enum MemberError {
    #[error("only an owner or admin of the project can do this")]
    NotManager,
    /// The action needs the OWNER role; the text says which action.
    #[error("{0}")]
    OwnerOnly(&'static str),
    #[error("the last owner of a project can be neither removed nor demoted")]
    LastOwner,
    #[error("not a member of this project")]
    NotFound,
    #[error("this user is already a member")]
    AlreadyMember,
    /// A project reset names the project exactly, as a confirmation; `given` is what came.
    #[error("the confirmation must be the project's name")]
    Confirmation { given: Option<String> },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<MemberChangeError> for MemberError {
    fn from(e: MemberChangeError) -> Self {
        match e {
            MemberChangeError::NotFound => MemberError::NotFound,
            MemberChangeError::LastOwner => MemberError::LastOwner,
            MemberChangeError::Store(e) => MemberError::Store(e),
        }
    }
}

/// What adding an address as a member did.
#[derive(Debug)]
pub enum MemberAddition {
    /// The address has an account: it is a member now.
    Joined(Member),
    /// No account has the address: the caller mails it an invitation with this role.
    InvitationNeeded,
}

const GRANT_OWNER: &str = "Only an owner can grant, change or remove the owner role";

fn require_manager(actor: Role) -> Result<(), MemberError> {
    if actor.can_manage() {
        Ok(())
    } else {
        Err(MemberError::NotManager)
    }
}

fn require_owner(actor: Role, action: &'static str) -> Result<(), MemberError> {
    if actor == Role::Owner {
        Ok(())
    } else {
        Err(MemberError::OwnerOnly(action))
    }
}

impl crate::Engine {
    /// The project's members (managers only).
    pub async fn project_members(
        &self,
        actor: Role,
        project: Uuid,
    ) -> Result<Vec<Member>, MemberError> {
        require_manager(actor)?;
        Ok(self.store.list_members(project).await?)
    }

    /// Adds `email` with `role`: an existing user joins at once; otherwise the caller invites.
    pub async fn add_member(
        &self,
        actor: Role,
        project: Uuid,
        email: &EmailAddress,
        role: Role,
    ) -> Result<MemberAddition, MemberError> {
        require_manager(actor)?;
        if role == Role::Owner {
            require_owner(actor, GRANT_OWNER)?;
        }
        let Some(user) = self.store.user_by_email(email.as_str()).await? else {
            return Ok(MemberAddition::InvitationNeeded);
        };
        match self
            .store
            .add_member(project, user.id, role, self.now())
            .await
        {
            Err(StoreError::Conflict(_)) => return Err(MemberError::AlreadyMember),
            other => other?,
        }
        let member = self
            .store
            .member(project, user.id)
            .await?
            .ok_or(MemberError::NotFound)?;
        Ok(MemberAddition::Joined(member))
    }

    /// Gives member `user` the role `role`.
    pub async fn set_member_role(
        &self,
        actor: Role,
        project: Uuid,
        user: Uuid,
        role: Role,
    ) -> Result<Member, MemberError> {
        require_manager(actor)?;
        let target = self.target(project, user).await?;
        if target.role == Role::Owner || role == Role::Owner {
            require_owner(actor, GRANT_OWNER)?;
        }
        self.store.change_member(project, user, Some(role)).await?;
        self.target(project, user).await
    }

    /// Removes member `user` from the project.
    pub async fn remove_member(
        &self,
        actor: Role,
        project: Uuid,
        user: Uuid,
    ) -> Result<(), MemberError> {
        require_manager(actor)?;
        let target = self.target(project, user).await?;
        if target.role == Role::Owner {
            require_owner(actor, GRANT_OWNER)?;
        }
        Ok(self.store.change_member(project, user, None).await?)
    }

    /// Deletes a project and everything in it.
    pub async fn delete_project(&self, actor: Role, project: Uuid) -> Result<(), MemberError> {
        require_owner(actor, "Only an owner can delete the project")?;
        Ok(self.store.delete_project(project).await?)
    }

    /// Wipes a project's data (`herald_store::project_reset`); `confirmation` must be the
    /// project's name, exactly, since nothing brings the data back.
    pub async fn reset_project(
        &self,
        actor: Role,
        project: &Project,
        confirmation: Option<&str>,
    ) -> Result<(), MemberError> {
        require_owner(actor, "Only an owner can reset the project")?;
        if confirmation != Some(project.name.as_str()) {
            return Err(MemberError::Confirmation {
                given: confirmation.map(str::to_owned),
            });
        }
        Ok(self.store.reset_project(project.id).await?)
    }

    async fn target(&self, project: Uuid, user: Uuid) -> Result<Member, MemberError> {
        self.store
            .member(project, user)
            .await?
            .ok_or(MemberError::NotFound)
    }
}
