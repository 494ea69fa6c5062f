-- Every node of a cluster must share one secret (DECISIONS.md "Several nodes on one
-- PostgreSQL"): the database keeps a fingerprint of it (an HMAC of a fixed text under the
-- secret, which does not reveal it), written by the first node and by `herald rotate-secret`;
-- a node whose secret gives another fingerprint refuses to start. One row.
CREATE TABLE node_secret (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    fingerprint TEXT NOT NULL
);
