//! Users, projects, memberships and the project's API keys (secret keys only as hashes).

use herald_core::ids::Uuid;
use herald_core::kinds::{Role, TrackingMode};
use herald_core::time::Millis;
use sqlx::{AssertSqlSafe, FromRow};

use crate::{Store, StoreError, StoreResult};

#[derive(Clone, FromRow)]
pub struct User {
    pub id: Uuid,
    pub email: String,
    pub password_hash: String,
    pub created_at: Millis,
    /// When the address was proven by a mailed token; `None` until then.
    pub email_verified_at: Option<Millis>,
}

impl User {
    /// The `password_hash` of a user without a password (created by OAuth sign-in): no PHC
    /// string, so no password matches it; a password reset sets one.
    pub const NO_PASSWORD: &'static str = "";

    /// Whether a password can sign this user in.
    pub fn has_password(&self) -> bool {
        self.password_hash != Self::NO_PASSWORD
    }
}

/// Never prints the password hash (an offline-guessable credential).
impl std::fmt::Debug for User {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("User")
            .field("id", &self.id)
            .field("email", &self.email)
            .field("password_hash", &"<redacted>")
            .field("created_at", &self.created_at)
            .field("email_verified_at", &self.email_verified_at)
            .finish()
    }
}

#[derive(Clone, Debug, FromRow)]
pub struct Project {
    pub id: Uuid,
    pub name: String,
    pub public_key: String,
    pub secret_key_prefix: String,
    #[sqlx(try_from = "String")]
    pub tracking: TrackingMode,
    pub language: String,
    pub disabled: bool,
    pub disabled_reason: Option<String>,
    pub created_at: Millis,
    pub updated_at: Millis,
}

/// A project with the caller's role in it.
#[derive(Clone, Debug, FromRow)]
pub struct Membership {
    #[sqlx(flatten)]
    pub project: Project,
    #[sqlx(try_from = "String")]
    pub role: Role,
}

/// The keys of a project as stored: the public key in clear, the secret one hashed.
#[derive(Clone)]
pub struct StoredKeys {
    pub public_key: String,
    pub secret_key_hash: String,
    pub secret_key_prefix: String,
}

/// Never prints the secret key's hash.
impl std::fmt::Debug for StoredKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredKeys")
            .field("public_key", &self.public_key)
            .field("secret_key_hash", &"<redacted>")
            .field("secret_key_prefix", &self.secret_key_prefix)
            .finish()
    }
}

#[derive(Clone, Debug, Default)]
pub struct ProjectChanges {
    pub name: Option<String>,
    pub tracking: Option<TrackingMode>,
    pub language: Option<String>,
}

const PROJECT_COLUMNS: &str = "id, name, public_key, secret_key_prefix, tracking, language, \
     disabled, disabled_reason, created_at, updated_at";

impl Store {
    /// Creates a user as given (its `email_verified_at` too); a taken address is
    /// `StoreError::Conflict`.
    pub async fn create_user(&self, user: &User) -> StoreResult<()> {
        let mut tx = self.begin().await?;
        insert_user(&mut tx, user).await?;
        tx.commit().await
    }

    pub async fn user_by_email(&self, email: &str) -> StoreResult<Option<User>> {
        let q = "SELECT id, email, password_hash, created_at, email_verified_at FROM users WHERE email = $1";
        Ok(db_read!(self, |pool| sqlx::query_as(q)
            .bind(email)
            .fetch_optional(pool)
            .await?))
    }

    pub async fn user_by_id(&self, id: Uuid) -> StoreResult<Option<User>> {
        let q = "SELECT id, email, password_hash, created_at, email_verified_at FROM users WHERE id = $1";
        Ok(db_read!(self, |pool| sqlx::query_as(q)
            .bind(id)
            .fetch_optional(pool)
            .await?))
    }

