//! Herald's dashboard: server-rendered pages under `/app` (askama templates compiled into the
//! binary, a vendored htmx, one stylesheet), mounted by `herald serve` beside the API on the
//! same listener (`herald_api::router_with`).
//!
//! Invariants:
//! - Page handlers are thin: they call the same service functions as the API's handlers
//!   (`herald_api::routes::*`), so a rule and its validation live once; a refused form comes
//!   back with each message beside its field.
//! - Sign-in state is the API's session cookie, read by the API's own extractors
//!   ([`session`]); the cross-site rule on writes is the API's (its authentication middleware
//!   runs before any page handler).
//! - Every response carries the dashboard's security headers ([`headers`]): a CSP without
//!   inline script and `frame-ancestors 'none'`.
//! - A project the user is not a member of, or an unknown id, is the 404 page.
#![forbid(unsafe_code)]

pub mod assets;
pub mod chart;
mod days;
mod deliverability;
mod filter_builder;
mod form;
mod format;
pub mod headers;
pub mod live;
mod pager;
mod pages;
mod render;
mod session;
mod shell;

use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::response::Redirect;
use axum::routing::{get, post};
use axum::{Extension, Router};
use herald_api::AppState;
use herald_api::routes::contact_jobs::IMPORT_BODY_LIMIT;

pub use live::LiveFeeds;

