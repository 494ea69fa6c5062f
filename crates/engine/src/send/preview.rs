//! The preview of a message before it is sent (the dashboard's template editor): a subject and
//! body rendered for a sample contact by the rules of a send ([`render_vars`], [`render_parts`]),
//! the text part delivery derives from the HTML, and the variables the two use with their
//! fallbacks and the values the sample gives them.
//!
//! The sample contact has the nil id and no message, so its list-page links lead nowhere real.

use herald_core::html_text::html_to_text;
use herald_core::ids::Uuid;
use herald_core::template::{Template, value_of};
use serde_json::{Map, Value};

use super::accept::{render_parts, render_vars};
use crate::Engine;

/// A variable of the previewed subject or body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreviewVariable {
    pub path: String,
    /// The fallback of its first tag that has one.
    pub fallback: Option<String>,
    /// What the sample contact gives it (before the fallback).
    pub value: Option<String>,
}

#[derive(Clone, Debug)]
pub struct Preview {
    pub subject: String,
    pub html: String,
    /// The text/plain part delivery derives from `html` (before any unsubscribe footer).
    pub text: String,
    /// Subject's variables first, then the body's, each once.
    pub variables: Vec<PreviewVariable>,
}

impl Engine {
    /// `subject` and `body` rendered for a sample contact with address `email` and `data`.
    pub fn preview(
        &self,
        project_id: Uuid,
        subject: &str,
        body: &str,
        email: &str,
        data: &Map<String, Value>,
    ) -> Preview {
        let contact = Uuid::nil();
        let pages = self.links.page_urls(project_id, contact, None);
        let vars = render_vars(contact, email, data, pages);
        preview_with(subject, body, &vars)
    }
}

fn preview_with(subject: &str, body: &str, vars: &Map<String, Value>) -> Preview {
    let (subject, body) = (Template::parse(subject), Template::parse(body));
    let mut variables: Vec<PreviewVariable> = Vec::new();
    for (path, fallback) in subject
        .variables_with_fallbacks()
        .into_iter()
        .chain(body.variables_with_fallbacks())
    {
        match variables.iter_mut().find(|v| v.path == path) {
            Some(v) => {
                if v.fallback.is_none() {
                    v.fallback = fallback;
                }
            }
            None => variables.push(PreviewVariable {
                value: value_of(vars, &path),
                path,
                fallback,
            }),
        }
    }
    let (subject, html) = render_parts(&subject, &body, vars);
    Preview {
        text: html_to_text(&html),
        subject,
        html,
        variables,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::links::PageUrls;

    fn vars(data: Value) -> Map<String, Value> {
        let Value::Object(data) = data else {
            panic!("an object")
        };
        let pages = PageUrls {
            unsubscribe: "https://h.test/unsubscribe/x".into(),
            subscribe: String::new(),
            manage: String::new(),
        };
        render_vars(Uuid::nil(), "ada@example.com", &data, pages)
    }

    #[test]
    fn renders_as_a_send_does() {
        let p = preview_with(
            "Hi {{firstName ?? \"there\"}}\r\nagain",
            "<p>{{ firstName }} &amp; {{plan ?? \"free\"}} <a href=\"{{unsubscribeUrl}}\">out</a></p>",
            &vars(json!({"firstName": "<Ada>"})),
        );
        assert_eq!(p.subject, "Hi <Ada>  again", "unescaped, one line");
        assert_eq!(
            p.html,
            "<p>&lt;Ada&gt; &amp; free <a href=\"https://h.test/unsubscribe/x\">out</a></p>"
        );
        assert_eq!(p.text, "<Ada> & free out (https://h.test/unsubscribe/x)");
        let listed: Vec<(&str, Option<&str>, Option<&str>)> = p
            .variables
            .iter()
            .map(|v| (v.path.as_str(), v.fallback.as_deref(), v.value.as_deref()))
            .collect();
        assert_eq!(
            listed,
            [
                ("firstName", Some("there"), Some("<Ada>")),
                ("plan", Some("free"), None),
                ("unsubscribeUrl", None, Some("https://h.test/unsubscribe/x")),
            ]
        );
    }
}
