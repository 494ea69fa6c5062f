//! The words of Herald's account mail (verification, password reset, invitation) and of the
//! pages their links open, one table per language: the languages of the list pages
//! ([`crate::list_i18n::LANGUAGES`]).
//!
//! Invariants:
//! - Every language has every string ([`AccountStrings`] is a struct, so a missing one does
//!   not compile); `{email}` and `{project}` are the only placeholders, filled (escaped) by
//!   the caller.
//! - [`choose`] always answers a supported language: an explicit `lang` (the page's query, the
//!   link in the mail) if supported, else the best supported language of `Accept-Language`,
//!   else English. Herald stores no language per user.

use crate::list_i18n;

/// The strings of one language.
#[derive(Debug)]
pub struct AccountStrings {
    /// The BCP 47 primary language subtag (`<html lang>`, the `lang` of links).
    pub code: &'static str,
    // The mails.
    pub verify_subject: &'static str,
    pub verify_intro: &'static str,
    pub verify_link: &'static str,
    pub reset_subject: &'static str,
    pub reset_intro: &'static str,
    pub reset_link: &'static str,
    /// `{project}`: the project's name.
    pub invite_subject: &'static str,
    pub invite_intro: &'static str,
    pub invite_link: &'static str,
    // The pages.
    pub verify_title: &'static str,
    pub verify_prompt: &'static str,
    pub verify_button: &'static str,
    pub verified_title: &'static str,
    pub verified_body: &'static str,
    pub reset_title: &'static str,
    pub reset_label: &'static str,
    pub reset_button: &'static str,
    pub reset_done_title: &'static str,
    pub reset_done_body: &'static str,
    pub invite_title: &'static str,
    /// `{email}`: the invited address.
    pub invite_prompt: &'static str,
    pub invite_label: &'static str,
    pub invite_button: &'static str,
    pub welcome_title: &'static str,
    /// `{email}`: the new account's address.
    pub welcome_body: &'static str,
    pub incomplete_title: &'static str,
    pub incomplete_body: &'static str,
    pub error_title: &'static str,
    pub token_invalid: &'static str,
    pub password_invalid: &'static str,
    pub account_exists: &'static str,
    pub signups_disabled: &'static str,
}

const EN: AccountStrings = AccountStrings {
    code: "en",
    verify_subject: "Verify your email address",
    verify_intro: "Confirm that this address is yours.",
    verify_link: "Verify email",
    reset_subject: "Reset your password",
    reset_intro: "Someone asked to reset the password of this account. If it was not you, ignore this mail.",
    reset_link: "Choose a new password",
    invite_subject: "You are invited to {project}",
    invite_intro: "You are invited to join {project} on Herald.",
    invite_link: "Accept the invitation",
    verify_title: "Verify your email address",
    verify_prompt: "Confirm that this address is yours.",
    verify_button: "Verify email",
    verified_title: "Email verified",
    verified_body: "Your email address is verified.",
    reset_title: "Choose a new password",
    reset_label: "New password (8 to 256 characters)",
    reset_button: "Set password",
    reset_done_title: "Password changed",
    reset_done_body: "Your password is changed and every session was signed out. Sign in with the new password.",
    invite_title: "Accept the invitation",
    invite_prompt: "Create the account {email} to join the project.",
    invite_label: "Password (8 to 256 characters)",
    invite_button: "Create account",
    welcome_title: "Welcome to Herald",
    welcome_body: "Your account {email} was created and joined the project.",
    incomplete_title: "Invalid link",
    incomplete_body: "This link is incomplete. Open the link from the mail again.",
    error_title: "Something went wrong",
    token_invalid: "This link is invalid, was already used, or has expired. Ask for a new mail.",
    password_invalid: "The password must be 8 to 256 characters.",
    account_exists: "An account with this email already exists.",
    signups_disabled: "Sign-ups are disabled on this server.",
};

