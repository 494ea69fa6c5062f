//! What a node does (`herald serve --role`, `HERALD_ROLE`): `all` (the default) serves every
//! route and runs the background work; `api` serves every route and takes no background work;
//! `worker` runs the background work and serves only `/health` and `/metrics`. Several nodes
//! share one PostgreSQL (DECISIONS.md "Several nodes on one PostgreSQL").

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    #[default]
    All,
    Api,
    Worker,
}

impl Role {
    pub fn parse(s: &str) -> anyhow::Result<Role> {
        match s.trim().to_ascii_lowercase().as_str() {
            "" | "all" => Ok(Role::All),
            "api" => Ok(Role::Api),
            "worker" => Ok(Role::Worker),
            other => anyhow::bail!("role must be all, api or worker, not {other:?}"),
        }
    }

    /// Serves the API's routes (not only `/health` and `/metrics`).
    pub fn serves_api(self) -> bool {
        self != Role::Worker
    }

    /// Whether the background workers run: never on `api`, always on `worker`, and on `all`
    /// as the `workers` setting says.
    pub fn runs_workers(self, workers_setting: bool) -> bool {
        match self {
            Role::All => workers_setting,
            Role::Api => false,
            Role::Worker => true,
        }
    }
}

impl<'de> Deserialize<'de> for Role {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(d)?;
        Role::parse(&raw).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn parses_the_three_roles_and_refuses_others() {
        assert_eq!(Role::parse("").unwrap(), Role::All);
        assert_eq!(Role::parse(" API ").unwrap(), Role::Api);
        assert_eq!(Role::parse("worker").unwrap(), Role::Worker);
        let err = Role::parse("leader").unwrap_err().to_string();
        assert!(err.contains("all, api or worker"), "{err}");
        assert!(Role::All.serves_api() && Role::All.runs_workers(true));
        assert!(!Role::All.runs_workers(false));
        assert!(Role::Api.serves_api() && !Role::Api.runs_workers(true));
        assert!(!Role::Worker.serves_api() && Role::Worker.runs_workers(false));
    }
}
