//! Typed query strings: one struct per route (`serde::Deserialize` + `utoipa::IntoParams`)
//! states each parameter, its bounds and its default once, for the handler and for the
//! OpenAPI document alike.
//!
//! [`Query`] applies the same checks as [`RawQuery`](crate::extract::RawQuery) first (a NUL
//! or a repeated parameter is a 422 on that parameter), then deserialises; unknown parameters
//! are ignored, as unknown JSON fields are. A [`Bounded`] integer outside its range is a 422
//! `VALIDATION_ERROR` on that parameter, code `out_of_range`.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::Deserialize;
use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
use utoipa::openapi::{RefOr, Schema};
use utoipa::{IntoParams, PartialSchema, ToSchema};

use crate::error::ApiError;
use crate::extract::checked_query;

/// The query string of a request, deserialised into `T`.
pub struct Query<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        parse_query(parts.uri.query().unwrap_or("")).map(Query)
    }
}

/// A query string whose parameters are read after the handler's own first checks: a route
/// whose path names a resource answers 404 for an unknown one (or 403 for a forbidden one)
/// before it judges the parameters, as a client exploring ids expects. A NUL or a repeated
/// parameter is refused at once, as everywhere.
pub struct LaterQuery<T> {
    raw: String,
    of: PhantomData<fn() -> T>,
}

impl<T: DeserializeOwned> LaterQuery<T> {
    pub fn parse(&self) -> Result<T, ApiError> {
        parse_query(&self.raw)
    }
}

impl<S: Send + Sync, T> FromRequestParts<S> for LaterQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let raw = parts.uri.query().unwrap_or("");
        checked_query(raw)?;
        Ok(LaterQuery {
            raw: raw.to_owned(),
            of: PhantomData,
        })
    }
}

/// Parses a query string into `T` with the checks and errors of this module.
pub fn parse_query<T: DeserializeOwned>(q: &str) -> Result<T, ApiError> {
    checked_query(q)?;
    let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(q.as_bytes()));
    serde_path_to_error::deserialize(de).map_err(|e| {
        let field = e.path().to_string();
        let message = e.inner().to_string();
        ApiError::field(field.clone(), format!("{field} {message}"), "out_of_range")
    })
}

/// An integer parameter in `MIN..=MAX`, `DEFAULT` when absent or empty. Whether it was given
/// (non-empty) is kept, for parameters that have an alias (`pageSize` for `limit`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bounded<const MIN: u32, const MAX: u32, const DEFAULT: u32>(Option<u32>);

impl<const MIN: u32, const MAX: u32, const DEFAULT: u32> Bounded<MIN, MAX, DEFAULT> {
    /// The value, or the default when the parameter was absent or empty.
    pub fn get(self) -> u32 {
        self.0.unwrap_or(DEFAULT)
    }

    /// Whether the parameter was given with a value.
    pub fn given(self) -> bool {
        self.0.is_some()
    }

    /// `self`, unless only `alias` was given (clients written for another API name it
    /// differently: `pageSize` for `limit`, `cursor` for `page`). Both are checked whenever
    /// they are given, so a bad one is never silently ignored.
    pub fn or_alias(self, alias: Self) -> u32 {
        if alias.given() && !self.given() {
            alias.get()
        } else {
            self.get()
        }
    }
}

impl<'de, const MIN: u32, const MAX: u32, const DEFAULT: u32> serde::Deserialize<'de>
    for Bounded<MIN, MAX, DEFAULT>
{
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Int<const MIN: u32, const MAX: u32>;
        impl<const MIN: u32, const MAX: u32> Visitor<'_> for Int<MIN, MAX> {
            type Value = Option<u32>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "an integer from {MIN} to {MAX}")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Option<u32>, E> {
                if v.is_empty() {
                    return Ok(None);
                }
                match v.parse::<u32>() {
                    Ok(n) if (MIN..=MAX).contains(&n) => Ok(Some(n)),
                    _ => Err(E::custom(format_args!(
                        "must be an integer from {MIN} to {MAX}"
                    ))),
                }
            }
        }
        deserializer.deserialize_str(Int::<MIN, MAX>).map(Bounded)
    }
}

