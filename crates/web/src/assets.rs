//! The dashboard's static files, embedded in the binary and served under content-hashed names
//! (`app.<8 hex of SHA-256>.css`) with a year-long immutable cache: a new build changes the
//! name of every file it changed, so no browser keeps a stale copy.

use std::borrow::Cow;
use std::sync::LazyLock;

use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

struct Asset {
    /// `app.css`: the name templates ask for.
    name: &'static str,
    content_type: &'static str,
    bytes: &'static [u8],
}

const FILES: [Asset; 6] = [
    Asset {
        name: "app.css",
        content_type: "text/css; charset=utf-8",
        bytes: include_bytes!("../assets/app.css"),
    },
    Asset {
        name: "app.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../assets/app.js"),
    },
    Asset {
        name: "editor.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../assets/editor.js"),
    },
    Asset {
        name: "activity.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../assets/activity.js"),
    },
    Asset {
        name: "icon.svg",
        content_type: "image/svg+xml",
        bytes: include_bytes!("../assets/icon.svg"),
    },
    Asset {
        name: "htmx.min.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../assets/htmx.min.js"),
    },
];

/// Each file as served, in the order of [`FILES`]: a stylesheet without its comments and
/// indentation (the source keeps them for the reader), anything else as it is.
static SERVED: LazyLock<Vec<Cow<'static, [u8]>>> = LazyLock::new(|| {
    FILES
        .iter()
        .map(|a| match a.name.ends_with(".css") {
            true => Cow::Owned(compact_css(a.bytes)),
            false => Cow::Borrowed(a.bytes),
        })
        .collect()
});

/// `css` without `/* ... */` comments, leading spaces and blank lines.
fn compact_css(css: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(css);
    let mut bare = String::with_capacity(text.len());
    let mut rest = text.as_ref();
    while let Some(start) = rest.find("/*") {
        bare.push_str(&rest[..start]);
        rest = rest[start + 2..]
            .find("*/")
            .map_or("", |end| &rest[start + 2 + end + 2..]);
    }
    bare.push_str(rest);
    let mut out = String::with_capacity(bare.len());
    for line in bare.lines().map(str::trim).filter(|l| !l.is_empty()) {
        out.push_str(line);
        out.push('\n');
    }
    out.into_bytes()
}

/// Each file's served name, in the order of [`FILES`].
static HASHED: LazyLock<Vec<String>> = LazyLock::new(|| {
    FILES
        .iter()
        .zip(SERVED.iter())
        .map(|(a, bytes)| {
            let digest = Sha256::digest(bytes);
            let short = hex::encode(&digest[..4]);
            match a.name.split_once('.') {
                Some((stem, ext)) => format!("{stem}.{short}.{ext}"),
                None => format!("{}.{short}", a.name),
            }
        })
        .collect()
});

/// The URL of the asset named `name` (`app.css`), or `/app/assets/missing` for an unknown name.
pub fn url(name: &str) -> String {
    FILES
        .iter()
        .position(|a| a.name == name)
        .and_then(|i| HASHED.get(i))
        .map_or_else(
            || "/app/assets/missing".to_owned(),
            |h| format!("/app/assets/{h}"),
        )
}

/// `GET /app/assets/{hashed name}`.
pub async fn serve(Path(name): Path<String>) -> Response {
    let Some(i) = HASHED.iter().position(|h| *h == name) else {
        return (StatusCode::NOT_FOUND, "Not found").into_response();
    };
    let (asset, bytes) = (&FILES[i], SERVED[i].clone());
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static(asset.content_type),
            ),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=31536000, immutable"),
            ),
        ],
        bytes,
    )
        .into_response()
}

/// Total size of the shipped files (benchmarks and the docs quote it).
pub fn total_bytes() -> usize {
    SERVED.iter().map(|b| b.len()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_has_a_hashed_name_that_serves_it() {
        for a in &FILES {
            let url = url(a.name);
            let name = url.strip_prefix("/app/assets/").expect("under /app/assets");
            assert_ne!(name, a.name, "content-hashed");
            assert!(HASHED.iter().any(|h| h == name));
        }
        assert_eq!(url("nope.css"), "/app/assets/missing");
    }

    #[test]
    fn shipped_files_stay_small() {
        // DESIGN.md: one CSS file under 30 KB; JS + CSS under 100 KB gzipped (htmx is 17 KB).
        assert!(
            SERVED[0].len() < 30_000,
            "app.css as served: {}",
            SERVED[0].len()
        );
        assert!(total_bytes() < 100_000);
    }

    #[test]
    fn a_stylesheet_is_served_without_comments_or_indentation() {
        let css = b"/* a\n comment */\n.a {\n  color: red; /* why */\n}\n\n.b { margin: 0; }\n";
        assert_eq!(
            String::from_utf8(compact_css(css)).unwrap(),
            ".a {\ncolor: red;\n}\n.b { margin: 0; }\n"
        );
        let served = String::from_utf8_lossy(&SERVED[0]);
        assert!(
            !served.contains("/*") && served.contains(":root"),
            "{served:.200}"
        );
    }
}