    /// Creates a project with `owner` as its OWNER, in one transaction.
    pub async fn create_project(
        &self,
        id: Uuid,
        name: &str,
        keys: &StoredKeys,
        owner: Uuid,
        now: Millis,
    ) -> StoreResult<Project> {
        let mut tx = self.begin().await?;
        db_tx!(&mut tx, |conn| {
            sqlx::query(
                "INSERT INTO projects (id, name, public_key, secret_key_hash, secret_key_prefix, \
                 created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $6)",
            )
            .bind(id)
            .bind(name)
            .bind(&keys.public_key)
            .bind(&keys.secret_key_hash)
            .bind(&keys.secret_key_prefix)
            .bind(now)
            .execute(&mut *conn)
            .await?;
            sqlx::query(
                "INSERT INTO project_members (project_id, user_id, role, created_at) \
                 VALUES ($1, $2, $3, $4)",
            )
            .bind(id)
            .bind(owner)
            .bind(Role::Owner.as_str())
            .bind(now)
            .execute(&mut *conn)
            .await?;
        });
        tx.commit().await?;
        self.project_by_id(id).await?.ok_or(StoreError::NotFound)
    }

    pub async fn project_by_id(&self, id: Uuid) -> StoreResult<Option<Project>> {
        let q = format!("SELECT {PROJECT_COLUMNS} FROM projects WHERE id = $1");
        Ok(db_read!(self, |pool| sqlx::query_as(AssertSqlSafe(
            q.as_str()
        ))
        .bind(id)
        .fetch_optional(pool)
        .await?))
    }

    /// The project of a public key (remembered for a second: `ttl_cache.rs`).
    pub async fn project_by_public_key(&self, key: &str) -> StoreResult<Option<Project>> {
        self.project_by_key("public_key", key).await
    }

    /// The project of a secret key's SHA-256 (remembered for a second: `ttl_cache.rs`).
    pub async fn project_by_secret_hash(&self, hash: &str) -> StoreResult<Option<Project>> {
        self.project_by_key("secret_key_hash", hash).await
    }

    async fn project_by_key(
        &self,
        column: &'static str,
        key: &str,
    ) -> StoreResult<Option<Project>> {
        if let Some(project) = self.key_cache.get(&key.to_owned()) {
            return Ok(Some(project));
        }
        let q = format!("SELECT {PROJECT_COLUMNS} FROM projects WHERE {column} = $1");
        let found: Option<Project> =
            db_read!(self, |pool| sqlx::query_as(AssertSqlSafe(q.as_str()))
                .bind(key)
                .fetch_optional(pool)
                .await?);
        if let Some(project) = &found {
            self.key_cache.put(key.to_owned(), project.clone());
        }
        Ok(found)
    }

    pub async fn projects_of_user(&self, user: Uuid) -> StoreResult<Vec<Membership>> {
        let q = "SELECT p.id, p.name, p.public_key, p.secret_key_prefix, p.tracking, p.language, \
                 p.disabled, p.disabled_reason, p.created_at, p.updated_at, m.role \
                 FROM projects p JOIN project_members m ON m.project_id = p.id \
                 WHERE m.user_id = $1 ORDER BY p.id";
        Ok(db_read!(self, |pool| sqlx::query_as(q)
            .bind(user)
            .fetch_all(pool)
            .await?))
    }

    /// The role of `user` in `project`, if a member.
    pub async fn member_role(&self, project: Uuid, user: Uuid) -> StoreResult<Option<Role>> {
        let q = "SELECT role FROM project_members WHERE project_id = $1 AND user_id = $2";
        let role: Option<(String,)> = db_read!(self, |pool| {
            sqlx::query_as(q)
                .bind(project)
                .bind(user)
                .fetch_optional(pool)
                .await?
        });
        role.map(|(r,)| Role::parse(&r).map_err(|e| StoreError::Other(e.into())))
            .transpose()
    }

