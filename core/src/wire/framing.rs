//! NDJSON framing: `\n`-delimited lines with a hard length bound.
//!
//! A line longer than the bound is skipped up to the next newline and reported; it never grows
//! memory past the bound. Lines are handed out as bytes; UTF-8 decoding is the caller's business.

use tokio::io::{AsyncRead, AsyncReadExt};

/// One framing result.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A complete line without its trailing `\n` (and without a trailing `\r`).
    Line(Vec<u8>),
    /// A line exceeded the bound and was discarded; `len` bytes were dropped (up to and excluding
    /// the newline; if the stream ended inside it, up to the end).
    TooLong { len: u64 },
}

const READ_CHUNK: usize = 64 * 1024;

/// A frame borrowed from the reader's buffer (valid until the next call).
#[derive(Debug, PartialEq, Eq)]
pub enum FrameRef<'a> {
    Line(&'a [u8]),
    TooLong { len: u64 },
}

impl FrameRef<'_> {
    fn to_owned_frame(&self) -> Frame {
        match self {
            FrameRef::Line(l) => Frame::Line(l.to_vec()),
            FrameRef::TooLong { len } => Frame::TooLong { len: *len },
        }
    }
}

/// A read buffer grown past this (by a long line) is given back once that line is consumed.
const SHRINK_ABOVE: usize = 1 << 20;

/// Internal: where a frame lies in `buf`, so it can be handed out by reference.
enum Found {
    Line(usize, usize),
    TooLong(u64),
}

