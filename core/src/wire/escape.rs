//! Text as the body of a JSON string, byte for byte as serde_json writes it (`"` and `\` and the
//! control characters below 0x20 escaped: `\b \t \n \f \r` in two bytes, the others as `\u00XX`;
//! everything else copied), without serde_json's intermediate copies: the escaped size is known
//! from one pass that allocates nothing, so an answer that would be too large is refused before
//! it is made, and an answer that fits is escaped inside the buffer the text was read into.

use std::ops::Range;

/// The escaped size of each byte: 1 (copied), 2 (`\n`) or 6 (`\u0000`).
const LEN: [u8; 256] = {
    let mut t = [1u8; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = 6;
        b += 1;
    }
    t[0x08] = 2;
    t[0x09] = 2;
    t[0x0A] = 2;
    t[0x0C] = 2;
    t[0x0D] = 2;
    t[b'"' as usize] = 2;
    t[b'\\' as usize] = 2;
    t
};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// How many bytes `text` takes as the body of a JSON string (the quotes not counted).
pub(crate) fn escaped_len(text: &[u8]) -> usize {
    // Plain bytes are most of any text: count the extra bytes only.
    let mut extra = 0usize;
    for &b in text {
        extra += usize::from(LEN[usize::from(b)] - 1);
    }
    text.len() + extra
}

/// Write the escape of `b` (a byte that needs one) into `out`, which is exactly as long.
fn escape_into(b: u8, out: &mut [u8]) {
    out[0] = b'\\';
    match b {
        0x08 => out[1] = b'b',
        0x09 => out[1] = b't',
        0x0A => out[1] = b'n',
        0x0C => out[1] = b'f',
        0x0D => out[1] = b'r',
        b'"' | b'\\' => out[1] = b,
        _ => {
            out[1..4].copy_from_slice(b"u00");
            out[4] = HEX[usize::from(b >> 4)];
            out[5] = HEX[usize::from(b & 0xF)];
        }
    }
}

/// Make `buf` into `head`, then `buf[text]` escaped as the body of a JSON string, then `tail`,
/// in the same allocation: it grows once, to the final size, when that is larger than what was
/// read, and gives back what it no longer needs. `escaped` is [`escaped_len`] of `buf[text]`
/// (the caller computed it to decide that the answer fits). `buf[text]` must be valid UTF-8 for
/// the result to be (escaping never splits a character: only ASCII bytes are escaped).
pub(crate) fn splice_escaped(
    mut buf: Vec<u8>,
    text: Range<usize>,
    escaped: usize,
    head: &[u8],
    tail: &[u8],
) -> Vec<u8> {
    let n = text.len();
    let h = head.len();
    let total = h + escaped + tail.len();
    if buf.len() < total {
        buf.reserve_exact(total - buf.len());
        buf.resize(total, 0);
    }
    // The text moves to where the escaped text starts; then it is escaped from its end backwards,
    // every byte written at or after the one it came from (an escape is never shorter than its
    // byte), so nothing is overwritten before it is read.
    buf.copy_within(text, h);
    let mut src = h + n; // end of the text not yet escaped
    let mut dst = h + escaped; // end of the room left for it
    while dst > src {
        // The run of plain bytes before `src` moves as one block.
        let mut start = src;
        while start > h && LEN[usize::from(buf[start - 1])] == 1 {
            start -= 1;
        }
        let run = src - start;
        buf.copy_within(start..src, dst - run);
        dst -= run;
        src = start;
        if src == h {
            break;
        }
        src -= 1;
        let b = buf[src];
        let len = usize::from(LEN[usize::from(b)]);
        escape_into(b, &mut buf[dst - len..dst]);
        dst -= len;
    }
    buf[..h].copy_from_slice(head);
    buf[h + escaped..total].copy_from_slice(tail);
    buf.truncate(total);
    if buf.capacity() - total > total / 8 + 4096 {
        buf.shrink_to_fit(); // a few lines of a large file: hold only the answer
    }
    buf
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serde_body(s: &str) -> String {
        let q = serde_json::to_string(s).unwrap();
        q[1..q.len() - 1].to_owned()
    }

    fn spliced(text: &str, before: &[u8], after: &[u8], head: &[u8], tail: &[u8]) -> Vec<u8> {
        let mut buf = before.to_vec();
        buf.extend_from_slice(text.as_bytes());
        buf.extend_from_slice(after);
        let range = before.len()..before.len() + text.len();
        let escaped = escaped_len(text.as_bytes());
        splice_escaped(buf, range, escaped, head, tail)
    }

    /// Every byte below 0x80 alone and in company, as serde_json writes it.
    #[test]
    fn escapes_as_serde_json_does() {
        for b in 0u8..0x80 {
            let s = String::from(char::from(b));
            assert_eq!(escaped_len(s.as_bytes()), serde_body(&s).len(), "{b:#x}");
            let out = spliced(&s, b"", b"", b"", b"");
            assert_eq!(String::from_utf8(out).unwrap(), serde_body(&s), "{b:#x}");
        }
        let all: String = (0u8..0x80).map(char::from).collect::<String>() + "é€😀\"\\ end";
        assert_eq!(escaped_len(all.as_bytes()), serde_body(&all).len());
        for (before, after, head, tail) in [
            (&b""[..], &b""[..], &b"H"[..], &b"T"[..]),
            (b"0123456789", b"", b"{\"content\":\"", b"\"}\n"),
            (b"", b"0123456789abcdef", b"{\"a\":\"", b"\"}"),
            (
                b"xx\n\n\n",
                b"yy\0\0",
                b"{\"jsonrpc\":\"2.0\",\"id\":\"a-long-id\",\"result\":{\"content\":\"",
                b"\"}}\n",
            ),
        ] {
            let out = spliced(&all, before, after, head, tail);
            let want = [head, serde_body(&all).as_bytes(), tail].concat();
            assert_eq!(out, want);
            assert!(out.capacity() >= out.len());
        }
    }

    #[test]
    fn a_slice_of_a_large_buffer_gives_back_the_rest() {
        let big = vec![b'a'; 1 << 20];
        let out = splice_escaped(big, 10..20, 10, b"[", b"]");
        assert_eq!(out, b"[aaaaaaaaaa]");
        assert!(out.capacity() < 4096 + 64, "{}", out.capacity());
    }

    proptest::proptest! {
        #[test]
        fn any_text_anywhere_in_the_buffer(
            text in ".{0,64}",
            ctl in proptest::collection::vec(0u8..0x20, 0..8),
            before in proptest::collection::vec(proptest::num::u8::ANY, 0..80),
            after in proptest::collection::vec(proptest::num::u8::ANY, 0..8),
            head in "[a-z{\":]{0,70}",
        ) {
            let mut text = text;
            for c in ctl { text.push(char::from(c)); text.push('x'); }
            let out = spliced(&text, &before, &after, head.as_bytes(), b"\"}\n");
            let want = [head.as_bytes(), serde_body(&text).as_bytes(), b"\"}\n"].concat();
            proptest::prop_assert_eq!(out, want);
        }
    }
}
