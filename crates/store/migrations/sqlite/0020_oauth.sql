-- OAuth sign-in (docs/accounts.md "OAuth"): an account of a provider (GitHub, Google) linked
-- to a Herald user. The provider's own stable id (`subject`: GitHub's numeric user id,
-- Google's `sub`) names it, never the email, which can change at the provider.
CREATE TABLE oauth_identities (
    provider TEXT NOT NULL,
    subject TEXT NOT NULL,
    user_id BLOB NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    -- The verified address the provider gave when the identity was linked (for support).
    email TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    last_login_at INTEGER NOT NULL,
    PRIMARY KEY (provider, subject)
);
CREATE INDEX oauth_identities_user ON oauth_identities(user_id);
-- A user created by OAuth has no password: `users.password_hash` is '' (no PHC string
-- matches it) until a password reset sets one.
