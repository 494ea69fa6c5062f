//! Liveness and readiness: 200 once the database answers (migrations run before listening).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(health))
}

#[derive(Serialize, ToSchema)]
pub struct Health {
    /// `ok` or `unavailable`.
    pub status: &'static str,
}

/// 200 `{status:"ok"}` when the database is reachable, 503 otherwise.
#[utoipa::path(get, path = "/health", tag = "system", responses((status = 200, body = Health), (status = 503, body = Health)))]
async fn health(State(state): State<AppState>) -> (StatusCode, Json<Health>) {
    if state.store.ping().await {
        (StatusCode::OK, Json(Health { status: "ok" }))
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(Health {
                status: "unavailable",
            }),
        )
    }
}