impl<const MIN: u32, const MAX: u32, const DEFAULT: u32> PartialSchema
    for Bounded<MIN, MAX, DEFAULT>
{
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(SchemaType::Type(Type::Integer))
            .minimum(Some(MIN))
            .maximum(Some(MAX))
            .default(Some(DEFAULT.into()))
            .description(Some(format!("{MIN}..{MAX}, default {DEFAULT}")))
            .into()
    }
}

impl<const MIN: u32, const MAX: u32, const DEFAULT: u32> ToSchema for Bounded<MIN, MAX, DEFAULT> {
    fn name() -> Cow<'static, str> {
        Cow::Owned(format!("Bounded{MIN}To{MAX}Default{DEFAULT}"))
    }
}

/// `limit` and `page` (alias `cursor`) of the lists paged by number (templates, campaigns).
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageParams {
    #[serde(default)]
    #[param(inline)]
    pub limit: Limit,
    #[serde(default)]
    #[param(inline)]
    pub page: PageNumber,
    /// a page number, for cursor-style clients (alias of `page`)
    #[serde(default)]
    #[param(inline)]
    pub cursor: PageNumber,
}

impl PageParams {
    /// The page asked for: `page`, or `cursor` when only that is given.
    pub fn page(&self) -> u32 {
        self.page.or_alias(self.cursor)
    }
}

/// A text parameter's value, `None` when absent or empty.
pub fn text(value: &Option<String>) -> Option<&str> {
    value.as_deref().filter(|s| !s.is_empty())
}

/// `limit` of most lists: 1..100, default 20.
pub type Limit = Bounded<1, 100, 20>;
/// A page number from 1.
pub type PageNumber = Bounded<1, { u32::MAX }, 1>;

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Q {
        #[serde(default)]
        limit: Limit,
        #[serde(default)]
        page_size: Limit,
        #[serde(default)]
        days: Bounded<1, 365, 7>,
        search: Option<String>,
    }

    #[test]
    fn defaults_bounds_and_aliases() {
        let q: Q = parse_query("").unwrap();
        assert_eq!((q.limit.get(), q.days.get(), q.search), (20, 7, None));
        let q: Q = parse_query("limit=&days=365&search=a%40b&other=x").unwrap();
        assert_eq!((q.limit.get(), q.days.get()), (20, 365));
        assert_eq!(q.search.as_deref(), Some("a@b"));
        let q: Q = parse_query("pageSize=5").unwrap();
        assert_eq!(q.limit.or_alias(q.page_size), 5);
        let q: Q = parse_query("pageSize=5&limit=7").unwrap();
        assert_eq!(q.limit.or_alias(q.page_size), 7);
    }

    #[test]
    fn an_integer_out_of_range_is_refused_on_its_parameter() {
        for (q, field) in [
            ("limit=0", "limit"),
            ("limit=101", "limit"),
            ("limit=x", "limit"),
            ("limit=-1", "limit"),
            ("days=366", "days"),
            ("limit=5&pageSize=500", "pageSize"),
        ] {
            let err = parse_query::<Q>(q).err().unwrap();
            assert_eq!(err.status, StatusCode::UNPROCESSABLE_ENTITY, "{q}");
            assert_eq!(err.errors[0].field, field, "{q}");
            assert_eq!(err.errors[0].code, "out_of_range", "{q}");
        }
        let err = parse_query::<Q>("limit=101").err().unwrap();
        assert_eq!(
            err.errors[0].message,
            "limit must be an integer from 1 to 100"
        );
    }

    #[test]
    fn nul_and_repeated_parameters_are_refused_first() {
        let err = parse_query::<Q>("search=a%00").err().unwrap();
        assert_eq!(err.errors[0].code, "invalid_characters");
        let err = parse_query::<Q>("limit=5&limit=6").err().unwrap();
        assert_eq!(err.errors[0].code, "duplicate_parameter");
    }
}
