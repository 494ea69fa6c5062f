//! The words of the unsubscribe footer and the list pages, one table per language, shared by
//! the pipeline (the footer of MARKETING mail) and the API (the pages).
//!
//! Invariants:
//! - Every language has every string ([`Strings`] is a struct, so a missing one does not
//!   compile); `{email}` in a string is the only placeholder, filled (escaped) by the caller.
//! - [`choose`] always answers a supported language: the contact's `locale` if its primary
//!   subtag is supported (`de-AT` → `de`), else the project's `language`, else English.
//!
//! Adding a language: write one more `const XX: Strings` below, add it to [`LANGUAGES`], and
//! add it to the list in docs/tracking.md.

/// The strings of one language.
#[derive(Debug)]
pub struct Strings {
    /// The BCP 47 primary language subtag (`<html lang>`).
    pub code: &'static str,
    pub footer_notice: &'static str,
    pub footer_unsubscribe: &'static str,
    pub unsubscribe_title: &'static str,
    pub unsubscribe_prompt: &'static str,
    pub unsubscribe_button: &'static str,
    pub unsubscribed_title: &'static str,
    pub unsubscribed_body: &'static str,
    pub resubscribe_button: &'static str,
    pub subscribe_title: &'static str,
    pub subscribe_prompt: &'static str,
    pub subscribe_button: &'static str,
    pub subscribed_title: &'static str,
    pub subscribed_body: &'static str,
    pub manage_title: &'static str,
    pub manage_intro: &'static str,
    pub manage_legend: &'static str,
    pub manage_on: &'static str,
    pub manage_off: &'static str,
    pub manage_save: &'static str,
    pub manage_saved: &'static str,
    pub manage_link: &'static str,
    pub invalid_title: &'static str,
    pub invalid_body: &'static str,
    pub gone_title: &'static str,
    pub gone_body: &'static str,
}

const EN: Strings = Strings {
    code: "en",
    footer_notice: "You are receiving this email because you subscribed to our mailing list.",
    footer_unsubscribe: "Unsubscribe",
    unsubscribe_title: "Unsubscribe",
    unsubscribe_prompt: "Do you want to stop receiving marketing email at {email}?",
    unsubscribe_button: "Unsubscribe",
    unsubscribed_title: "You are unsubscribed",
    unsubscribed_body: "{email} will no longer receive our marketing email.",
    resubscribe_button: "Subscribe again",
    subscribe_title: "Subscribe",
    subscribe_prompt: "Do you want to receive our marketing email at {email} again?",
    subscribe_button: "Subscribe",
    subscribed_title: "You are subscribed",
    subscribed_body: "{email} will receive our marketing email.",
    manage_title: "Email preferences",
    manage_intro: "Choose which email {email} receives.",
    manage_legend: "Marketing email",
    manage_on: "Subscribed: send me marketing email",
    manage_off: "Unsubscribed: no marketing email",
    manage_save: "Save preferences",
    manage_saved: "Your preferences have been saved.",
    manage_link: "Manage email preferences",
    invalid_title: "This link is not valid",
    invalid_body: "This link is invalid or has been altered. Please use the link in the latest email you received.",
    gone_title: "Not found",
    gone_body: "This address is no longer on the list.",
};

