//! Templates: reusable subject, body and sender settings of a project.
//!
//! Values arrive validated and normalised (the API applies the rules; `from_email` is already
//! lower-cased). The store keeps `from_domain`, the domain of `from_email`, in step with it on
//! every write, so domain removal can find the templates that send from a domain. Every query
//! is scoped by project: another project's id is simply absent.

use herald_core::ids::{Uuid, new_id};
use herald_core::kinds::TemplateType;
use herald_core::time::Millis;
use sqlx::{AssertSqlSafe, FromRow};

use crate::engine::Dialect;
use crate::{Store, StoreError, StoreResult};

#[derive(Clone, Debug, PartialEq, Eq, FromRow)]
pub struct Template {
    pub id: Uuid,
    pub name: String,
    pub subject: String,
    pub body: String,
    /// Stored as its name (TRANSACTIONAL, MARKETING or HEADLESS).
    #[sqlx(try_from = "String")]
    pub template_type: TemplateType,
    pub from_email: Option<String>,
    pub from_name: Option<String>,
    pub reply_to: Option<String>,
    pub created_at: Millis,
    pub updated_at: Millis,
}

const COLUMNS: &str = "id, name, subject, body, type AS template_type, from_email, from_name, \
                       reply_to, created_at, updated_at";

/// A template to create.
pub struct NewTemplate<'a> {
    pub project_id: Uuid,
    pub name: &'a str,
    pub subject: &'a str,
    pub body: &'a str,
    pub template_type: TemplateType,
    pub from_email: Option<&'a str>,
    pub from_name: Option<&'a str>,
    pub reply_to: Option<&'a str>,
    pub now: Millis,
}

/// A partial change: `None` keeps a value; `Some(None)` clears an optional one.
#[derive(Default)]
pub struct TemplateUpdate<'a> {
    pub name: Option<&'a str>,
    pub subject: Option<&'a str>,
    pub body: Option<&'a str>,
    pub template_type: Option<TemplateType>,
    pub from_email: Option<Option<&'a str>>,
    pub from_name: Option<Option<&'a str>>,
    pub reply_to: Option<Option<&'a str>>,
    pub now: Millis,
}

impl TemplateUpdate<'_> {
    /// `old` with the change applied (`updated_at` untouched).
    fn apply(&self, old: &Template) -> Template {
        let pick = |v: Option<&str>, old: &str| v.unwrap_or(old).to_owned();
        let pick_opt = |v: Option<Option<&str>>, old: &Option<String>| {
            v.map_or_else(|| old.clone(), |v| v.map(str::to_owned))
        };
        Template {
            name: pick(self.name, &old.name),
            subject: pick(self.subject, &old.subject),
            body: pick(self.body, &old.body),
            template_type: self.template_type.unwrap_or(old.template_type),
            from_email: pick_opt(self.from_email, &old.from_email),
            from_name: pick_opt(self.from_name, &old.from_name),
            reply_to: pick_opt(self.reply_to, &old.reply_to),
            ..old.clone()
        }
    }
}

/// What a listing keeps: an exact type and a case-insensitive substring of name or subject.
#[derive(Default)]
pub struct TemplateFilter<'a> {
    pub template_type: Option<TemplateType>,
    pub search: Option<&'a str>,
}

/// One page of a listing, newest first, with the number of matches over all pages.
pub struct TemplatePage {
    pub templates: Vec<Template>,
    pub total: i64,
}

/// The lower-cased domain of an address, what `from_domain` holds.
fn domain_of(email: Option<&str>) -> Option<String> {
    email
        .and_then(|e| e.rsplit_once('@'))
        .map(|(_, d)| d.to_lowercase())
}

/// The WHERE clause of a listing and its text binds, which follow the project id (`$1`).
fn filter_clause(filter: &TemplateFilter<'_>) -> (String, Vec<String>) {
    let mut clause = String::from("project_id = $1");
    let mut binds = Vec::new();
    if let Some(t) = filter.template_type {
        binds.push(t.as_str().to_owned());
        clause.push_str(&format!(" AND type = ${}", binds.len() + 1));
    }
    if let Some(s) = filter.search {
        binds.push(crate::like::contains(s));
        let n = binds.len() + 1;
        clause.push_str(&format!(
            " AND (lower(name) LIKE ${n} ESCAPE '\\' OR lower(subject) LIKE ${n} ESCAPE '\\')"
        ));
    }
    (clause, binds)
}

impl Store {
    pub async fn create_template(&self, new: &NewTemplate<'_>) -> StoreResult<Template> {
        let t = Template {
            id: new_id(),
            name: new.name.to_owned(),
            subject: new.subject.to_owned(),
            body: new.body.to_owned(),
            template_type: new.template_type,
            from_email: new.from_email.map(str::to_owned),
            from_name: new.from_name.map(str::to_owned),
            reply_to: new.reply_to.map(str::to_owned),
            created_at: new.now,
            updated_at: new.now,
        };
        self.insert_template(new.project_id, &t).await?;
        Ok(t)
    }

