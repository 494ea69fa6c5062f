-- Account management: revocable sessions, single-use account tokens (verification, password
-- reset, invitation), verified emails, and the system project that owns Herald's own mail.

-- One row per signed-in session; the session JWT carries the row's id (`sid`). Deleting the
-- row ends the session at once (logout, password reset, password change).
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    user_id BLOB NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX sessions_user ON sessions(user_id);

-- Tokens mailed to an address; only the SHA-256 of the token is stored.
CREATE TABLE account_tokens (
    token_hash TEXT PRIMARY KEY,
    -- VERIFY_EMAIL | PASSWORD_RESET | INVITATION (herald_core::account::TokenKind)
    kind TEXT NOT NULL,
    email TEXT NOT NULL,
    user_id BLOB REFERENCES users(id) ON DELETE CASCADE,
    project_id BLOB REFERENCES projects(id) ON DELETE CASCADE,
    role TEXT,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at INTEGER
);
CREATE INDEX account_tokens_email ON account_tokens(email, created_at);

ALTER TABLE users ADD COLUMN email_verified_at INTEGER;

-- Failed sign-ins per address (for the slow-down of DECISIONS.md "Accounts").
CREATE TABLE login_failures (
    email TEXT NOT NULL,
    failed_at INTEGER NOT NULL
);
CREATE INDEX login_failures_email ON login_failures(email, failed_at);

-- The system project: owner of the account mail Herald sends itself. It has no members and
-- no usable keys (no key hashes to these values).
-- Tracking off: account links must reach the page as written.
INSERT INTO projects (id, name, public_key, secret_key_hash, secret_key_prefix, tracking, created_at, updated_at)
VALUES (X'00000000000000000000000000000000', 'Herald system mail', 'system-no-public-key',
        'system-no-secret-key', 'system', 'DISABLED', 0, 0);