const DE: AccountStrings = AccountStrings {
    code: "de",
    verify_subject: "Bestätigen Sie Ihre E-Mail-Adresse",
    verify_intro: "Bestätigen Sie, dass diese Adresse Ihnen gehört.",
    verify_link: "E-Mail-Adresse bestätigen",
    reset_subject: "Setzen Sie Ihr Passwort zurück",
    reset_intro: "Jemand hat angefordert, das Passwort dieses Kontos zurückzusetzen. Wenn Sie es nicht waren, ignorieren Sie diese E-Mail.",
    reset_link: "Neues Passwort wählen",
    invite_subject: "Sie sind zu {project} eingeladen",
    invite_intro: "Sie sind eingeladen, {project} auf Herald beizutreten.",
    invite_link: "Einladung annehmen",
    verify_title: "Bestätigen Sie Ihre E-Mail-Adresse",
    verify_prompt: "Bestätigen Sie, dass diese Adresse Ihnen gehört.",
    verify_button: "E-Mail-Adresse bestätigen",
    verified_title: "E-Mail-Adresse bestätigt",
    verified_body: "Ihre E-Mail-Adresse ist bestätigt.",
    reset_title: "Neues Passwort wählen",
    reset_label: "Neues Passwort (8 bis 256 Zeichen)",
    reset_button: "Passwort festlegen",
    reset_done_title: "Passwort geändert",
    reset_done_body: "Ihr Passwort wurde geändert und alle Sitzungen wurden abgemeldet. Melden Sie sich mit dem neuen Passwort an.",
    invite_title: "Einladung annehmen",
    invite_prompt: "Erstellen Sie das Konto {email}, um dem Projekt beizutreten.",
    invite_label: "Passwort (8 bis 256 Zeichen)",
    invite_button: "Konto erstellen",
    welcome_title: "Willkommen bei Herald",
    welcome_body: "Ihr Konto {email} wurde erstellt und ist dem Projekt beigetreten.",
    incomplete_title: "Ungültiger Link",
    incomplete_body: "Dieser Link ist unvollständig. Öffnen Sie den Link aus der E-Mail erneut.",
    error_title: "Etwas ist schiefgelaufen",
    token_invalid: "Dieser Link ist ungültig, wurde bereits verwendet oder ist abgelaufen. Fordern Sie eine neue E-Mail an.",
    password_invalid: "Das Passwort muss 8 bis 256 Zeichen lang sein.",
    account_exists: "Es gibt bereits ein Konto mit dieser E-Mail-Adresse.",
    signups_disabled: "Registrierungen sind auf diesem Server deaktiviert.",
};

const FR: AccountStrings = AccountStrings {
    code: "fr",
    verify_subject: "Confirmez votre adresse e-mail",
    verify_intro: "Confirmez que cette adresse vous appartient.",
    verify_link: "Confirmer l’adresse e-mail",
    reset_subject: "Réinitialisez votre mot de passe",
    reset_intro: "Quelqu’un a demandé la réinitialisation du mot de passe de ce compte. Si ce n’était pas vous, ignorez cet e-mail.",
    reset_link: "Choisir un nouveau mot de passe",
    invite_subject: "Vous êtes invité(e) à {project}",
    invite_intro: "Vous êtes invité(e) à rejoindre {project} sur Herald.",
    invite_link: "Accepter l’invitation",
    verify_title: "Confirmez votre adresse e-mail",
    verify_prompt: "Confirmez que cette adresse vous appartient.",
    verify_button: "Confirmer l’adresse e-mail",
    verified_title: "Adresse e-mail confirmée",
    verified_body: "Votre adresse e-mail est confirmée.",
    reset_title: "Choisir un nouveau mot de passe",
    reset_label: "Nouveau mot de passe (8 à 256 caractères)",
    reset_button: "Enregistrer le mot de passe",
    reset_done_title: "Mot de passe modifié",
    reset_done_body: "Votre mot de passe est modifié et toutes les sessions ont été fermées. Connectez-vous avec le nouveau mot de passe.",
    invite_title: "Accepter l’invitation",
    invite_prompt: "Créez le compte {email} pour rejoindre le projet.",
    invite_label: "Mot de passe (8 à 256 caractères)",
    invite_button: "Créer le compte",
    welcome_title: "Bienvenue sur Herald",
    welcome_body: "Votre compte {email} a été créé et a rejoint le projet.",
    incomplete_title: "Lien non valide",
    incomplete_body: "Ce lien est incomplet. Ouvrez à nouveau le lien de l’e-mail.",
    error_title: "Une erreur s’est produite",
    token_invalid: "Ce lien n’est pas valide, a déjà été utilisé ou a expiré. Demandez un nouvel e-mail.",
    password_invalid: "Le mot de passe doit comporter de 8 à 256 caractères.",
    account_exists: "Un compte existe déjà avec cette adresse e-mail.",
    signups_disabled: "Les inscriptions sont désactivées sur ce serveur.",
};

