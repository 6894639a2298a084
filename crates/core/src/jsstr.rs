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

/// V8's `RangeError` when the memory for a buffer cannot be had.
pub const NO_MEMORY: &str = "Array buffer allocation failed";

/// Why [`Gather::push`] refused a piece.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The piece would take the buffer past its limit.
    Limit,
    /// The allocator had no room for the buffer to grow.
    NoMemory,
}

/// One contiguous buffer filled piece by piece (a response body) up to a byte limit, without
/// holding much more than it keeps.
///
/// A `Vec` that doubles copies itself each time it grows; near a limit of hundreds of MiB the
/// old half is still resident while the new one fills (an allocator may keep freed pages a
/// while), so the peak is 1.5× the body. Past [`Gather::JUMP`] bytes this buffer grows once,
/// straight to its limit: untouched capacity is address space, not memory, so the peak stays
/// the body plus what it held before the jump. Growth that the allocator refuses is an error,
/// never an abort.
#[derive(Debug)]
pub struct Gather {
    bytes: Vec<u8>,
    limit: usize,
}

impl Gather {
    /// The size past which the buffer grows straight to its limit.
    pub const JUMP: usize = 4 << 20;
    /// Limits above this grow by doubling all the way (no jump to an address-space-sized one).
    const JUMP_LIMIT: usize = 4 << 30;

    /// An empty buffer for at most `limit` bytes, with room for `hint` (a declared length) when
    /// that is within the limit.
    pub fn new(limit: usize, hint: Option<usize>) -> Result<Self, Refused> {
        let mut bytes = Vec::new();
        if let Some(n) = hint.filter(|&n| n <= limit) {
            bytes.try_reserve_exact(n).map_err(|_| Refused::NoMemory)?;
        }
        Ok(Gather { bytes, limit })
    }

    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    pub fn as_slice(&self) -> &[u8] {
        &self.bytes
    }

    /// Append `piece`, or refuse it whole (the buffer is then unchanged).
    pub fn push(&mut self, piece: &[u8]) -> Result<(), Refused> {
        let len = self.bytes.len();
        let needed = len.checked_add(piece.len()).filter(|&n| n <= self.limit).ok_or(Refused::Limit)?;
        let cap = self.bytes.capacity();
        if needed > cap {
            let doubled = needed.max(cap.saturating_mul(2)).max(8 << 10).min(self.limit);
            let jump = cap >= Self::JUMP && self.limit <= Self::JUMP_LIMIT;
            // The whole limit past the jump; doubling when that address space is refused (or
            // before it); only what this piece needs when even that is.
            let grown = (jump && self.bytes.try_reserve_exact(self.limit - len).is_ok())
                || self.bytes.try_reserve_exact(doubled - len).is_ok();
            if !grown {
                self.bytes.try_reserve_exact(needed - len).map_err(|_| Refused::NoMemory)?;
            }
        }
        self.bytes.extend_from_slice(piece);
        Ok(())
    }

    /// The bytes gathered.
    pub fn into_vec(self) -> Vec<u8> {
        self.bytes
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

    #[test]
    fn gather_keeps_every_byte_up_to_its_limit() {
        let mut g = Gather::new(100, None).unwrap();
        for piece in [&b"abc"[..], b"", b"defg"] {
            g.push(piece).unwrap();
        }
        assert_eq!(g.as_slice(), b"abcdefg");
        assert_eq!(g.push(&[b'x'; 93]), Ok(()));
        assert_eq!(g.len(), 100);
        // A piece past the limit is refused whole; an empty one still fits.
        assert_eq!(g.push(b"y"), Err(Refused::Limit));
        assert_eq!(g.push(b""), Ok(()));
        assert_eq!(g.into_vec().len(), 100);
        // A declared length above the limit reserves nothing; one within it, exactly that.
        assert_eq!(Gather::new(10, Some(11)).unwrap().bytes.capacity(), 0);
        assert_eq!(Gather::new(10, Some(7)).unwrap().bytes.capacity(), 7);
    }

    #[test]
    fn gather_grows_once_to_its_limit_past_the_jump() {
        let limit = Gather::JUMP * 3;
        let mut g = Gather::new(limit, None).unwrap();
        let piece = vec![7u8; 1 << 20];
        let mut grows = 0;
        let mut cap = 0;
        while g.len() + piece.len() <= Gather::JUMP + piece.len() {
            g.push(&piece).unwrap();
            if g.bytes.capacity() != cap {
                grows += 1;
                cap = g.bytes.capacity();
            }
        }
        assert_eq!(cap, limit, "past the jump the room is the whole limit");
        assert!(grows <= 8, "{grows} reallocations");
        while g.push(&piece).is_ok() {}
        assert_eq!(g.bytes.capacity(), limit, "no growth after the jump");
        assert_eq!(g.len(), limit);
    }

    #[test]
    fn gather_without_a_useful_limit_doubles() {
        let mut g = Gather::new(usize::MAX, None).unwrap();
        g.push(&vec![1u8; Gather::JUMP + 1]).unwrap();
        g.push(&[2u8; 10]).unwrap();
        assert!(g.bytes.capacity() < usize::MAX / 2);
        assert_eq!(g.len(), Gather::JUMP + 11);
    }
}
