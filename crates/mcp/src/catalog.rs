//! The tool list (DECISIONS.md "MCP server"): exact names, each bound to the one REST operation
//! it runs. A tool is its REST route, called in process (or over HTTP by the stdio bridge), so
//! validation, limits, the rate limit, billing, activity entries and the tenant scope are the
//! route's own: nothing here decides them again.
//!
//! No tool adds or removes a domain or a key, or deletes a project.

/// What a tool may do, which decides read-only mode and confirmation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Changes nothing: offered in `HERALD_MCP_READ_ONLY` mode.
    Read,
    /// Changes data.
    Write,
    /// Changes data in a way a person should approve first (mail goes out, data is deleted).
    Confirm,
}

/// How a tool's arguments become its REST call, where that is not the route's plain
/// path-and-body split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Path parameters from the arguments named like them; for GET and DELETE the rest is the
    /// query string, otherwise the JSON body.
    Plain,
    /// The body is this fixed JSON; the arguments hold only the path parameters.
    FixedBody(&'static str),
    /// The body holds only these fields of the route's body, all required.
    BodyFields(&'static [&'static str]),
    /// `get_contact`: `id`, or `email` resolved through `POST /contacts/lookup` first.
    ContactByIdOrEmail,
}

#[derive(Clone, Copy, Debug)]
pub struct ToolSpec {
    pub name: &'static str,
    pub method: &'static str,
    /// The OpenAPI path template of the route.
    pub path: &'static str,
    pub access: Access,
    pub shape: Shape,
    /// What the tool does and its limits; the route's own documentation follows it.
    pub summary: &'static str,
    /// Example arguments (JSON).
    pub example: &'static str,
}

const fn tool(
    name: &'static str,
    method: &'static str,
    path: &'static str,
    access: Access,
    summary: &'static str,
    example: &'static str,
) -> ToolSpec {
    ToolSpec {
        name,
        method,
        path,
        access,
        shape: Shape::Plain,
        summary,
        example,
    }
}

const fn shaped(spec: ToolSpec, shape: Shape) -> ToolSpec {
    ToolSpec { shape, ..spec }
}

use Access::{Confirm, Read, Write};

