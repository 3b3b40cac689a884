//! Files the test network's web hosts serve at `/files/NAME`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::net::WEB_FILES;

/// A file the web hosts serve at `/files/NAME`, under a name no other test uses (the directory is
/// shared by the root and the unprivileged runs, and sticky: a name another user made cannot be
/// replaced). Removed when dropped.
pub struct WebFile {
    name: String,
    path: PathBuf,
}

impl WebFile {
    /// Writes `body` as `STEM-UNIQUE.EXT` in [`WEB_FILES`].
    pub fn new(stem: &str, ext: &str, body: &[u8]) -> WebFile {
        static N: AtomicUsize = AtomicUsize::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let name = format!(
            "{stem}-{}-{}-{nanos}.{ext}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        );
        let path = PathBuf::from(WEB_FILES).join(&name);
        std::fs::write(&path, body).unwrap_or_else(|e| {
            panic!(
                "writing {} (run inside scripts/test-host.sh, which makes the web hosts' files \
                 directory): {e}",
                path.display()
            )
        });
        WebFile { name, path }
    }

    /// The file's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `http://public.test/files/NAME`.
    pub fn url(&self) -> String {
        format!("http://public.test/files/{}", self.name)
    }
}

impl Drop for WebFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
