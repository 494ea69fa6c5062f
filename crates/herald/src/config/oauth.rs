//! The OAuth part of the configuration: which providers are on, and their endpoints.

use herald_api::oauth::{OAuthSettings, ProviderSettings};

use super::Config;

pub const GITHUB_AUTH_URL: &str = "https://github.com/login/oauth/authorize";
pub const GITHUB_TOKEN_URL: &str = "https://github.com/login/oauth/access_token";
pub const GITHUB_API_URL: &str = "https://api.github.com";
pub const GOOGLE_AUTH_URL: &str = "https://accounts.google.com/o/oauth2/v2/auth";
pub const GOOGLE_TOKEN_URL: &str = "https://oauth2.googleapis.com/token";
pub const GOOGLE_USERINFO_URL: &str = "https://openidconnect.googleapis.com/v1/userinfo";

/// A provider is on when both its client id and secret are set; one without the other is a
/// configuration error (`prefix` names the settings in the message).
fn provider(
    prefix: &str,
    id: Option<&String>,
    secret: Option<&String>,
    urls: [&String; 3],
) -> anyhow::Result<Option<ProviderSettings>> {
    let set = |v: Option<&String>| v.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
    match (set(id), set(secret)) {
        (None, None) => Ok(None),
        (Some(client_id), Some(client_secret)) => Ok(Some(ProviderSettings {
            client_id,
            client_secret,
            auth_url: urls[0].trim().to_owned(),
            token_url: urls[1].trim().to_owned(),
            user_url: urls[2].trim().to_owned(),
        })),
        (Some(_), None) => anyhow::bail!(
            "{prefix}_client_id is set but {prefix}_client_secret is not (HERALD_{}_CLIENT_SECRET): \
             set both to enable the provider, or neither",
            prefix.to_ascii_uppercase()
        ),
        (None, Some(_)) => anyhow::bail!(
            "{prefix}_client_secret is set but {prefix}_client_id is not (HERALD_{}_CLIENT_ID): \
             set both to enable the provider, or neither",
            prefix.to_ascii_uppercase()
        ),
    }
}

impl Config {
    /// The configured OAuth providers; an error when a client id lacks its secret (or the
    /// reverse), so a half-configured provider stops the server at startup.
    pub fn oauth_settings(&self) -> anyhow::Result<OAuthSettings> {
        Ok(OAuthSettings {
            github: provider(
                "oauth_github",
                self.oauth_github_client_id.as_ref(),
                self.oauth_github_client_secret.as_ref(),
                [
                    &self.oauth_github_auth_url,
                    &self.oauth_github_token_url,
                    &self.oauth_github_api_url,
                ],
            )?,
            google: provider(
                "oauth_google",
                self.oauth_google_client_id.as_ref(),
                self.oauth_google_client_secret.as_ref(),
                [
                    &self.oauth_google_auth_url,
                    &self.oauth_google_token_url,
                    &self.oauth_google_userinfo_url,
                ],
            )?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_id_without_its_secret_is_an_error_and_secrets_are_redacted() {
        let half = Config {
            oauth_github_client_id: Some("gh-id".into()),
            ..Config::default()
        };
        let err = half.oauth_settings().unwrap_err().to_string();
        assert!(err.contains("oauth_github_client_secret"), "{err}");
        let both = Config {
            oauth_google_client_id: Some("g-id".into()),
            oauth_google_client_secret: Some("g-very-secret".into()),
            ..Config::default()
        };
        let s = both.oauth_settings().unwrap();
        assert!(s.github.is_none());
        let google = s.google.unwrap();
        assert_eq!(google.token_url, GOOGLE_TOKEN_URL);
        for shown in [format!("{both:?}"), both.redacted_toml()] {
            assert!(!shown.contains("g-very-secret"), "{shown}");
            assert!(shown.contains("g-id"), "{shown}");
        }
        assert!(Config::default().oauth_settings().unwrap().github.is_none());
    }
}
