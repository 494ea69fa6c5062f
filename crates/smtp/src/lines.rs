//! Reading lines with a length limit: a line longer than the limit is consumed up to its LF
//! and reported as [`Line::TooLong`] without being kept, so a client sending megabytes
//! without a line break costs no memory.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// What [`read_line`] read.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A whole line, its terminator (LF, maybe preceded by CR) included, in the buffer.
    Full,
    /// A line over the limit, consumed and dropped; `crlf` tells how it ended.
    TooLong { crlf: bool },
    /// The peer closed the connection (a partial line, if any, is dropped).
    Eof,
}

/// Reads one line into `buf` (cleared first), at most `max` bytes with its terminator.
pub async fn read_line<R: AsyncBufRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line> {
    buf.clear();
    let mut too_long = false;
    // The last byte of a dropped line's content, to tell a CRLF ending from a bare LF.
    let mut last = 0u8;
    loop {
        let avail = r.fill_buf().await?;
        if avail.is_empty() {
            return Ok(Line::Eof);
        }
        let (chunk, done) = match avail.iter().position(|&b| b == b'\n') {
            Some(i) => (&avail[..=i], true),
            None => (avail, false),
        };
        let n = chunk.len();
        if !too_long && buf.len() + n > max {
            too_long = true;
            last = buf.last().copied().unwrap_or(0);
            buf.clear();
        }
        if too_long {
            if n >= 2 {
                last = chunk[n - 2];
            } else if n == 1 && !done {
                last = chunk[0];
            }
        } else {
            buf.extend_from_slice(chunk);
        }
        r.consume(n);
        if done {
            return Ok(if too_long {
                Line::TooLong {
                    crlf: last == b'\r',
                }
            } else {
                Line::Full
            });
        }
    }
}

/// A command line without its terminator, if it is UTF-8 and ends with CRLF (a bare LF is
/// tolerated for commands, as most servers do; it is refused only inside DATA).
pub fn command_text(buf: &[u8]) -> Option<&str> {
    let line = buf.strip_suffix(b"\n")?;
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    std::str::from_utf8(line).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<(Line, Vec<u8>)> {
        let mut r = tokio::io::BufReader::with_capacity(4, input);
        let mut out = Vec::new();
        let mut buf = Vec::new();
        loop {
            let l = read_line(&mut r, &mut buf, max).await.unwrap();
            let eof = l == Line::Eof;
            out.push((l, buf.clone()));
            if eof {
                return out;
            }
        }
    }

    #[tokio::test]
    async fn long_lines_are_dropped_and_their_ending_reported() {
        let got = lines(b"ab\r\n0123456789\r\nxy\n0123456789\nend", 8).await;
        assert_eq!(got[0], (Line::Full, b"ab\r\n".to_vec()));
        assert_eq!(got[1], (Line::TooLong { crlf: true }, vec![]));
        assert_eq!(got[2], (Line::Full, b"xy\n".to_vec()));
        assert_eq!(got[3], (Line::TooLong { crlf: false }, vec![]));
        assert_eq!(got[4].0, Line::Eof);
    }
}
