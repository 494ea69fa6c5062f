//! DKIM verification for tests: checks a received message's signature with mail-auth against
//! a TXT record the test fetched from its DNS server (pre-loaded into mail-auth's cache, so
//! no outside resolver is ever asked).

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mail_auth::common::parse::TxtRecordParser;
use mail_auth::common::verify::DomainKey;
use mail_auth::{
    AuthenticatedMessage, DkimResult, MessageAuthenticator, Parameters, ResolverCache, Txt,
};

struct Cache<K, V>(Mutex<HashMap<K, V>>);

impl<K: Hash + Eq, V: Clone> ResolverCache<K, V> for Cache<K, V> {
    fn get<Q>(&self, name: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.0.lock().ok()?.get(name).cloned()
    }
    fn remove<Q>(&self, name: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.0.lock().ok()?.remove(name)
    }
    fn insert(&self, key: K, value: V, _valid_until: Instant) {
        if let Ok(mut m) = self.0.lock() {
            m.insert(key, value);
        }
    }
}

/// The DKIM results of `signed` given the TXT record at `selector._domainkey.domain`.
pub async fn dkim_results(
    signed: &[u8],
    domain: &str,
    selector: &str,
    txt: &str,
) -> anyhow::Result<Vec<DkimResult>> {
    let cache: Cache<Box<str>, Txt> = Cache(Mutex::new(HashMap::new()));
    let key =
        DomainKey::parse(txt.as_bytes()).map_err(|e| anyhow::anyhow!("DKIM TXT record: {e}"))?;
    cache.insert(
        format!("{selector}._domainkey.{domain}.").into_boxed_str(),
        Txt::from(key),
        Instant::now() + Duration::from_secs(3600),
    );
    let authenticator = MessageAuthenticator::new_cloudflare()?;
    let message = AuthenticatedMessage::parse(signed)
        .ok_or_else(|| anyhow::anyhow!("message does not parse"))?;
    let params = Parameters::new(&message).with_txt_cache(&cache);
    Ok(authenticator
        .verify_dkim(params)
        .await
        .into_iter()
        .map(|o| o.result().clone())
        .collect())
}

/// True when `signed` carries exactly one DKIM signature and it verifies.
pub async fn dkim_passes(signed: &[u8], domain: &str, selector: &str, txt: &str) -> bool {
    matches!(
        dkim_results(signed, domain, selector, txt).await.as_deref(),
        Ok([DkimResult::Pass])
    )
}
