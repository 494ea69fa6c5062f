//! The environment layer of the configuration: `HERALD_<SETTING>` for each field of
//! [`Config`] (upper-cased), plus the spec's `DISABLE_SIGNUPS`.
//!
//! Why not figment's own `Env` provider: it parses every value as TOML-ish data, so a secret or
//! a schema name made only of digits arrives as a number and fails to load as a string. Here
//! every value stays a string and `extract_lossy` converts it where the field wants a number
//! or a boolean (`"50"`, `"true"`, `"yes"`). Only names of real settings are read, so other
//! `HERALD_*` variables (`HERALD_LOG`, `HERALD_CONFIG`, test settings) never collide with the
//! file's `deny_unknown_fields`.

use figment::value::{Dict, Map, Value};
use figment::{Error, Metadata, Profile, Provider};
use serde::de::{self, Deserializer, Visitor};

use super::Config;

pub struct EnvStrings(Dict);

impl EnvStrings {
    /// Reads the variables of every setting through `get`; empty values count as unset.
    pub fn read(get: impl Fn(&str) -> Option<String>) -> EnvStrings {
        let mut dict = Dict::new();
        for &name in setting_names() {
            let var = format!("HERALD_{}", name.to_ascii_uppercase());
            let alias = (name == "disable_signups").then_some("DISABLE_SIGNUPS");
            let value = get(&var)
                .filter(|v| !v.is_empty())
                .or_else(|| alias.and_then(&get).filter(|v| !v.is_empty()));
            if let Some(v) = value {
                dict.insert(name.to_string(), Value::from(v));
            }
        }
        EnvStrings(dict)
    }
}

impl Provider for EnvStrings {
    fn metadata(&self) -> Metadata {
        Metadata::named("environment variable")
            .interpolater(|_, keys| format!("HERALD_{}", keys.join("_").to_ascii_uppercase()))
    }

    fn data(&self) -> Result<Map<Profile, Dict>, Error> {
        Ok(Profile::Default.collect(self.0.clone()))
    }
}

/// The field names of [`Config`], read from its `Deserialize` implementation (so the list
/// can never drift from the struct).
pub fn setting_names() -> &'static [&'static str] {
    struct Capture(Option<&'static [&'static str]>);
    impl<'de> Deserializer<'de> for &mut Capture {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            self.0 = Some(fields);
            Err(de::Error::custom("captured"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }
    let mut capture = Capture(None);
    let _ = <Config as serde::Deserialize>::deserialize(&mut capture);
    capture.0.unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_is_named() {
        let names = setting_names();
        assert!(names.contains(&"listen"));
        assert!(names.contains(&"send_lease_secs"));
        assert!(names.contains(&"database_statement_timeout_secs"));
        assert!(names.contains(&"disable_signups"));
        assert!(names.len() > 30, "{names:?}");
    }
}
