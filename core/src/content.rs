//! Prompt content blocks (ACP `ContentBlock` JSON) built for the embedder: text, an image or
//! audio file with its MIME type, an embedded text file, a link. What the agent accepts is still
//! checked when the prompt is sent (`promptCapabilities`; an unsupported block fails locally and
//! nothing is sent).

use std::path::Path;

use base64::Engine;
use serde_json::{Value, json};

use crate::error::{Error, Result};

/// Largest file turned into a content block (the agent's own line limit may be lower).
pub const MAX_CONTENT_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// A text block.
pub fn text(text: &str) -> Value {
    json!({ "type": "text", "text": text })
}

/// A `resource_link` block (always accepted by agents): a URI the agent may fetch itself.
pub fn resource_link(uri: &str, name: &str) -> Value {
    json!({ "type": "resource_link", "uri": uri, "name": name })
}

/// The MIME type of an image or audio file, from its extension.
pub fn media_type(path: &Path) -> Option<(&'static str, &'static str)> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "png" => ("image", "image/png"),
        "jpg" | "jpeg" => ("image", "image/jpeg"),
        "gif" => ("image", "image/gif"),
        "webp" => ("image", "image/webp"),
        "wav" => ("audio", "audio/wav"),
        "mp3" => ("audio", "audio/mpeg"),
        "ogg" | "oga" => ("audio", "audio/ogg"),
        "flac" => ("audio", "audio/flac"),
        "m4a" => ("audio", "audio/mp4"),
        "webm" => ("audio", "audio/webm"),
        _ => return None,
    })
}

fn read_bounded(path: &Path) -> Result<Vec<u8>> {
    if !path.is_absolute() {
        return Err(Error::InvalidArgument(format!(
            "`{}` is not an absolute path",
            path.display()
        )));
    }
    let cannot = |e: std::io::Error| {
        Error::InvalidArgument(format!("cannot read `{}`: {e}", path.display()))
    };
    // Opened without waiting and checked as opened: a FIFO opens at once (and is refused below)
    // instead of blocking the caller until someone writes to it, and a file under another
    // process's lease is given up on after a second (as the fs service does), not the lease
    // break's 45 s.
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits());
    }
    let file = crate::services::fs::retry_while_leased(|| opts.open(path)).map_err(cannot)?;
    let meta = file.metadata().map_err(cannot)?;
    if !meta.is_file() {
        return Err(Error::InvalidArgument(format!(
            "`{}` is not a file",
            path.display()
        )));
    }
    if meta.len() > MAX_CONTENT_FILE_BYTES {
        return Err(Error::InvalidArgument(format!(
            "`{}` is {} bytes; content files are limited to {MAX_CONTENT_FILE_BYTES}",
            path.display(),
            meta.len()
        )));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    std::io::Read::read_to_end(
        &mut std::io::Read::take(file, MAX_CONTENT_FILE_BYTES + 1),
        &mut bytes,
    )
    .map_err(cannot)?;
    if bytes.len() as u64 > MAX_CONTENT_FILE_BYTES {
        return Err(Error::InvalidArgument(format!(
            "`{}` grew past {MAX_CONTENT_FILE_BYTES} bytes while it was read",
            path.display()
        )));
    }
    Ok(bytes)
}

/// The file's URI per RFC 8089: percent-encoded, `file:///C:/dir/a.md` for a Windows drive
/// path (`\\?\C:\dir` too), `file://server/share/a.md` for a UNC path. Paths reaching here are
/// absolute (read_bounded checked), so the fallback only covers a prefix `url` does not know.
fn file_uri(path: &Path) -> String {
    url::Url::from_file_path(path)
        .map(String::from)
        .unwrap_or_else(|()| format!("file://{}", path.display()))
}

/// An `image` or `audio` block from a file (base64 data, MIME type from the extension: png, jpeg,
/// gif, webp; wav, mp3, ogg, flac, m4a, webm), with the file's URI.
pub fn media_file(path: &Path) -> Result<Value> {
    let Some((kind, mime)) = media_type(path) else {
        return Err(Error::InvalidArgument(format!(
            "`{}`: unknown image/audio type (png, jpg, gif, webp, wav, mp3, ogg, flac, m4a, webm)",
            path.display()
        )));
    };
    let data = base64::engine::general_purpose::STANDARD.encode(read_bounded(path)?);
    let mut block = json!({ "type": kind, "data": data, "mimeType": mime });
    if kind == "image" {
        block["uri"] = Value::from(file_uri(path));
    }
    Ok(block)
}

/// An embedded `resource` block with a UTF-8 text file's contents (needs the agent's
/// `promptCapabilities.embeddedContext`).
pub fn resource_file(path: &Path) -> Result<Value> {
    let bytes = read_bounded(path)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| Error::InvalidArgument(format!("`{}` is not UTF-8 text", path.display())))?;
    Ok(json!({
        "type": "resource",
        "resource": { "uri": file_uri(path), "mimeType": "text/plain", "text": text }
    }))
}

/// A block from a file: `image`/`audio` by extension, else an embedded text `resource`.
pub fn from_file(path: &Path) -> Result<Value> {
    if media_type(path).is_some() {
        media_file(path)
    } else {
        resource_file(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_become_the_right_blocks() {
        let dir = std::env::temp_dir().join(format!("acph-content-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| unreachable!("{e}"));
        let png = dir.join("pic.PNG");
        std::fs::write(&png, [0x89, b'P', b'N', b'G']).unwrap_or_else(|e| unreachable!("{e}"));
        let b = from_file(&png).unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(b["type"], "image");
        assert_eq!(b["mimeType"], "image/png");
        assert_eq!(b["data"], "iVBORw==");
        let txt = dir.join("notes.md");
        std::fs::write(&txt, "hello").unwrap_or_else(|e| unreachable!("{e}"));
        let r = from_file(&txt).unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(r["resource"]["text"], "hello");
        assert!(
            r["resource"]["uri"]
                .as_str()
                .is_some_and(|u| u.starts_with("file:///"))
        );
        // A URI, not a path: reserved characters are percent-encoded.
        let spaced = dir.join("a b#c.md");
        std::fs::write(&spaced, "x").unwrap_or_else(|e| unreachable!("{e}"));
        let r = from_file(&spaced).unwrap_or_else(|e| unreachable!("{e}"));
        let uri = r["resource"]["uri"].as_str().unwrap_or_default().to_owned();
        assert!(uri.ends_with("/a%20b%23c.md"), "{uri}");
        let back = url::Url::parse(&uri)
            .ok()
            .and_then(|u| u.to_file_path().ok());
        assert_eq!(back.as_deref(), Some(spaced.as_path()));
        let bin = dir.join("blob.bin");
        std::fs::write(&bin, [0xff, 0xfe]).unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(
            from_file(&bin).map_err(|e| e.kind()),
            Err("invalid_argument")
        );
        assert_eq!(
            from_file(Path::new("relative.png")).map_err(|e| e.kind()),
            Err("invalid_argument")
        );
        assert!(from_file(&dir.join("missing.png")).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
