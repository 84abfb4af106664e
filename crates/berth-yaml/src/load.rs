//! Events from saphyr-parser into [`Node`] trees, one document at a time.

use std::collections::{HashMap, HashSet};

use saphyr_parser::{BufferedInput, Event, Input, Marker, Parser, ScalarStyle, Span, Tag};

use crate::{Node, Pos, Scalar, Style, Value};

/// Bounds that keep hostile input from exhausting memory.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest document, in characters of source.
    pub max_document_chars: usize,
    /// Alias expansion may add at most this many nodes per document...
    pub max_alias_nodes: usize,
    /// ...unless that is no more than this multiple of the document's own nodes.
    pub alias_ratio: usize,
    /// A repeated mapping key replaces the value before it, as kubectl, helm and
    /// libyaml-based readers take it (a chart's template that writes a label twice),
    /// instead of being an error (berth's own files keep the error).
    pub last_key_wins: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_document_chars: 64 << 20,
            max_alias_nodes: 10_000,
            alias_ratio: 10,
            last_key_wins: false,
        }
    }
}

/// A YAML document that cannot be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The text is not valid YAML.
    #[error("{pos}: invalid YAML: {message}")]
    Syntax {
        /// Where the parser stopped.
        pos: Pos,
        /// The parser's explanation.
        message: String,
    },
    /// A mapping has the same key twice.
    #[error("{pos}: duplicate key `{key}` (first at line {first_line}); remove one of them")]
    DuplicateKey {
        /// The second occurrence.
        pos: Pos,
        /// The key.
        key: String,
        /// Line of the first occurrence.
        first_line: u32,
    },
    /// Aliases expand to far more nodes than the document holds (a "billion laughs" bomb).
    #[error(
        "{pos}: the document's aliases expand to more than {limit} nodes; \
         refusing it as a likely alias-expansion bomb (write the values out instead)"
    )]
    ExcessiveAliasing {
        /// The alias that crossed the limit.
        pos: Pos,
        /// The limit that was crossed.
        limit: usize,
    },
    /// A document is larger than [`Limits::max_document_chars`].
    #[error("{pos}: the document starting here is larger than {limit} characters; split it")]
    DocumentTooLarge {
        /// Where the document starts.
        pos: Pos,
        /// The limit.
        limit: usize,
    },
}

impl Error {
    /// Where the problem is.
    pub fn pos(&self) -> Pos {
        match self {
            Error::Syntax { pos, .. }
            | Error::DuplicateKey { pos, .. }
            | Error::ExcessiveAliasing { pos, .. }
            | Error::DocumentTooLarge { pos, .. } => *pos,
        }
    }
}

fn pos_of(m: &Marker) -> Pos {
    let clamp = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    Pos {
        line: clamp(m.line()),
        column: clamp(m.col() + 1),
    }
}

/// Maps with more entries than this check duplicates through a hash set.
const LINEAR_DUPLICATE_CHECK: usize = 16;

enum Frame {
    Seq {
        node: Node,
        anchor: usize,
    },
    Map {
        node: Node,
        anchor: usize,
        key: Option<Node>,
        seen: Option<HashSet<String>>,
    },
}

/// An iterator over the documents of a YAML stream: a string, or characters as
/// they arrive ([`Documents::from_chars`]), so a pipe's first document is
/// checked before the next one has been written.
pub struct Documents<'a, T: Input = BufferedInput<std::str::Chars<'a>>> {
    parser: Parser<'a, T>,
    limits: Limits,
    done: bool,
    replaced: Vec<Replaced>,
}

/// A mapping key written twice, read under [`Limits::last_key_wins`]: the
/// value at `last` replaced the one at `first`. Said, never silent: a chart
/// that writes a label twice deploys only the second.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replaced {
    /// The key's text.
    pub key: String,
    /// Where the key was first written.
    pub first: Pos,
    /// Where it was written again (the value kept).
    pub last: Pos,
}

/// Reads every document of `src`, stopping at the first error.
pub fn load_all(src: &str, limits: Limits) -> Result<Vec<Node>, Error> {
    Documents::new(src, limits).collect()
}

impl<'a> Documents<'a> {
    /// Starts reading `src`. Through the same character input as a stream: it is
    /// as fast here, and saphyr's string input counts columns in bytes on `%`
    /// directive lines, so a file and a pipe would disagree on positions.
    pub fn new(src: &'a str, limits: Limits) -> Documents<'a> {
        Documents::from_chars(src.chars(), limits)
    }
}

impl<'a, I: Iterator<Item = char> + 'a> Documents<'a, BufferedInput<I>> {
    /// Starts reading characters from `chars`, pulling only as many as the next
    /// document needs: errors are found as the input arrives, not at its end.
    pub fn from_chars(chars: I, limits: Limits) -> Self {
        Documents {
            parser: Parser::new_from_iter(chars),
            limits,
            done: false,
            replaced: Vec::new(),
        }
    }
}