const DE: Strings = Strings {
    code: "de",
    footer_notice: "Sie erhalten diese E-Mail, weil Sie unseren Newsletter abonniert haben.",
    footer_unsubscribe: "Abmelden",
    unsubscribe_title: "Abmelden",
    unsubscribe_prompt: "Möchten Sie unter {email} keine Marketing-E-Mails mehr erhalten?",
    unsubscribe_button: "Abmelden",
    unsubscribed_title: "Sie sind abgemeldet",
    unsubscribed_body: "{email} erhält keine Marketing-E-Mails mehr von uns.",
    resubscribe_button: "Erneut anmelden",
    subscribe_title: "Anmelden",
    subscribe_prompt: "Möchten Sie unter {email} wieder Marketing-E-Mails erhalten?",
    subscribe_button: "Anmelden",
    subscribed_title: "Sie sind angemeldet",
    subscribed_body: "{email} erhält unsere Marketing-E-Mails.",
    manage_title: "E-Mail-Einstellungen",
    manage_intro: "Wählen Sie, welche E-Mails {email} erhält.",
    manage_legend: "Marketing-E-Mails",
    manage_on: "Angemeldet: Marketing-E-Mails erhalten",
    manage_off: "Abgemeldet: keine Marketing-E-Mails",
    manage_save: "Einstellungen speichern",
    manage_saved: "Ihre Einstellungen wurden gespeichert.",
    manage_link: "E-Mail-Einstellungen verwalten",
    invalid_title: "Dieser Link ist ungültig",
    invalid_body: "Dieser Link ist ungültig oder wurde verändert. Bitte verwenden Sie den Link aus der letzten E-Mail, die Sie erhalten haben.",
    gone_title: "Nicht gefunden",
    gone_body: "Diese Adresse steht nicht mehr auf der Liste.",
};

const FR: Strings = Strings {
    code: "fr",
    footer_notice: "Vous recevez cet e-mail car vous êtes abonné(e) à notre liste de diffusion.",
    footer_unsubscribe: "Se désabonner",
    unsubscribe_title: "Désabonnement",
    unsubscribe_prompt: "Voulez-vous ne plus recevoir nos e-mails marketing à l’adresse {email} ?",
    unsubscribe_button: "Se désabonner",
    unsubscribed_title: "Vous êtes désabonné(e)",
    unsubscribed_body: "{email} ne recevra plus nos e-mails marketing.",
    resubscribe_button: "Se réabonner",
    subscribe_title: "Abonnement",
    subscribe_prompt: "Voulez-vous recevoir à nouveau nos e-mails marketing à l’adresse {email} ?",
    subscribe_button: "S’abonner",
    subscribed_title: "Vous êtes abonné(e)",
    subscribed_body: "{email} recevra nos e-mails marketing.",
    manage_title: "Préférences e-mail",
    manage_intro: "Choisissez les e-mails que reçoit {email}.",
    manage_legend: "E-mails marketing",
    manage_on: "Abonné(e) : recevoir les e-mails marketing",
    manage_off: "Désabonné(e) : aucun e-mail marketing",
    manage_save: "Enregistrer les préférences",
    manage_saved: "Vos préférences ont été enregistrées.",
    manage_link: "Gérer mes préférences e-mail",
    invalid_title: "Ce lien n’est pas valide",
    invalid_body: "Ce lien n’est pas valide ou a été modifié. Utilisez le lien du dernier e-mail que vous avez reçu.",
    gone_title: "Introuvable",
    gone_body: "Cette adresse ne figure plus sur la liste.",
};

const ES: Strings = Strings {
    code: "es",
    footer_notice: "Recibes este correo porque estás suscrito a nuestra lista de correo.",
    footer_unsubscribe: "Darse de baja",
    unsubscribe_title: "Darse de baja",
    unsubscribe_prompt: "¿Quieres dejar de recibir correos de marketing en {email}?",
    unsubscribe_button: "Darme de baja",
    unsubscribed_title: "Te has dado de baja",
    unsubscribed_body: "{email} ya no recibirá nuestros correos de marketing.",
    resubscribe_button: "Volver a suscribirme",
    subscribe_title: "Suscribirse",
    subscribe_prompt: "¿Quieres volver a recibir nuestros correos de marketing en {email}?",
    subscribe_button: "Suscribirme",
    subscribed_title: "Estás suscrito",
    subscribed_body: "{email} recibirá nuestros correos de marketing.",
    manage_title: "Preferencias de correo",
    manage_intro: "Elige qué correos recibe {email}.",
    manage_legend: "Correos de marketing",
    manage_on: "Suscrito: recibir correos de marketing",
    manage_off: "Dado de baja: ningún correo de marketing",
    manage_save: "Guardar preferencias",
    manage_saved: "Tus preferencias se han guardado.",
    manage_link: "Gestionar preferencias de correo",
    invalid_title: "Este enlace no es válido",
    invalid_body: "Este enlace no es válido o ha sido modificado. Usa el enlace del último correo que recibiste.",
    gone_title: "No encontrado",
    gone_body: "Esta dirección ya no está en la lista.",
};

