//! Standard input and pipes as text that arrives: render checks each
//! document as soon as it is complete, so `yes 'a: b' | berth render -` fails at
//! the duplicate key on line 2, not at a size limit or at the end of input.

use std::io::Read;

use berth_core::render::TextStream;

/// Bytes read per call; a pipe hands over what it has, up to this.
const CHUNK: usize = 64 << 10;

/// UTF-8 text of `reader`, a read at a time, at most `limit` bytes of it.
pub struct ReadText<R> {
    reader: R,
    limit: u64,
    read: u64,
    /// The start of a character split across two reads.
    tail: Vec<u8>,
    failure: Option<String>,
    done: bool,
}

impl<R: Read> ReadText<R> {
    /// Text of `reader`; more than `limit` bytes end it with a failure.
    pub fn new(reader: R, limit: u64) -> Self {
        ReadText {
            reader,
            limit,
            read: 0,
            tail: Vec::new(),
            failure: None,
            done: false,
        }
    }

    fn stop(&mut self, why: String) -> Option<String> {
        self.failure = Some(why);
        self.done = true;
        None
    }

    /// Decodes the next read; `None` at the end (or a failure). A read that
    /// holds only the start of a character gives an empty text.
    fn refill(&mut self) -> Option<String> {
        let mut bytes = std::mem::take(&mut self.tail);
        let kept = bytes.len();
        bytes.resize(kept + CHUNK, 0);
        let n = loop {
            match self.reader.read(&mut bytes[kept..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return self.stop(format!("cannot read: {e}")),
            }
        };
        bytes.truncate(kept + n);
        if n == 0 {
            self.done = true;
            if !bytes.is_empty() {
                let at = self.read - bytes.len() as u64;
                return self.stop(not_utf8(at));
            }
            return None;
        }
        self.read += n as u64;
        if self.read > self.limit {
            return self.stop(format!(
                "it is larger than {} MiB; berth reads at most that from a stream",
                self.limit >> 20
            ));
        }
        let valid = match std::str::from_utf8(&bytes) {
            Ok(_) => bytes.len(),
            // A character cut by the end of this read: keep its start for the next.
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(e) => {
                let at = self.read - (bytes.len() - e.valid_up_to()) as u64;
                return self.stop(not_utf8(at));
            }
        };
        self.tail = bytes.split_off(valid);
        // Proven valid UTF-8 just above.
        Some(String::from_utf8(bytes).unwrap_or_default())
    }
}

/// What berth says of bytes that are not UTF-8, from a file or a stream.
pub fn not_utf8(offset: u64) -> String {
    format!("not UTF-8 text (invalid byte at offset {offset}); manifests must be UTF-8 YAML")
}

impl<R: Read> TextStream for ReadText<R> {
    fn next_text(&mut self) -> Option<String> {
        if self.done {
            return None;
        }
        self.refill()
    }

    fn failure(&mut self) -> Option<String> {
        self.failure.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands out its bytes at most `step` at a time, as a pipe may.
    struct Trickle(Vec<u8>, usize, usize);

    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(self.2).min(self.0.len() - self.1);
            buf[..n].copy_from_slice(&self.0[self.1..self.1 + n]);
            self.1 += n;
            Ok(n)
        }
    }

    /// All the text a stream gives.
    fn all<R: Read>(stream: &mut ReadText<R>) -> String {
        std::iter::from_fn(|| stream.next_text()).collect()
    }

    proptest::proptest! {
        /// However the bytes are cut into reads, the text is exactly
        /// `from_utf8`'s, and invalid input fails at `from_utf8`'s offset.
        #[test]
        fn any_bytes_in_any_reads_decode_as_from_utf8(
            text in "\\PC{0,40}",
            bad in proptest::option::of((0usize..60, 0x80u8..=0xff)),
            step in 1usize..9,
        ) {
            let mut bytes = text.into_bytes();
            if let Some((at, byte)) = bad {
                bytes.insert(at.min(bytes.len()), byte);
            }
            let mut stream = ReadText::new(Trickle(bytes.clone(), 0, step), 1 << 20);
            let got = all(&mut stream);
            match std::str::from_utf8(&bytes) {
                Ok(want) => {
                    proptest::prop_assert_eq!(got, want);
                    proptest::prop_assert_eq!(stream.failure(), None);
                }
                Err(e) => {
                    proptest::prop_assert!(bytes[..e.valid_up_to()].starts_with(got.as_bytes()));
                    proptest::prop_assert_eq!(stream.failure(), Some(not_utf8(e.valid_up_to() as u64)));
                }
            }
        }
    }

    #[test]
    fn characters_split_across_reads_are_joined() {
        let text = "naïve: ✓ {{ x }}\n";
        let mut stream = ReadText::new(Trickle(text.as_bytes().to_vec(), 0, 3), 1 << 20);
        assert_eq!(all(&mut stream), text);
        assert_eq!(stream.failure(), None);
    }

    #[test]
    fn bad_bytes_and_the_limit_are_failures() {
        let mut stream = ReadText::new(&b"a: b\n\xff\n"[..], 1 << 20);
        assert_eq!(all(&mut stream), "");
        assert_eq!(stream.failure(), Some(not_utf8(5)));
        // A cut character at the very end is invalid too.
        let mut cut = ReadText::new(&"é".as_bytes()[..1], 1 << 20);
        assert_eq!(all(&mut cut), "");
        assert_eq!(cut.failure(), Some(not_utf8(0)));
        let mut long = ReadText::new(std::io::repeat(b'a'), 1 << 20);
        assert_eq!(all(&mut long).len(), 1 << 20);
        assert!(long.failure().unwrap().contains("larger than 1 MiB"));
    }
}