const ES: AccountStrings = AccountStrings {
    code: "es",
    verify_subject: "Verifica tu dirección de correo",
    verify_intro: "Confirma que esta dirección es tuya.",
    verify_link: "Verificar correo",
    reset_subject: "Restablece tu contraseña",
    reset_intro: "Alguien pidió restablecer la contraseña de esta cuenta. Si no fuiste tú, ignora este correo.",
    reset_link: "Elegir una contraseña nueva",
    invite_subject: "Te han invitado a {project}",
    invite_intro: "Te han invitado a unirte a {project} en Herald.",
    invite_link: "Aceptar la invitación",
    verify_title: "Verifica tu dirección de correo",
    verify_prompt: "Confirma que esta dirección es tuya.",
    verify_button: "Verificar correo",
    verified_title: "Correo verificado",
    verified_body: "Tu dirección de correo está verificada.",
    reset_title: "Elegir una contraseña nueva",
    reset_label: "Contraseña nueva (de 8 a 256 caracteres)",
    reset_button: "Guardar contraseña",
    reset_done_title: "Contraseña cambiada",
    reset_done_body: "Tu contraseña se ha cambiado y se han cerrado todas las sesiones. Inicia sesión con la contraseña nueva.",
    invite_title: "Aceptar la invitación",
    invite_prompt: "Crea la cuenta {email} para unirte al proyecto.",
    invite_label: "Contraseña (de 8 a 256 caracteres)",
    invite_button: "Crear cuenta",
    welcome_title: "Te damos la bienvenida a Herald",
    welcome_body: "Tu cuenta {email} se ha creado y se ha unido al proyecto.",
    incomplete_title: "Enlace no válido",
    incomplete_body: "Este enlace está incompleto. Vuelve a abrir el enlace del correo.",
    error_title: "Algo ha salido mal",
    token_invalid: "Este enlace no es válido, ya se usó o ha caducado. Pide un correo nuevo.",
    password_invalid: "La contraseña debe tener de 8 a 256 caracteres.",
    account_exists: "Ya existe una cuenta con este correo.",
    signups_disabled: "Los registros están desactivados en este servidor.",
};

/// Every supported language, in the order of [`list_i18n::LANGUAGES`]; the first is the
/// fallback.
pub const LANGUAGES: &[&AccountStrings] = &[&EN, &DE, &FR, &ES];

/// The strings of a supported language code; English for any other.
pub fn for_code(code: &str) -> &'static AccountStrings {
    LANGUAGES
        .iter()
        .copied()
        .find(|s| s.code == code)
        .unwrap_or(&EN)
}

/// The language of an account page or mail: `explicit` (a `lang` parameter) if supported, else
/// the preferred supported language of an `Accept-Language` header, else English.
pub fn choose(explicit: Option<&str>, accept_language: Option<&str>) -> &'static AccountStrings {
    explicit
        .and_then(list_i18n::supported)
        .or_else(|| accept_language.and_then(list_i18n::from_accept_language))
        .map_or(&EN, |s| for_code(s.code))
}

/// English, the fallback.
pub fn english() -> &'static AccountStrings {
    &EN
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(s: &AccountStrings) -> Vec<&'static str> {
        vec![
            s.verify_subject,
            s.verify_intro,
            s.verify_link,
            s.reset_subject,
            s.reset_intro,
            s.reset_link,
            s.invite_subject,
            s.invite_intro,
            s.invite_link,
            s.verify_title,
            s.verify_prompt,
            s.verify_button,
            s.verified_title,
            s.verified_body,
            s.reset_title,
            s.reset_label,
            s.reset_button,
            s.reset_done_title,
            s.reset_done_body,
            s.invite_title,
            s.invite_prompt,
            s.invite_label,
            s.invite_button,
            s.welcome_title,
            s.welcome_body,
            s.incomplete_title,
            s.incomplete_body,
            s.error_title,
            s.token_invalid,
            s.password_invalid,
            s.account_exists,
            s.signups_disabled,
        ]
    }

    #[test]
    fn every_language_of_the_list_pages_has_every_account_string() {
        let codes: Vec<_> = LANGUAGES.iter().map(|s| s.code).collect();
        let list: Vec<_> = list_i18n::LANGUAGES.iter().map(|s| s.code).collect();
        assert_eq!(codes, list);
        for s in LANGUAGES {
            assert!(all(s).iter().all(|t| !t.trim().is_empty()), "{}", s.code);
            for t in [s.invite_subject, s.invite_intro] {
                assert!(t.contains("{project}"), "{}: {t}", s.code);
            }
            for t in [s.invite_prompt, s.welcome_body] {
                assert!(t.contains("{email}"), "{}: {t}", s.code);
            }
            if s.code != "en" {
                // Translated, not copied: no string but proper names equals the English one.
                let same = all(s)
                    .iter()
                    .zip(all(&EN))
                    .filter(|(a, b)| **a == *b)
                    .count();
                assert_eq!(same, 0, "{}", s.code);
            }
        }
    }

    #[test]
    fn an_explicit_language_wins_then_accept_language_then_english() {
        assert_eq!(choose(Some("de"), Some("fr")).code, "de");
        assert_eq!(choose(Some("it"), Some("fr-CA,fr;q=0.9")).code, "fr");
        assert_eq!(choose(None, Some("it, es;q=0.5, de;q=0.7")).code, "de");
        assert_eq!(choose(None, Some("*")).code, "en");
        assert_eq!(choose(None, None).code, "en");
    }
}