    pub async fn update_project(
        &self,
        id: Uuid,
        changes: &ProjectChanges,
        now: Millis,
    ) -> StoreResult<Project> {
        let q = "UPDATE projects SET name = COALESCE($2, name), tracking = COALESCE($3, tracking), \
                 language = COALESCE($4, language), updated_at = $5 WHERE id = $1";
        let done = db_write!(self, |pool| {
            sqlx::query(q)
                .bind(id)
                .bind(&changes.name)
                .bind(changes.tracking.map(TrackingMode::as_str))
                .bind(&changes.language)
                .bind(now)
                .execute(pool)
                .await?
                .rows_affected()
        });
        self.key_cache.clear();
        if done == 0 {
            return Err(StoreError::NotFound);
        }
        self.project_by_id(id).await?.ok_or(StoreError::NotFound)
    }

    /// Replaces both keys at once; the old ones stop working with this commit.
    pub async fn replace_keys(
        &self,
        id: Uuid,
        keys: &StoredKeys,
        now: Millis,
    ) -> StoreResult<Project> {
        let q = "UPDATE projects SET public_key = $2, secret_key_hash = $3, secret_key_prefix = $4, \
                 updated_at = $5 WHERE id = $1";
        let done = db_write!(self, |pool| {
            sqlx::query(q)
                .bind(id)
                .bind(&keys.public_key)
                .bind(&keys.secret_key_hash)
                .bind(&keys.secret_key_prefix)
                .bind(now)
                .execute(pool)
                .await?
                .rows_affected()
        });
        self.key_cache.clear();
        if done == 0 {
            return Err(StoreError::NotFound);
        }
        self.project_by_id(id).await?.ok_or(StoreError::NotFound)
    }

    /// Deletes a user; by cascade its sessions, account tokens, OAuth identities and
    /// memberships. Projects are not touched: the caller deletes or hands them over first.
    pub async fn delete_user(&self, id: Uuid) -> StoreResult<()> {
        let done = db_write!(self, |pool| {
            sqlx::query("DELETE FROM users WHERE id = $1")
                .bind(id)
                .execute(pool)
                .await?
                .rows_affected()
        });
        if done == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    /// Deletes a project and, by cascade, everything it owns.
    pub async fn delete_project(&self, id: Uuid) -> StoreResult<()> {
        let done = db_write!(self, |pool| {
            sqlx::query("DELETE FROM projects WHERE id = $1")
                .bind(id)
                .execute(pool)
                .await?
                .rows_affected()
        });
        self.key_cache.clear();
        if done == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }
}

/// Inside `tx`: inserts `user` as given; a taken address is `StoreError::Conflict`.
pub(crate) async fn insert_user(tx: &mut crate::Tx, user: &User) -> StoreResult<()> {
    db_tx!(tx, |conn| {
        sqlx::query(
            "INSERT INTO users (id, email, password_hash, created_at, updated_at, \
             email_verified_at) VALUES ($1, $2, $3, $4, $4, $5)",
        )
        .bind(user.id)
        .bind(&user.email)
        .bind(&user.password_hash)
        .bind(user.created_at)
        .bind(user.email_verified_at)
        .execute(&mut *conn)
        .await?;
    });
    Ok(())
}

#[cfg(test)]
mod debug_tests {
    use super::*;

    #[test]
    fn debug_never_prints_hashes() {
        let user = User {
            id: Uuid::nil(),
            email: "a@example.com".into(),
            password_hash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".into(),
            created_at: 0,
            email_verified_at: None,
        };
        let d = format!("{user:?} {user:#?}");
        assert!(!d.contains("argon2") && !d.contains("aGFzaA"), "{d}");
        assert!(d.contains("a@example.com"), "{d}");
        let keys = StoredKeys {
            public_key: "pk_x".into(),
            secret_key_hash: "deadbeefcafe".into(),
            secret_key_prefix: "sk_1234567".into(),
        };
        let d = format!("{keys:?}");
        assert!(!d.contains("deadbeefcafe"), "{d}");
    }
}
