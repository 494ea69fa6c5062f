-- The sign-in slow-down counts failures per (account, client address) (DECISIONS.md
-- "Accounts"): wrong passwords from one address must not lock the account for every other
-- address. The old rows named no client; they cover at most the last 15 minutes and are
-- dropped with the table.
DROP TABLE login_failures;
CREATE TABLE login_failures (
    email TEXT NOT NULL,
    -- The client address (herald_api::auth::client_limit), as text.
    client TEXT NOT NULL,
    failed_at BIGINT NOT NULL
);
CREATE INDEX login_failures_email_client ON login_failures(email, client, failed_at);
