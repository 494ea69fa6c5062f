//! OAuth sign-in with GitHub and Google (authorization-code flow, docs/accounts.md "OAuth").
//!
//! A provider is active only when its client id and secret are configured. The flow:
//! `GET /auth/oauth/{provider}` sets the `herald_oauth_state` cookie (a random nonce) and
//! redirects to the provider with a signed `state` carrying that nonce
//! ([`herald_core::oauth_state`]); the provider sends the browser back to
//! `/auth/oauth/{provider}/callback`, which checks the state against the cookie, exchanges the
//! code ([`provider_api`]) for the account's verified email, and signs in ([`sign_in`]).

pub mod provider_api;
pub mod sign_in;

/// A supported provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provider {
    GitHub,
    Google,
}

impl Provider {
    pub const ALL: [Provider; 2] = [Provider::GitHub, Provider::Google];

    /// The id in URLs and the `oauth_identities` table.
    pub fn id(self) -> &'static str {
        match self {
            Provider::GitHub => "github",
            Provider::Google => "google",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Provider::GitHub => "GitHub",
            Provider::Google => "Google",
        }
    }

    /// What Herald asks for: the account's identity and its email addresses, nothing else.
    pub fn scope(self) -> &'static str {
        match self {
            Provider::GitHub => "read:user user:email",
            Provider::Google => "openid email",
        }
    }

    pub fn parse(id: &str) -> Option<Provider> {
        Provider::ALL.into_iter().find(|p| p.id() == id)
    }
}

/// One configured provider: the OAuth client and the provider's endpoints (the real ones by
/// default; tests point them at a loopback stand-in).
#[derive(Clone)]
pub struct ProviderSettings {
    pub client_id: String,
    pub client_secret: String,
    /// Where the browser is sent to sign in.
    pub auth_url: String,
    /// Where the code is exchanged for an access token.
    pub token_url: String,
    /// GitHub: the API base (`/user`, `/user/emails`); Google: the OpenID userinfo URL.
    pub user_url: String,
}

/// The client secret never appears.
impl std::fmt::Debug for ProviderSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderSettings")
            .field("client_id", &self.client_id)
            .field("client_secret", &"[redacted]")
            .field("auth_url", &self.auth_url)
            .field("token_url", &self.token_url)
            .field("user_url", &self.user_url)
            .finish()
    }
}

/// The configured providers (none by default).
#[derive(Clone, Debug, Default)]
pub struct OAuthSettings {
    pub github: Option<ProviderSettings>,
    pub google: Option<ProviderSettings>,
}

impl OAuthSettings {
    /// The settings of `provider`, if it is configured.
    pub fn get(&self, provider: Provider) -> Option<&ProviderSettings> {
        match provider {
            Provider::GitHub => self.github.as_ref(),
            Provider::Google => self.google.as_ref(),
        }
    }

    /// The configured providers, in a fixed order.
    pub fn configured(&self) -> Vec<Provider> {
        Provider::ALL
            .into_iter()
            .filter(|p| self.get(*p).is_some())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_client_secret() {
        let s = OAuthSettings {
            github: Some(ProviderSettings {
                client_id: "id-123".into(),
                client_secret: "very-secret-value".into(),
                auth_url: "a".into(),
                token_url: "t".into(),
                user_url: "u".into(),
            }),
            google: None,
        };
        let d = format!("{s:?}");
        assert!(
            d.contains("id-123") && !d.contains("very-secret-value"),
            "{d}"
        );
        assert_eq!(s.configured(), [Provider::GitHub]);
        assert_eq!(Provider::parse("google"), Some(Provider::Google));
        assert_eq!(Provider::parse("GitHub"), None);
    }
}
