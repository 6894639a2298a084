//! The content codings Node's `fetch` undoes: `gzip` (`x-gzip`), `deflate` (zlib-wrapped or
//! raw), `br`, and on Node 24 and later `zstd`. A list of codings is undone last first; a list
//! with a coding fetch does not know is left as it came, as fetch leaves it.

use std::io::{self, Write};

use super::error::Cause;

/// One decoder per coding, fed pieces of the body.
enum Stage {
    Gzip(flate2::write::MultiGzDecoder<Vec<u8>>),
    /// Whether the stream is zlib-wrapped is known from its first byte.
    Deflate(Option<DeflateKind>),
    Brotli(Box<brotli_decompressor::DecompressorWriter<Vec<u8>>>),
    Zstd(Box<zstd::stream::write::Decoder<'static, Vec<u8>>>),
}

enum DeflateKind {
    Zlib(flate2::write::ZlibDecoder<Vec<u8>>),
    Raw(flate2::write::DeflateDecoder<Vec<u8>>),
}

impl Stage {
    fn of(coding: &str, zstd: bool) -> Option<Stage> {
        Some(match coding {
            "gzip" | "x-gzip" => Stage::Gzip(flate2::write::MultiGzDecoder::new(Vec::new())),
            "deflate" => Stage::Deflate(None),
            "br" => Stage::Brotli(Box::new(brotli_decompressor::DecompressorWriter::new(Vec::new(), 16 * 1024))),
            "zstd" if zstd => Stage::Zstd(Box::new(zstd::stream::write::Decoder::new(Vec::new()).ok()?)),
            _ => return None,
        })
    }

    fn push(&mut self, bytes: &[u8]) -> io::Result<Vec<u8>> {
        if bytes.is_empty() {
            return Ok(Vec::new());
        }
        match self {
            Stage::Gzip(d) => {
                d.write_all(bytes)?;
                Ok(std::mem::take(d.get_mut()))
            }
            Stage::Deflate(kind) => {
                let d = kind.get_or_insert_with(|| {
                    // A zlib header's first byte names the deflate method in its low nibble.
                    if bytes[0] & 0x0f == 0x08 {
                        DeflateKind::Zlib(flate2::write::ZlibDecoder::new(Vec::new()))
                    } else {
                        DeflateKind::Raw(flate2::write::DeflateDecoder::new(Vec::new()))
                    }
                });
                match d {
                    DeflateKind::Zlib(d) => {
                        d.write_all(bytes)?;
                        Ok(std::mem::take(d.get_mut()))
                    }
                    DeflateKind::Raw(d) => {
                        d.write_all(bytes)?;
                        Ok(std::mem::take(d.get_mut()))
                    }
                }
            }
            Stage::Brotli(d) => {
                d.write_all(bytes)?;
                Ok(std::mem::take(d.get_mut()))
            }
            Stage::Zstd(d) => {
                d.write_all(bytes)?;
                d.flush()?;
                Ok(std::mem::take(d.get_mut()))
            }
        }
    }

    /// What is left at the end of the body. A stream cut short gives what it had, as fetch's
    /// decoders (flushing with `Z_SYNC_FLUSH`) do.
    fn finish(&mut self) -> Vec<u8> {
        let _ = match self {
            Stage::Gzip(d) => d.try_finish(),
            Stage::Deflate(Some(DeflateKind::Zlib(d))) => d.try_finish(),
            Stage::Deflate(Some(DeflateKind::Raw(d))) => d.try_finish(),
            Stage::Deflate(None) => Ok(()),
            Stage::Brotli(d) => d.flush(),
            Stage::Zstd(d) => d.flush(),
        };
        match self {
            Stage::Gzip(d) => std::mem::take(d.get_mut()),
            Stage::Deflate(Some(DeflateKind::Zlib(d))) => std::mem::take(d.get_mut()),
            Stage::Deflate(Some(DeflateKind::Raw(d))) => std::mem::take(d.get_mut()),
            Stage::Deflate(None) => Vec::new(),
            Stage::Brotli(d) => std::mem::take(d.get_mut()),
            Stage::Zstd(d) => std::mem::take(d.get_mut()),
        }
    }
}

/// Undoes a response's content codings as its body arrives.
pub struct Decoder {
    /// In the order they are applied when decoding (the reverse of the header's).
    stages: Vec<Stage>,
}

impl Decoder {
    /// For a `content-encoding` header; `None` when there is nothing to undo.
    pub fn for_header(value: &str, zstd: bool) -> Option<Decoder> {
        let codings: Vec<String> =
            value.split(',').map(|c| c.trim().to_ascii_lowercase()).filter(|c| !c.is_empty()).collect();
        if codings.is_empty() || codings.iter().all(|c| c == "identity") {
            return None;
        }
        let mut stages = Vec::with_capacity(codings.len());
        for coding in codings.iter().rev() {
            if coding == "identity" {
                continue;
            }
            stages.push(Stage::of(coding, zstd)?);
        }
        Some(Decoder { stages })
    }

    /// Decode the next piece of the body.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<u8>, Cause> {
        let mut data = bytes.to_vec();
        for stage in &mut self.stages {
            data = stage.push(&data).map_err(zlib_error)?;
        }
        Ok(data)
    }

    /// The end of the body: whatever the decoders still hold.
    pub fn finish(&mut self) -> Result<Vec<u8>, Cause> {
        let mut out = Vec::new();
        let mut carry = Vec::new();
        for stage in &mut self.stages {
            let mut data = stage.push(&carry).map_err(zlib_error)?;
            data.extend(stage.finish());
            carry = data;
        }
        out.extend(carry);
        Ok(out)
    }
}

/// A corrupt compressed body, as zlib reports it to fetch.
fn zlib_error(e: io::Error) -> Cause {
    let mut c = Cause::new("Error", e.to_string());
    c.fields.push(("errno", (-3).into()));
    c.fields.push(("code", "Z_DATA_ERROR".into()));
    c
}
