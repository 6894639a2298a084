//! The size limit of a JavaScript string, the errors Node raises at it, and a UTF-8 decoder
//! that measures its text in UTF-16 code units (the unit V8 counts) as it goes.
//!
//! Whatever a tool returns must become one V8 string, so everything that reads an unbounded
//! source (a file, a response body) stops at this limit instead of growing without end.

/// V8's `String::kMaxLength` on 64-bit builds: the longest string, in UTF-16 code units.
pub const MAX_LENGTH: usize = 0x1fff_ffe8;

/// V8's `RangeError` when a concatenation would pass [`MAX_LENGTH`].
pub const INVALID_LENGTH: &str = "Invalid string length";

/// Node's `ERR_STRING_TOO_LONG`, raised when a buffer of more than [`MAX_LENGTH`] bytes is
/// decoded into a string at once (`Buffer#toString`, `TextDecoder`, `Response.text()`).
pub const TOO_LONG: &str = "Cannot create a string longer than 0x1fffffe8 characters";

/// The length of `s` as JavaScript measures it (`s.length`): UTF-16 code units.
pub fn utf16_len(s: &str) -> usize {
    // One unit per character, two for one above U+FFFF (a four-byte lead in UTF-8).
    let chars = s.chars().count();
    if chars == s.len() {
        return chars;
    }
    chars + s.bytes().filter(|&b| b >= 0xF0).count()
}

/// Whether `s` can become a JavaScript string.
pub fn fits(s: &str) -> bool {
    // UTF-16 never needs more units than UTF-8 needs bytes: short strings need no count.
    s.len() <= MAX_LENGTH || utf16_len(s) <= MAX_LENGTH
}

/// Decodes a byte stream fed in pieces exactly as `String::from_utf8_lossy` decodes the whole
/// (each maximal invalid sequence becomes one U+FFFD, as the WHATWG decoder Node uses does),
/// keeping an incomplete character that straddles two pieces for the next one.
#[derive(Debug, Default)]
pub struct Utf8Decoder {
    carry: Vec<u8>,
}

impl Utf8Decoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Decode `bytes` onto `out`; returns the UTF-16 units appended.
    pub fn push(&mut self, mut bytes: &[u8], out: &mut String) -> usize {
        let mut units = 0;
        // Finish the character the previous piece ended inside, a byte at a time.
        while !self.carry.is_empty() {
            let Some((&b, rest)) = bytes.split_first() else { return units };
            self.carry.push(b);
            match std::str::from_utf8(&self.carry) {
                Ok(s) => {
                    out.push_str(s);
                    units += utf16_len(s);
                    self.carry.clear();
                    bytes = rest;
                }
                Err(e) if e.error_len().is_none() => bytes = rest,
                Err(_) => {
                    // The carried bytes were a valid prefix, so the byte just added is the one
                    // that breaks it: the prefix is one replacement, and decoding resumes at
                    // that byte.
                    out.push(char::REPLACEMENT_CHARACTER);
                    units += 1;
                    self.carry.clear();
                }
            }
        }
        loop {
            match std::str::from_utf8(bytes) {
                Ok(s) => {
                    out.push_str(s);
                    return units + utf16_len(s);
                }
                Err(e) => {
                    let (good, bad) = bytes.split_at(e.valid_up_to());
                    // `good` is what the error says is valid.
                    let good = std::str::from_utf8(good).unwrap_or_default();
                    out.push_str(good);
                    units += utf16_len(good);
                    match e.error_len() {
                        Some(n) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            units += 1;
                            bytes = &bad[n.min(bad.len())..];
                        }
                        None => {
                            self.carry.extend_from_slice(bad);
                            return units;
                        }
                    }
                }
            }
        }
    }

    /// The end of the stream: a character left incomplete is one replacement. Returns the
    /// UTF-16 units appended.
    pub fn finish(&mut self, out: &mut String) -> usize {
        if self.carry.is_empty() {
            return 0;
        }
        self.carry.clear();
        out.push(char::REPLACEMENT_CHARACTER);
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_in_pieces(bytes: &[u8], piece: usize) -> (String, usize) {
        let mut d = Utf8Decoder::new();
        let mut out = String::new();
        let mut units = 0;
        for chunk in bytes.chunks(piece.max(1)) {
            units += d.push(chunk, &mut out);
        }
        units += d.finish(&mut out);
        (out, units)
    }

    #[test]
    fn lengths_count_utf16_units() {
        assert_eq!(utf16_len(""), 0);
        assert_eq!(utf16_len("abc"), 3);
        assert_eq!(utf16_len("é€"), 2);
        assert_eq!(utf16_len("😀a"), 3);
        assert!(fits("short"));
    }

    #[test]
    fn pieces_decode_as_the_whole_would() {
        let samples: [&[u8]; 8] = [
            b"plain ascii\n",
            "héllo wörld € 😀 end".as_bytes(),
            b"\xff\xfe bad \xc3 \xe2\x82 \xf0\x9f\x98 tail",
            b"\xe0\x80\x80 overlong \xed\xa0\x80 surrogate",
            b"\xf0\x9f\x98",
            b"\xc3",
            b"a\xc3\xa9\xc3",
            b"\x80\x80\xbf\xf4\x90\x80\x80",
        ];
        for s in samples {
            let whole = String::from_utf8_lossy(s).into_owned();
            for piece in 1..=s.len().max(1) {
                let (got, units) = decode_in_pieces(s, piece);
                assert_eq!(got, whole, "{s:?} in pieces of {piece}");
                assert_eq!(units, whole.encode_utf16().count(), "{s:?} in pieces of {piece}");
            }
        }
    }
}
