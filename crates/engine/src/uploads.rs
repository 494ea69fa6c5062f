//! Uploaded images: checked by content, stored under a content-addressed name (the SHA-256 of
//! the bytes plus the format's extension), so the same image uploaded twice is stored once and
//! a name never changes meaning. Storage is behind [`ImageStorage`]; the local implementation
//! keeps files in the data directory, and an S3-compatible store can implement the same trait.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

use herald_core::image_kind::ImageKind;
use sha2::{Digest, Sha256};

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = anyhow::Result<T>> + Send + 'a>>;

/// Where uploaded images live.
pub trait ImageStorage: Send + Sync {
    /// Stores `bytes` under `name` (idempotent: the name is derived from the bytes).
    fn put<'a>(&'a self, name: &'a str, bytes: &'a [u8]) -> BoxFuture<'a, ()>;
    /// The bytes stored under `name`, if any.
    fn get<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Option<Vec<u8>>>;
}

/// Files in a directory, written through a temporary file and a rename (never half a file).
pub struct LocalImageStorage {
    dir: PathBuf,
}

impl LocalImageStorage {
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }
}

impl ImageStorage for LocalImageStorage {
    fn put<'a>(&'a self, name: &'a str, bytes: &'a [u8]) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            use anyhow::Context;
            let path = self.dir.join(name);
            if tokio::fs::try_exists(&path).await.unwrap_or(false) {
                return Ok(());
            }
            tokio::fs::create_dir_all(&self.dir)
                .await
                .with_context(|| format!("creating {}", self.dir.display()))?;
            let tmp = self
                .dir
                .join(format!(".{name}.{}", herald_core::ids::new_id()));
            tokio::fs::write(&tmp, bytes)
                .await
                .with_context(|| format!("writing {}", tmp.display()))?;
            tokio::fs::rename(&tmp, &path)
                .await
                .with_context(|| format!("renaming to {}", path.display()))?;
            Ok(())
        })
    }

    fn get<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Option<Vec<u8>>> {
        Box::pin(async move {
            match tokio::fs::read(self.dir.join(name)).await {
                Ok(b) => Ok(Some(b)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e.into()),
            }
        })
    }
}

/// The content-addressed name of an image.
pub fn image_name(bytes: &[u8], kind: ImageKind) -> String {
    format!(
        "{}.{}",
        hex::encode(Sha256::digest(bytes)),
        kind.extension()
    )
}

/// The kind of a well-formed stored name (`<64 hex>.<ext>`), else `None`.
pub fn parse_image_name(name: &str) -> Option<ImageKind> {
    let (hash, ext) = name.split_once('.')?;
    if hash.len() != 64 || !hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    ImageKind::from_extension(ext)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_content_addressed_and_checked() {
        let n = image_name(b"GIF89a", ImageKind::Gif);
        assert!(n.ends_with(".gif"));
        assert_eq!(parse_image_name(&n), Some(ImageKind::Gif));
        assert_eq!(parse_image_name("../etc/passwd"), None);
        assert_eq!(parse_image_name(&n.replace(".gif", ".svg")), None);
    }
}