impl<'a, T: Input> Documents<'a, T> {
    /// The keys replaced so far (under [`Limits::last_key_wins`]), in the
    /// order they were read; taken, so each is reported once.
    pub fn take_replaced(&mut self) -> Vec<Replaced> {
        std::mem::take(&mut self.replaced)
    }

    fn next_event(&mut self) -> Result<Option<(Event<'a>, Span)>, Error> {
        match self.parser.next_event() {
            None => Ok(None),
            Some(Ok(ev)) => Ok(Some(ev)),
            Some(Err(e)) => Err(Error::Syntax {
                pos: pos_of(e.marker()),
                message: e.info().to_string(),
            }),
        }
    }

    /// Reads events up to the end of the next document.
    fn document(&mut self) -> Result<Option<Node>, Error> {
        let start = loop {
            match self.next_event()? {
                None | Some((Event::StreamEnd, _)) => return Ok(None),
                Some((Event::DocumentStart(_), span)) => break span.start,
                Some(_) => continue,
            }
        };
        let mut builder = Builder::new(self.limits, start);
        loop {
            let Some((event, span)) = self.next_event()? else {
                return Err(Error::Syntax {
                    pos: pos_of(&start),
                    message: "unexpected end of input".into(),
                });
            };
            if span.end.index().saturating_sub(start.index()) > self.limits.max_document_chars {
                return Err(Error::DocumentTooLarge {
                    pos: pos_of(&start),
                    limit: self.limits.max_document_chars,
                });
            }
            if let Event::DocumentEnd = event {
                self.replaced.append(&mut builder.replaced);
                return Ok(Some(builder.finish()));
            }
            builder.event(event, &span)?;
        }
    }
}

impl<T: Input> Iterator for Documents<'_, T> {
    type Item = Result<Node, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let result = self.document().transpose();
        if !matches!(result, Some(Ok(_))) {
            self.done = true;
        }
        result
    }
}

struct Builder {
    limits: Limits,
    replaced: Vec<Replaced>,
    stack: Vec<Frame>,
    root: Option<Node>,
    anchors: HashMap<usize, Node>,
    own_nodes: usize,
    alias_nodes: usize,
    start: Marker,
}

fn tag_text(tag: Option<std::borrow::Cow<'_, Tag>>) -> Option<Box<str>> {
    let tag = tag?;
    let text = if tag.is_yaml_core_schema() {
        format!("!!{}", tag.suffix)
    } else if tag.handle == "!" || tag.handle == "!!" {
        format!("{}{}", tag.handle, tag.suffix)
    } else {
        format!("!<{}{}>", tag.handle, tag.suffix)
    };
    Some(text.into_boxed_str())
}

impl Builder {
    fn new(limits: Limits, start: Marker) -> Builder {
        Builder {
            limits,
            replaced: Vec::new(),
            stack: Vec::new(),
            root: None,
            anchors: HashMap::new(),
            own_nodes: 0,
            alias_nodes: 0,
            start,
        }
    }

    fn finish(self) -> Node {
        self.root.unwrap_or_else(|| Node {
            pos: pos_of(&self.start),
            tag: None,
            value: Value::Scalar(Scalar {
                text: String::new(),
                style: Style::Plain,
            }),
        })
    }

