//! SPF, DKIM and DMARC verdicts of an inbound message (mail-auth), through the configured DNS
//! resolver (`HERALD_DNS_RESOLVER`, else the system's):
//! - SPF checks the HELO name and then the MAIL FROM domain (RFC 7208 section 2.3; the HELO
//!   result stands when it fails or MAIL FROM is empty);
//! - DKIM is `pass` when one signature verifies, else the first signature's failure (`fail`,
//!   a body changed after signing included, `neutral`, `temperror`, `permerror`), `none`
//!   without a signature;
//! - DMARC is the From domain's policy evaluated on those two with alignment (`pass`,
//!   `fail`, `none` without a record, `temperror`, `permerror`).

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use mail_auth::dkim::DkimError;
use mail_auth::dmarc::verify::DmarcParameters;
use mail_auth::hickory_resolver::config::{NameServerConfig, ResolverConfig, ResolverOpts};
use mail_auth::spf::verify::SpfParameters;
use mail_auth::{AuthenticatedMessage, DkimResult, DmarcResult, MessageAuthenticator, SpfResult};

/// The three verdicts, as the `email.received` event carries them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdicts {
    pub spf: String,
    pub dkim: String,
    pub dmarc: String,
}

/// A resolver for the verdicts: `nameserver` (UDP and TCP) or the system's.
pub fn authenticator(nameserver: Option<SocketAddr>) -> anyhow::Result<MessageAuthenticator> {
    let mut opts = ResolverOpts::default();
    opts.timeout = Duration::from_secs(5);
    opts.attempts = 2;
    Ok(match nameserver {
        Some(addr) => {
            let mut server = NameServerConfig::udp_and_tcp(addr.ip());
            for c in &mut server.connections {
                c.port = addr.port();
            }
            MessageAuthenticator::new(ResolverConfig::from_name_servers(vec![server]), opts)?
        }
        None => MessageAuthenticator::new_system_conf()?,
    })
}

fn spf_name(r: SpfResult) -> &'static str {
    match r {
        SpfResult::Pass => "pass",
        SpfResult::Fail => "fail",
        SpfResult::SoftFail => "softfail",
        SpfResult::Neutral => "neutral",
        SpfResult::TempError => "temperror",
        SpfResult::PermError => "permerror",
        SpfResult::None => "none",
    }
}

fn dkim_name(r: &DkimResult) -> &'static str {
    match r {
        DkimResult::Pass => "pass",
        // mail-auth reports a body changed after signing as neutral; RFC 6376 section 6.1.3
        // makes it a failed signature, and so does Herald.
        DkimResult::Neutral(mail_auth::Error::Dkim(DkimError::FailedBodyHashMatch)) => "fail",
        DkimResult::Neutral(_) => "neutral",
        DkimResult::Fail(_) => "fail",
        DkimResult::PermError(_) => "permerror",
        DkimResult::TempError(_) => "temperror",
        DkimResult::None => "none",
    }
}

fn dmarc_name(r: &DmarcResult) -> &'static str {
    match r {
        DmarcResult::Pass => "pass",
        DmarcResult::Fail(_) => "fail",
        DmarcResult::TempError(_) => "temperror",
        DmarcResult::PermError(_) => "permerror",
        DmarcResult::None => "none",
    }
}

/// The verdicts of `raw`, received from `ip` after `HELO helo` and `MAIL FROM:<mail_from>`;
/// `host` is this server's name.
pub async fn verdicts(
    auth: &MessageAuthenticator,
    raw: &[u8],
    ip: IpAddr,
    helo: &str,
    host: &str,
    mail_from: &str,
) -> Verdicts {
    let spf = auth
        .verify_spf(SpfParameters::verify(ip, helo, host, mail_from))
        .await;
    let Some(message) = AuthenticatedMessage::parse(raw) else {
        return Verdicts {
            spf: spf_name(spf.result()).to_owned(),
            dkim: "none".into(),
            dmarc: "none".into(),
        };
    };
    let dkim = auth.verify_dkim(&message).await;
    let dkim_verdict = if dkim.iter().any(|o| *o.result() == DkimResult::Pass) {
        "pass"
    } else {
        dkim.first().map_or("none", |o| dkim_name(o.result()))
    };
    let mail_from_domain = match mail_from.rsplit_once('@') {
        Some((_, d)) => d,
        None => helo,
    };
    let dmarc = auth
        .verify_dmarc(DmarcParameters::new(
            &message,
            &dkim,
            mail_from_domain,
            &spf,
        ))
        .await;
    Verdicts {
        spf: spf_name(spf.result()).to_owned(),
        dkim: dkim_verdict.to_owned(),
        dmarc: dmarc_name(&dmarc.result()).to_owned(),
    }
}