/// The dashboard's routes (and `GET /` → `/app/`); `live` holds the Activity page's open
/// streams (close it when the server stops).
pub fn router(live: LiveFeeds) -> Router<AppState> {
    let app = Router::new()
        .route("/app", get(|| async { Redirect::to("/app/") }))
        .route("/app/", get(pages::projects::start))
        .route("/app/assets/{name}", get(assets::serve))
        .route(
            "/app/login",
            get(pages::auth::login_page).post(pages::auth::login_submit),
        )
        .route(
            "/app/signup",
            get(pages::auth::signup_page).post(pages::auth::signup_submit),
        )
        .route("/app/logout", post(pages::auth::logout))
        .route(
            "/app/forgot-password",
            get(pages::auth::forgot_page).post(pages::auth::forgot_submit),
        )
        .route(
            "/app/reset-password",
            get(pages::auth::reset_page).post(pages::auth::reset_submit),
        )
        .route(
            "/app/verify-email",
            get(pages::auth::verify_page).post(pages::auth::verify_submit),
        )
        .route(
            "/app/projects/new",
            get(pages::projects::new_page).post(pages::projects::create),
        )
        .route("/app/account", get(pages::account::page))
        .route(
            "/app/account/password",
            post(pages::account::change_password),
        )
        .route(
            "/app/account/sessions/revoke-others",
            post(pages::account::revoke_others),
        )
        .route(
            "/app/account/sessions/{handle}/revoke",
            post(pages::account::revoke),
        )
        .route("/app/account/delete", post(pages::account::delete))
        .route("/app/p/{project}/", get(pages::home::page))
        .route(
            "/app/p/{project}/contacts",
            get(pages::contacts::page).post(pages::contacts::create),
        )
        .route(
            "/app/p/{project}/contacts/bulk",
            post(pages::contacts::bulk),
        )
        .route("/app/p/{project}/contacts/jobs", get(pages::contacts::jobs))
        .route(
            "/app/p/{project}/contacts/import",
            post(pages::contacts::import).layer(DefaultBodyLimit::max(IMPORT_BODY_LIMIT)),
        )
        .route(
            "/app/p/{project}/contacts/{id}",
            get(pages::contact::page).post(pages::contact::save),
        )
        .route(
            "/app/p/{project}/settings",
            get(pages::settings::page).post(pages::settings::save_general),
        )
        .route(
            "/app/p/{project}/settings/keys",
            post(pages::settings::regenerate_keys),
        )
        .route(
            "/app/p/{project}/settings/domains",
            post(pages::settings::add_domain),
        )
        .route(
            "/app/p/{project}/settings/domains/{id}/verify",
            post(pages::settings::verify_domain),
        )
        .route(
            "/app/p/{project}/settings/members",
            post(pages::settings::invite_member),
        )
        .route(
            "/app/p/{project}/settings/members/{user}",
            post(pages::settings::change_member),
        )
        .route(
            "/app/p/{project}/settings/billing",
            post(pages::settings_billing::save_limits),
        )
        .route(
            "/app/p/{project}/settings/billing/checkout",
            post(pages::settings_billing::checkout),
        )
        .route(
            "/app/p/{project}/settings/billing/portal",
            post(pages::settings_billing::portal),
        )
        .route(
            "/app/p/{project}/settings/reset",
            post(pages::settings::reset_project),
        )
        .route(
            "/app/p/{project}/settings/delete",
            post(pages::settings::delete_project),
        )
        .route("/app/p/{project}/segments", get(pages::segments::page))
        .route(
            "/app/p/{project}/segments/new",
            get(pages::segments::new_page).post(pages::segments::create_submit),
        )
        .route(
            "/app/p/{project}/segments/{id}",
            get(pages::segment::page).post(pages::segment::save),
        )
        .route(
            "/app/p/{project}/segments/{id}/members",
            post(pages::segment::add_member),
        )
        .route(
            "/app/p/{project}/segments/{id}/members/remove",
            post(pages::segment::remove_member),
        )
        .route(
            "/app/p/{project}/segments/{id}/delete",
            post(pages::segment::delete_submit),
        )
        .route(
            "/app/p/{project}/filter/builder",
            post(filter_builder::builder_fragment),
        )
        .route(
            "/app/p/{project}/filter/count",
            post(filter_builder::count_fragment),
        )
        .route(
            "/app/p/{project}/templates",
            get(pages::templates::list::page).post(pages::templates::list::create),
        )
        .route(
            "/app/p/{project}/templates/new",
            get(pages::templates::list::new_page),
        )
        .route(
            "/app/p/{project}/templates/preview",
            post(pages::templates::preview::fragment),
        )
        .route(
            "/app/p/{project}/templates/frame",
            post(pages::templates::preview::frame),
        )
        .route(
            "/app/p/{project}/templates/{id}",
            get(pages::templates::editor::page).post(pages::templates::editor::save),
        )
        .route(
            "/app/p/{project}/templates/{id}/frame",
            get(pages::templates::preview::saved_frame),
        )
        .route(
            "/app/p/{project}/templates/{id}/test",
            post(pages::templates::editor::test),
        )
        .route(
            "/app/p/{project}/campaigns",
            get(pages::campaigns::list::page).post(pages::campaigns::list::create_submit),
        )
        .route(
            "/app/p/{project}/campaigns/new",
            get(pages::campaigns::list::new_page),
        )
        .route(
            "/app/p/{project}/campaigns/count",
            post(pages::campaigns::editor::count),
        )
        .route(
            "/app/p/{project}/campaigns/{id}",
            get(pages::campaigns::editor::page).post(pages::campaigns::editor::save),
        )
        .route(
            "/app/p/{project}/campaigns/{id}/progress",
            get(pages::campaigns::report::progress_fragment),
        )
        .route(
            "/app/p/{project}/campaigns/{id}/test",
            post(pages::campaigns::actions::test),
        )
        .route(
            "/app/p/{project}/campaigns/{id}/send",
            post(pages::campaigns::actions::send_now),
        )
        .route(
            "/app/p/{project}/campaigns/{id}/schedule",
            post(pages::campaigns::actions::schedule),
        )
        .route(
            "/app/p/{project}/campaigns/{id}/cancel",
            post(pages::campaigns::actions::cancel_submit),
        )
        .route(
            "/app/p/{project}/workflows",
            get(pages::workflows::list::page).post(pages::workflows::list::create_submit),
        )
        .route(
            "/app/p/{project}/workflows/{id}",
            get(pages::workflows::page::page),
        )
        .route(
            "/app/p/{project}/workflows/{id}/settings",
            post(pages::workflows::actions::settings),
        )
        .route(
            "/app/p/{project}/workflows/{id}/enabled",
            post(pages::workflows::actions::enabled),
        )
        .route(
            "/app/p/{project}/workflows/{id}/start",
            post(pages::workflows::actions::start_for),
        )
        .route(
            "/app/p/{project}/workflows/{id}/add",
            post(pages::workflows::actions::add),
        )
        .route(
            "/app/p/{project}/workflows/{id}/steps/{step}",
            post(pages::workflows::actions::save_step),
        )
        .route(
            "/app/p/{project}/workflows/{id}/steps/{step}/delete",
            post(pages::workflows::actions::delete_step),
        )
        .route("/app/p/{project}/activity", get(pages::activity::page))
        .route("/app/p/{project}/analytics", get(pages::analytics::page))
        .route(
            "/app/p/{project}/activity/stream",
            get(pages::activity::stream::events),
        )
        .route(
            "/app/p/{project}/activity/live",
            get(pages::activity::stream::poll),
        )
        .route("/app/{*rest}", get(pages::not_found::page))
        .layer(middleware::from_fn(headers::dashboard_headers))
        .layer(Extension(live));
    Router::new()
        .route("/", get(|| async { Redirect::to("/app/") }))
        .merge(app)
}