/// Reads frames from any `AsyncRead`.
#[derive(Debug)]
pub struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// Start of unconsumed data in `buf`.
    start: usize,
    /// Where to continue searching for a newline (absolute index in `buf`).
    scanned: usize,
    max_line: usize,
    /// Bytes dropped so far from an over-long line we are skipping.
    discarding: Option<u64>,
    eof: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    pub fn new(inner: R, max_line: usize) -> Self {
        LineReader {
            inner,
            buf: Vec::with_capacity(READ_CHUNK),
            start: 0,
            scanned: 0,
            max_line: max_line.max(1),
            discarding: None,
            eof: false,
        }
    }

    /// Next frame, or `None` at end of stream. A final line without `\n` is still returned.
    pub async fn next_frame(&mut self) -> std::io::Result<Option<Frame>> {
        Ok(self.next_frame_ref().await?.map(|f| f.to_owned_frame()))
    }

    /// A frame that is already buffered, without reading more.
    pub fn next_buffered(&mut self) -> Option<Frame> {
        self.next_buffered_ref().map(|f| f.to_owned_frame())
    }

    /// Like [`next_frame`](Self::next_frame), borrowing the line from the internal buffer.
    pub async fn next_frame_ref(&mut self) -> std::io::Result<Option<FrameRef<'_>>> {
        loop {
            if let Some(found) = self.find_buffered() {
                return Ok(Some(self.frame_at(found)));
            }
            if self.eof {
                return Ok(self.take_tail().map(|f| self.frame_at(f)));
            }
            self.fill().await?;
        }
    }

    /// Bytes read and not handed out yet (what the frames buffered now hold at most).
    pub fn buffered_len(&self) -> usize {
        self.buf.len() - self.start
    }

    /// Like [`next_buffered`](Self::next_buffered), borrowing.
    pub fn next_buffered_ref(&mut self) -> Option<FrameRef<'_>> {
        let found = self.find_buffered()?;
        Some(self.frame_at(found))
    }

    fn frame_at(&self, found: Found) -> FrameRef<'_> {
        match found {
            Found::Line(a, b) => FrameRef::Line(&self.buf[a..b]),
            Found::TooLong(len) => FrameRef::TooLong { len },
        }
    }

    fn find_buffered(&mut self) -> Option<Found> {
        let window = &self.buf[self.scanned..];
        match memchr::memchr(b'\n', window) {
            Some(pos) => {
                let end = self.scanned + pos;
                let line_start = self.start;
                self.start = end + 1;
                self.scanned = self.start;
                if let Some(dropped) = self.discarding.take() {
                    return Some(Found::TooLong(dropped + (end - line_start) as u64));
                }
                if end - line_start > self.max_line {
                    return Some(Found::TooLong((end - line_start) as u64));
                }
                let mut line_end = end;
                if line_end > line_start && self.buf[line_end - 1] == b'\r' {
                    line_end -= 1;
                }
                Some(Found::Line(line_start, line_end))
            }
            None => {
                self.scanned = self.buf.len();
                let pending = self.buf.len() - self.start;
                if pending > self.max_line {
                    // Over the bound with no newline yet: stop buffering, remember the count.
                    *self.discarding.get_or_insert(0) += pending as u64;
                    self.buf.clear();
                    self.start = 0;
                    self.scanned = 0;
                }
                None
            }
        }
    }

    /// At end of stream: whatever is left (a last line without `\n`). Leaves the bytes in `buf`
    /// (marked consumed) so they can be borrowed.
    fn take_tail(&mut self) -> Option<Found> {
        let pending = self.buf.len() - self.start;
        if let Some(dropped) = self.discarding.take() {
            self.start = self.buf.len();
            self.scanned = self.start;
            return Some(Found::TooLong(dropped + pending as u64));
        }
        if pending == 0 {
            return None;
        }
        let (a, b) = (self.start, self.buf.len());
        self.start = b;
        self.scanned = b;
        if b - a > self.max_line {
            return Some(Found::TooLong((b - a) as u64));
        }
        // Like a `\n`-terminated line, the last one loses a trailing `\r`.
        let b = if self.buf[b - 1] == b'\r' { b - 1 } else { b };
        Some(Found::Line(a, b))
    }

    async fn fill(&mut self) -> std::io::Result<()> {
        // Compact: move the unconsumed tail to the front before growing.
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.scanned -= self.start;
            self.start = 0;
        }
        // One huge line must not pin its memory for the rest of the connection.
        if self.buf.capacity() > SHRINK_ABOVE && self.buf.len() < READ_CHUNK {
            self.buf.shrink_to(READ_CHUNK * 2);
        }
        // Into spare capacity, not a zero-filled chunk: zeroing 64 KiB per read cost more than
        // the rest of a small message's handling.
        self.buf.reserve(READ_CHUNK);
        let n = self.inner.read_buf(&mut self.buf).await?;
        if n == 0 {
            self.eof = true;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8], max: usize) -> Vec<Frame> {
        let mut r = LineReader::new(input, max);
        let mut out = Vec::new();
        while let Some(f) = r.next_frame().await.unwrap_or(None) {
            out.push(f);
        }
        out
    }

    #[tokio::test]
    async fn the_buffer_shrinks_after_a_huge_line() {
        let mut input = vec![b'x'; 4 << 20];
        input.push(b'\n');
        for _ in 0..64 {
            input.extend_from_slice(b"{\"small\":1}\n");
        }
        let mut r = LineReader::new(&input[..], 8 << 20);
        let first = r.next_frame().await.unwrap_or(None);
        assert!(matches!(first, Some(Frame::Line(ref l)) if l.len() == 4 << 20));
        assert!(r.buf.capacity() >= 4 << 20);
        let mut small = 0;
        while let Some(f) = r.next_frame().await.unwrap_or(None) {
            assert!(matches!(f, Frame::Line(_)));
            small += 1;
        }
        assert_eq!(small, 64);
        assert!(
            r.buf.capacity() <= SHRINK_ABOVE,
            "capacity {}",
            r.buf.capacity()
        );
    }

    #[tokio::test]
    async fn splits_lines_and_strips_cr() {
        let got = frames(b"a\r\nbb\n\nccc", 10).await;
        assert_eq!(
            got,
            vec![
                Frame::Line(b"a".to_vec()),
                Frame::Line(b"bb".to_vec()),
                Frame::Line(Vec::new()),
                Frame::Line(b"ccc".to_vec())
            ]
        );
    }

    #[tokio::test]
    async fn over_long_line_is_skipped_and_stream_resyncs() {
        let mut input = vec![b'x'; 300_000];
        input.extend_from_slice(b"\nok\n");
        let got = frames(&input, 1000).await;
        assert_eq!(
            got,
            vec![Frame::TooLong { len: 300_000 }, Frame::Line(b"ok".to_vec())]
        );
    }

    #[tokio::test]
    async fn line_exactly_at_bound_passes() {
        let mut input = vec![b'y'; 1000];
        input.push(b'\n');
        let got = frames(&input, 1000).await;
        assert_eq!(got, vec![Frame::Line(vec![b'y'; 1000])]);
    }

    #[tokio::test]
    async fn over_long_tail_without_newline_is_reported() {
        let input = vec![b'z'; 5000];
        let got = frames(&input, 100).await;
        assert_eq!(got, vec![Frame::TooLong { len: 5000 }]);
    }
}
