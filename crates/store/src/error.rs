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
    /// The database was unreachable for a piece of work shared by several requests (a group
    /// commit): each request gets this copy of the cause, still answered as unavailable.
    #[error("the database is unavailable: {0}")]
    Unavailable(String),
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

impl StoreError {
    /// The database could not be reached or dropped the connection (a restart, a failover, a
    /// full pool): nothing is wrong with the request, which may be sent again shortly.
    /// PostgreSQL's connection exceptions (class `08`) and shutdown codes (`57P01` to `57P03`)
    /// count, as do sqlx's I/O, TLS and pool failures.
    pub fn is_unavailable(&self) -> bool {
        match self {
            StoreError::Unavailable(_) => true,
            StoreError::Db(e) => match e {
                sqlx::Error::Io(_)
                | sqlx::Error::Tls(_)
                | sqlx::Error::PoolTimedOut
                | sqlx::Error::PoolClosed
                | sqlx::Error::WorkerCrashed => true,
                sqlx::Error::Database(db) => db.code().is_some_and(|c| {
                    c.starts_with("08") || matches!(&*c, "57P01" | "57P02" | "57P03")
                }),
                _ => false,
            },
            _ => false,
        }
    }
}

impl StoreError {
    /// The server refused the statement (an error it answered, not a lost connection, a
    /// shutdown or a full pool): a statement outside a transaction committed nothing, so its
    /// rows may be written another way. After a lost connection a commit may have happened.
    pub fn is_refused_statement(&self) -> bool {
        match self {
            StoreError::Conflict(_) => true,
            StoreError::Db(sqlx::Error::Database(_)) => !self.is_unavailable(),
            _ => false,
        }
    }

    /// A copy of this error for each of several requests that one failed write served: the
    /// copy keeps what the API answers (404, 409, 503 or 500) and the cause's text.
    pub fn for_each_request(&self) -> StoreError {
        match self {
            StoreError::NotFound => StoreError::NotFound,
            StoreError::Conflict(what) => StoreError::Conflict(what.clone()),
            e if e.is_unavailable() => StoreError::Unavailable(format!("{e:#}")),
            e => StoreError::Other(anyhow::anyhow!("{e:#}")),
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

#[cfg(test)]
mod tests {
    use super::StoreError;

    #[test]
    fn a_lost_connection_is_unavailable_and_a_bad_query_is_not() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
        assert!(StoreError::Db(sqlx::Error::Io(io)).is_unavailable());
        assert!(StoreError::Db(sqlx::Error::PoolTimedOut).is_unavailable());
        assert!(StoreError::Db(sqlx::Error::PoolClosed).is_unavailable());
        assert!(!StoreError::Db(sqlx::Error::RowNotFound).is_unavailable());
        assert!(!StoreError::NotFound.is_unavailable());
        assert!(!StoreError::Conflict("x".into()).is_unavailable());
    }

    #[test]
    fn a_copy_for_each_request_keeps_the_answer() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
        let lost = StoreError::Db(sqlx::Error::Io(io)).for_each_request();
        assert!(lost.is_unavailable(), "{lost}");
        assert!(lost.to_string().contains("reset"), "{lost}");
        let bad = StoreError::Db(sqlx::Error::RowNotFound).for_each_request();
        assert!(matches!(bad, StoreError::Other(_)) && !bad.is_unavailable());
        assert!(matches!(
            StoreError::Conflict("k".into()).for_each_request(),
            StoreError::Conflict(k) if k == "k"
        ));
    }
}