    async fn insert_template(&self, project_id: Uuid, t: &Template) -> StoreResult<()> {
        let from_domain = domain_of(t.from_email.as_deref());
        db_write!(self, |pool| {
            sqlx::query(
                "INSERT INTO templates (id, project_id, name, subject, body, type, from_email, \
                 from_name, reply_to, from_domain, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
            )
            .bind(t.id)
            .bind(project_id)
            .bind(&t.name)
            .bind(&t.subject)
            .bind(&t.body)
            .bind(t.template_type.as_str())
            .bind(&t.from_email)
            .bind(&t.from_name)
            .bind(&t.reply_to)
            .bind(&from_domain)
            .bind(t.created_at)
            .bind(t.updated_at)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// One template of the project.
    pub async fn template(&self, project_id: Uuid, id: Uuid) -> StoreResult<Option<Template>> {
        self.project_row::<Template>("templates", COLUMNS, project_id, id)
            .await
    }

    /// Applies a partial change; `NotFound` when the project has no such template. A change
    /// that alters nothing leaves the row (and `updated_at`) as it was.
    pub async fn update_template(
        &self,
        project_id: Uuid,
        id: Uuid,
        change: &TemplateUpdate<'_>,
    ) -> StoreResult<Template> {
        let mut tx = self.begin().await?;
        let lock = if tx.dialect() == Dialect::Postgres {
            " FOR UPDATE"
        } else {
            ""
        };
        let q = format!("SELECT {COLUMNS} FROM templates WHERE project_id = $1 AND id = $2{lock}");
        let found: Option<Template> = db_tx!(&mut tx, |conn| {
            sqlx::query_as(AssertSqlSafe(q.as_str()))
                .bind(project_id)
                .bind(id)
                .fetch_optional(&mut *conn)
                .await?
        });
        let old = found.ok_or(StoreError::NotFound)?;
        let mut t = change.apply(&old);
        if t == old {
            tx.commit().await?;
            return Ok(t);
        }
        t.updated_at = change.now;
        let from_domain = domain_of(t.from_email.as_deref());
        db_tx!(&mut tx, |conn| {
            sqlx::query(
                "UPDATE templates SET name = $3, subject = $4, body = $5, type = $6, \
                 from_email = $7, from_name = $8, reply_to = $9, from_domain = $10, \
                 updated_at = $11 WHERE project_id = $1 AND id = $2",
            )
            .bind(project_id)
            .bind(id)
            .bind(&t.name)
            .bind(&t.subject)
            .bind(&t.body)
            .bind(t.template_type.as_str())
            .bind(&t.from_email)
            .bind(&t.from_name)
            .bind(&t.reply_to)
            .bind(&from_domain)
            .bind(t.updated_at)
            .execute(&mut *conn)
            .await?;
        });
        tx.commit().await?;
        Ok(t)
    }

    /// Deletes a template. False when the project had none with this id.
    pub async fn delete_template(&self, project_id: Uuid, id: Uuid) -> StoreResult<bool> {
        let n = db_write!(self, |pool| {
            sqlx::query("DELETE FROM templates WHERE project_id = $1 AND id = $2")
                .bind(project_id)
                .bind(id)
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(n > 0)
    }

    /// Copies a template under a new id and the given name; `None` when there is no source.
    pub async fn duplicate_template(
        &self,
        project_id: Uuid,
        id: Uuid,
        name: impl FnOnce(&str) -> String,
        now: Millis,
    ) -> StoreResult<Option<Template>> {
        let Some(source) = self.template(project_id, id).await? else {
            return Ok(None);
        };
        let copy = Template {
            id: new_id(),
            name: name(&source.name),
            created_at: now,
            updated_at: now,
            ..source
        };
        self.insert_template(project_id, &copy).await?;
        Ok(Some(copy))
    }

    /// Templates matching `filter`, newest first: `limit` of them after skipping `offset`.
    pub async fn list_templates(
        &self,
        project_id: Uuid,
        filter: &TemplateFilter<'_>,
        limit: u32,
        offset: u64,
    ) -> StoreResult<TemplatePage> {
        let (clause, binds) = filter_clause(filter);
        let n = binds.len() + 2;
        let list = format!(
            "SELECT {COLUMNS} FROM templates WHERE {clause} ORDER BY id DESC LIMIT ${n} OFFSET ${}",
            n + 1
        );
        let count = format!("SELECT count(*) FROM templates WHERE {clause}");
        let offset = i64::try_from(offset).unwrap_or(i64::MAX);
        let templates: Vec<Template> = db_read!(self, |pool| {
            let mut q = sqlx::query_as(AssertSqlSafe(list.as_str())).bind(project_id);
            for b in &binds {
                q = q.bind(b);
            }
            q.bind(i64::from(limit))
                .bind(offset)
                .fetch_all(pool)
                .await?
        });
        let (total,): (i64,) = db_read!(self, |pool| {
            let mut q = sqlx::query_as(AssertSqlSafe(count.as_str())).bind(project_id);
            for b in &binds {
                q = q.bind(b);
            }
            q.fetch_one(pool).await?
        });
        Ok(TemplatePage { templates, total })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_pattern_escapes_wildcards() {
        assert_eq!(crate::like::contains("A_b%"), "%a\\_b\\%%");
    }

    #[test]
    fn from_domain_is_the_lower_cased_domain() {
        assert_eq!(
            domain_of(Some("ada@Mail.Example.test")).as_deref(),
            Some("mail.example.test")
        );
        assert_eq!(domain_of(None), None);
    }

    #[test]
    fn filters_number_their_binds_after_the_project() {
        let (clause, binds) = filter_clause(&TemplateFilter {
            template_type: Some(TemplateType::Marketing),
            search: Some("50%"),
        });
        assert_eq!(binds, ["MARKETING", "%50\\%%"]);
        assert!(clause.contains("type = $2"), "{clause}");
        assert!(clause.contains("lower(subject) LIKE $3"), "{clause}");
    }
}
