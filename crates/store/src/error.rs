//! Store errors: "not found" and "conflict" are answers the API turns into 404 and 409; the
//! rest are infrastructure failures.

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("not found")]
    NotFound,
    /// A uniqueness constraint refused the write (the constraint or table named when known).
    #[error("conflict: {0}")]
    Conflict(String),
    #[error(transparent)]
    Db(sqlx::Error),
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

pub type StoreResult<T> = Result<T, StoreError>;

impl StoreError {
    /// A PostgreSQL deadlock (`40P01`) or serialization failure (`40001`): the transaction
    /// was chosen as the victim and may be run again as it was.
    pub fn is_transient_conflict(&self) -> bool {
        match self {
            StoreError::Db(sqlx::Error::Database(db)) => {
                matches!(db.code().as_deref(), Some("40P01" | "40001"))
            }
            _ => false,
        }
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        if let sqlx::Error::Database(db) = &e
            && db.is_unique_violation()
        {
            let what = db
                .constraint()
                .map(str::to_owned)
                .unwrap_or_else(|| db.message().to_owned());
            return StoreError::Conflict(what);
        }
        if matches!(e, sqlx::Error::RowNotFound) {
            return StoreError::NotFound;
        }
        StoreError::Db(e)
    }
}