/// Every tool, in the order `tools/list` gives them.
pub const TOOLS: &[ToolSpec] = &[
    tool(
        "list_contacts",
        "GET",
        "/contacts",
        Read,
        "List the project's contacts, newest first, filtered by `search` (email substring) \
         and `subscribed` (true or false); at most 100 a page (`limit`), the next page \
         through `cursor`.",
        r#"{"search": "@example.com", "subscribed": true, "limit": 20}"#,
    ),
    shaped(
        tool(
            "get_contact",
            "GET",
            "/contacts/{id}",
            Read,
            "Get one contact by `id`, or by `email` (give one of the two).",
            r#"{"email": "ada@example.com"}"#,
        ),
        Shape::ContactByIdOrEmail,
    ),
    tool(
        "create_contact",
        "POST",
        "/contacts",
        Write,
        "Create a contact, or update the one with this email (an upsert): custom fields in \
         `data` merge into the existing ones.",
        r#"{"email": "ada@example.com", "subscribed": true, "data": {"plan": "pro"}}"#,
    ),
    tool(
        "update_contact",
        "PATCH",
        "/contacts/{id}",
        Write,
        "Change a contact's email, subscription or custom fields (only the fields given).",
        r#"{"id": "0190...", "data": {"plan": "team"}}"#,
    ),
    tool(
        "delete_contact",
        "DELETE",
        "/contacts/{id}",
        Confirm,
        "Delete a contact and its history. Asks the person to confirm.",
        r#"{"id": "0190..."}"#,
    ),
    shaped(
        tool(
            "subscribe_contact",
            "PATCH",
            "/contacts/{id}",
            Write,
            "Subscribe a contact to marketing mail (records `contact.subscribed`).",
            r#"{"id": "0190..."}"#,
        ),
        Shape::FixedBody(r#"{"subscribed": true}"#),
    ),
    shaped(
        tool(
            "unsubscribe_contact",
            "PATCH",
            "/contacts/{id}",
            Write,
            "Unsubscribe a contact from marketing mail (records `contact.unsubscribed`).",
            r#"{"id": "0190..."}"#,
        ),
        Shape::FixedBody(r#"{"subscribed": false}"#),
    ),
    tool(
        "send_email",
        "POST",
        "/v1/send",
        Confirm,
        "Send a transactional email from a verified domain to up to 50 recipients, with a \
         subject and body or a `template`. Asks the person to confirm.",
        r#"{"to": "ada@example.com", "from": "hello@yourdomain.com", "subject": "Welcome", "body": "<p>Hi {{firstName}}</p>"}"#,
    ),
    tool(
        "verify_email",
        "POST",
        "/v1/verify",
        Read,
        "Check whether an address looks deliverable: syntax, typos, disposable and role \
         addresses, and the domain's mail servers.",
        r#"{"email": "ada@gmial.com"}"#,
    ),
    tool(
        "track_event",
        "POST",
        "/v1/track",
        Write,
        "Record an event for a contact (created when new); workflows triggered by the event \
         start.",
        r#"{"email": "ada@example.com", "event": "signed_up", "data": {"plan": "pro"}}"#,
    ),
    tool(
        "list_templates",
        "GET",
        "/templates",
        Read,
        "List templates, filtered by `type` and `search`, a page at a time.",
        r#"{"type": "MARKETING", "limit": 20}"#,
    ),
    tool(
        "get_template",
        "GET",
        "/templates/{id}",
        Read,
        "Get one template with its subject and body.",
        r#"{"id": "0190..."}"#,
    ),
    tool(
        "create_template",
        "POST",
        "/templates",
        Write,
        "Create a template (subject and HTML body with {{variables}}).",
        r#"{"name": "Welcome", "subject": "Welcome, {{firstName}}", "body": "<p>Hello</p>", "type": "TRANSACTIONAL"}"#,
    ),
    tool(
        "update_template",
        "PATCH",
        "/templates/{id}",
        Write,
        "Change a template's fields (only the fields given).",
        r#"{"id": "0190...", "subject": "Welcome aboard"}"#,
    ),
    tool(
        "list_campaigns",
        "GET",
        "/campaigns",
        Read,
        "List campaigns, filtered by `status`, a page at a time.",
        r#"{"status": "DRAFT"}"#,
    ),
    tool(
        "get_campaign",
        "GET",
        "/campaigns/{id}",
        Read,
        "Get one campaign.",
        r#"{"id": "0190..."}"#,
    ),
    tool(
        "create_campaign",
        "POST",
        "/campaigns",
        Write,
        "Create a DRAFT campaign: subject, body, sender and audience (all contacts, a segment \
         or a filter).",
        r#"{"name": "March news", "subject": "What's new", "body": "<p>News</p>", "from": "news@yourdomain.com", "audienceType": "ALL"}"#,
    ),
    tool(
        "update_campaign",
        "PUT",
        "/campaigns/{id}",
        Write,
        "Replace a DRAFT or SCHEDULED campaign's fields.",
        r#"{"id": "0190...", "name": "March news", "subject": "What's new in March", "body": "<p>News</p>", "from": "news@yourdomain.com", "audienceType": "ALL"}"#,
    ),
    tool(
        "get_campaign_stats",
        "GET",
        "/campaigns/{id}/stats",
        Read,
        "A campaign's delivery, open, click, bounce and complaint counts and rates.",
        r#"{"id": "0190..."}"#,
    ),
    tool(
        "test_campaign",
        "POST",
        "/campaigns/{id}/test",
        Confirm,
        "Send the campaign once to a test address. Asks the person to confirm.",
        r#"{"id": "0190...", "email": "me@yourdomain.com"}"#,
    ),
    tool(
        "send_campaign",
        "POST",
        "/campaigns/{id}/send",
        Confirm,
        "Send a campaign to its audience now, or at `scheduledFor` (ISO 8601). Asks the person \
         to confirm.",
        r#"{"id": "0190...", "scheduledFor": "2026-12-01T09:00:00Z"}"#,
    ),
    tool(
        "cancel_campaign",
        "POST",
        "/campaigns/{id}/cancel",
        Confirm,
        "Cancel a SCHEDULED or SENDING campaign (messages not yet sent are dropped). Asks the \
         person to confirm.",
        r#"{"id": "0190..."}"#,
    ),
    tool(
        "list_segments",
        "GET",
        "/segments",
        Read,
        "List segments with their member counts.",
        "{}",
    ),
    tool(
        "get_segment",
        "GET",
        "/segments/{id}",
        Read,
        "Get one segment with its filter.",
        r#"{"id": "0190..."}"#,
    ),
    tool(
        "create_segment",
        "POST",
        "/segments",
        Write,
        "Create a segment from a filter over contact fields and events.",
        r#"{"name": "Pro plan", "filters": {"operator": "AND", "conditions": [{"field": "data.plan", "operator": "equals", "value": "pro"}]}}"#,
    ),
    tool(
        "list_workflows",
        "GET",
        "/workflows",
        Read,
        "List workflows with their steps and transitions.",
        "{}",
    ),
    tool(
        "get_workflow",
        "GET",
        "/workflows/{id}",
        Read,
        "Get one workflow with its steps and transitions.",
        r#"{"id": "0190..."}"#,
    ),
    tool(
        "create_workflow",
        "POST",
        "/workflows",
        Write,
        "Create a disabled workflow started by an event (its TRIGGER step is created with it).",
        r#"{"name": "Onboarding", "triggerType": "EVENT", "triggerConfig": {"eventName": "signed_up"}}"#,
    ),
    tool(
        "update_workflow",
        "PATCH",
        "/workflows/{id}",
        Write,
        "Change a workflow's name, description, trigger, re-entry or enabled state.",
        r#"{"id": "0190...", "name": "Onboarding v2"}"#,
    ),
    shaped(
        tool(
            "set_workflow_enabled",
            "PATCH",
            "/workflows/{id}",
            Write,
            "Enable or disable a workflow (an enabled one starts on its trigger event).",
            r#"{"id": "0190...", "enabled": true}"#,
        ),
        Shape::BodyFields(&["enabled"]),
    ),
    tool(
        "list_workflow_executions",
        "GET",
        "/workflows/{id}/executions",
        Read,
        "List a workflow's executions (runs), newest first, a page at a time.",
        r#"{"id": "0190..."}"#,
    ),
    tool(
        "list_domains",
        "GET",
        "/domains",
        Read,
        "List the project's sending domains with their DNS records and verification state.",
        "{}",
    ),
    tool(
        "check_domain",
        "GET",
        "/domains/{id}/verify",
        Write,
        "Look a domain's DNS records up now and record the result.",
        r#"{"id": "0190..."}"#,
    ),
    tool(
        "get_activity",
        "GET",
        "/activity",
        Read,
        "The project's activity feed (events, emails, changes), newest first, a page at a time.",
        r#"{"limit": 20}"#,
    ),
    tool(
        "get_analytics",
        "GET",
        "/analytics/timeseries",
        Read,
        "Sent, delivered, opened, clicked and bounced mail per day or hour over [from, to) \
         (default: the last 30 days by day, in UTC).",
        r#"{"from": "2026-11-01T00:00:00Z", "interval": "day", "tz": "Europe/Paris"}"#,
    ),
];

/// The tool named `name`, if it exists.
pub fn find(name: &str) -> Option<&'static ToolSpec> {
    TOOLS.iter().find(|t| t.name == name)
}