    fn event(&mut self, event: Event<'_>, span: &Span) -> Result<(), Error> {
        let pos = pos_of(&span.start);
        match event {
            Event::Scalar(text, style, anchor, tag) => {
                self.own_nodes += 1;
                let style = match style {
                    ScalarStyle::Plain => Style::Plain,
                    ScalarStyle::SingleQuoted => Style::SingleQuoted,
                    ScalarStyle::DoubleQuoted => Style::DoubleQuoted,
                    ScalarStyle::Literal => Style::Literal,
                    ScalarStyle::Folded => Style::Folded,
                };
                let node = Node {
                    pos,
                    tag: tag_text(tag),
                    value: Value::Scalar(Scalar {
                        text: text.into_owned(),
                        style,
                    }),
                };
                self.complete(node, anchor)
            }
            Event::SequenceStart(anchor, tag) => {
                self.own_nodes += 1;
                let mut node = Node::seq(pos);
                node.tag = tag_text(tag);
                self.stack.push(Frame::Seq { node, anchor });
                Ok(())
            }
            Event::MappingStart(anchor, tag) => {
                self.own_nodes += 1;
                let mut node = Node::map(pos);
                node.tag = tag_text(tag);
                self.stack.push(Frame::Map {
                    node,
                    anchor,
                    key: None,
                    seen: None,
                });
                Ok(())
            }
            Event::SequenceEnd | Event::MappingEnd => match self.stack.pop() {
                Some(Frame::Seq { node, anchor } | Frame::Map { node, anchor, .. }) => {
                    self.complete(node, anchor)
                }
                None => Ok(()),
            },
            Event::Alias(id) => {
                let node = self
                    .anchors
                    .get(&id)
                    .cloned()
                    .ok_or_else(|| Error::Syntax {
                        pos,
                        message: "alias to an unknown anchor".into(),
                    })?;
                self.alias_nodes += node.count();
                let limit = self
                    .limits
                    .max_alias_nodes
                    .max(self.limits.alias_ratio.saturating_mul(self.own_nodes));
                if self.alias_nodes > limit {
                    return Err(Error::ExcessiveAliasing { pos, limit });
                }
                let mut node = node;
                node.pos = pos;
                self.complete(node, 0)
            }
            _ => Ok(()),
        }
    }

    /// Attaches a finished node to its parent (or makes it the root).
    fn complete(&mut self, node: Node, anchor: usize) -> Result<(), Error> {
        if anchor != 0 {
            self.anchors.insert(anchor, node.clone());
        }
        match self.stack.last_mut() {
            None => {
                self.root = Some(node);
                Ok(())
            }
            Some(Frame::Seq { node: parent, .. }) => {
                if let Value::Seq(items) = &mut parent.value {
                    items.push(node);
                }
                Ok(())
            }
            Some(Frame::Map {
                node: parent,
                key,
                seen,
                ..
            }) => {
                let Some(k) = key.take() else {
                    *key = Some(node);
                    return Ok(());
                };
                if let Value::Map(entries) = &mut parent.value {
                    match check_duplicate(entries, seen, &k) {
                        Err(Error::DuplicateKey { key: text, .. }) if self.limits.last_key_wins => {
                            let same = |e: &&mut (Node, Node)| {
                                e.0.as_scalar().is_some_and(|s| s.text == text)
                            };
                            if let Some(entry) = entries.iter_mut().rfind(same) {
                                // The same value twice loses nothing: not worth a word. A
                                // hostile text's millions are told by their first hundred.
                                if self.replaced.len() < 100 && !same_content(&entry.1, &node) {
                                    self.replaced.push(Replaced {
                                        key: text,
                                        first: entry.0.pos,
                                        last: k.pos,
                                    });
                                }
                                entry.1 = node;
                            }
                        }
                        Err(error) => return Err(error),
                        Ok(()) => entries.push((k, node)),
                    }
                }
                Ok(())
            }
        }
    }
}

/// Whether two nodes hold the same data, wherever and however they are written.
fn same_content(a: &Node, b: &Node) -> bool {
    a.tag == b.tag
        && match (&a.value, &b.value) {
            (Value::Scalar(x), Value::Scalar(y)) => x.text == y.text,
            (Value::Seq(x), Value::Seq(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_content(x, y))
            }
            (Value::Map(x), Value::Map(y)) => {
                x.len() == y.len()
                    && x.iter()
                        .zip(y)
                        .all(|((k, v), (l, w))| same_content(k, l) && same_content(v, w))
            }
            _ => false,
        }
}

fn check_duplicate(
    entries: &[(Node, Node)],
    seen: &mut Option<HashSet<String>>,
    key: &Node,
) -> Result<(), Error> {
    let Some(text) = key.as_scalar().map(|s| s.text.as_str()) else {
        return Ok(());
    };
    if text == "<<" {
        return Ok(()); // merge keys may repeat
    }
    let duplicate = |first: &Node| Error::DuplicateKey {
        pos: key.pos,
        key: text.to_string(),
        first_line: first.pos.line,
    };
    let same = |k: &Node| k.as_scalar().is_some_and(|s| s.text == text);
    if entries.len() < LINEAR_DUPLICATE_CHECK {
        return match entries.iter().find(|(k, _)| same(k)) {
            Some((first, _)) => Err(duplicate(first)),
            None => Ok(()),
        };
    }
    let set = seen.get_or_insert_with(|| {
        entries
            .iter()
            .filter_map(|(k, _)| k.as_scalar().map(|s| s.text.clone()))
            .collect()
    });
    if set.insert(text.to_string()) {
        return Ok(());
    }
    let first = entries.iter().find(|(k, _)| same(k)).map(|(k, _)| k);
    Err(first.map_or_else(|| duplicate(key), duplicate))
}