/// Every supported language; the first is the fallback.
pub const LANGUAGES: &[&Strings] = &[&EN, &DE, &FR, &ES];

/// The supported language of a tag (`de`, `DE-at`, `fr_CA`), if any.
pub fn supported(tag: &str) -> Option<&'static Strings> {
    let primary = tag.trim().split(['-', '_']).next().unwrap_or_default();
    LANGUAGES
        .iter()
        .copied()
        .find(|s| s.code.eq_ignore_ascii_case(primary))
}

/// The supported language an `Accept-Language` header prefers most (`de-DE,de;q=0.9,en;q=0.8`),
/// if any: tags by descending quality, in header order among equals; `q=0` and `*` never
/// choose.
pub fn from_accept_language(header: &str) -> Option<&'static Strings> {
    let mut tags: Vec<(f32, usize, &str)> = header
        .split(',')
        .enumerate()
        .filter_map(|(i, part)| {
            let mut fields = part.split(';');
            let tag = fields.next()?.trim();
            let q = fields
                .find_map(|f| f.trim().strip_prefix("q="))
                .map_or(1.0, |q| q.trim().parse::<f32>().unwrap_or(0.0));
            (q > 0.0 && !tag.is_empty() && tag != "*").then_some((q, i, tag))
        })
        .collect();
    tags.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    tags.iter().find_map(|(_, _, tag)| supported(tag))
}

/// The language of a contact's pages and footer: its `locale`, else the project's language,
/// else English.
pub fn choose(contact_locale: Option<&str>, project_language: &str) -> &'static Strings {
    contact_locale
        .and_then(supported)
        .or_else(|| supported(project_language))
        .unwrap_or(&EN)
}

/// English, the fallback (pages whose contact is unknown, e.g. a broken link).
pub fn english() -> &'static Strings {
    &EN
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_contacts_locale_then_the_projects_language() {
        assert_eq!(choose(Some("de"), "fr").code, "de");
        assert_eq!(choose(Some("DE-at"), "fr").code, "de");
        assert_eq!(choose(Some("fr_CA"), "en").code, "fr");
        assert_eq!(choose(Some("it"), "es").code, "es");
        assert_eq!(choose(None, "es-MX").code, "es");
        assert_eq!(choose(Some(""), "pt-BR").code, "en");
        assert_eq!(choose(None, "").code, "en");
    }

    #[test]
    fn accept_language_picks_the_best_supported_tag() {
        let code = |h: &str| from_accept_language(h).map(|s| s.code);
        assert_eq!(code("de-DE,de;q=0.9,en;q=0.8"), Some("de"));
        assert_eq!(code("it, pt;q=0.9, es;q=0.2, fr;q=0.3"), Some("fr"));
        assert_eq!(code("en;q=0.5, de"), Some("de"));
        assert_eq!(code("fr;q=0, es"), Some("es"));
        assert_eq!(code("it, *;q=0.1"), None);
        assert_eq!(code(""), None);
    }

    #[test]
    fn every_language_is_complete_and_distinct() {
        for s in LANGUAGES {
            let all = [
                s.footer_notice,
                s.footer_unsubscribe,
                s.unsubscribe_title,
                s.unsubscribe_prompt,
                s.unsubscribed_body,
                s.subscribe_prompt,
                s.subscribed_body,
                s.manage_intro,
                s.manage_save,
                s.invalid_body,
                s.gone_body,
            ];
            assert!(all.iter().all(|t| !t.trim().is_empty()), "{}", s.code);
            for t in [s.unsubscribe_prompt, s.unsubscribed_body, s.manage_intro] {
                assert!(t.contains("{email}"), "{}: {t}", s.code);
            }
        }
        assert_ne!(DE.footer_notice, EN.footer_notice);
        assert_ne!(FR.footer_notice, ES.footer_notice);
    }
}
