use std::fmt;

/// A position in the source: 1-based line and column (in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Pos {
    /// Line, counting from 1.
    pub line: u32,
    /// Column, counting from 1.
    pub column: u32,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// How a scalar was written; the emitter keeps it so types survive a round trip.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Style {
    /// Unquoted; its type (string, number, bool, null) depends on the text.
    Plain,
    /// `'single quoted'`: always a string.
    SingleQuoted,
    /// `"double quoted"`: always a string.
    DoubleQuoted,
    /// `|` block: always a string.
    Literal,
    /// `>` block: always a string.
    Folded,
}

/// A scalar's text (after unescaping and folding) and its style.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Scalar {
    /// The value as the YAML parser produced it.
    pub text: String,
    /// How it was written.
    pub style: Style,
}

impl Scalar {
    /// True for the plain null forms: empty, `~`, `null`, `Null`, `NULL`.
    pub fn is_null(&self) -> bool {
        self.style == Style::Plain
            && matches!(self.text.as_str(), "" | "~" | "null" | "Null" | "NULL")
    }

    /// A new string scalar: plain where that keeps it a string, a `|` block
    /// for multi-line text that one can carry exactly, double-quoted otherwise.
    pub fn string(text: impl Into<String>) -> Scalar {
        let text = text.into();
        let style = if crate::scalar::plain_keeps_string(&text) {
            Style::Plain
        } else if text.contains('\n') && crate::scalar::is_literal_safe(&text) {
            Style::Literal
        } else {
            Style::DoubleQuoted
        };
        Scalar { text, style }
    }
}

/// A node's content.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A scalar.
    Scalar(Scalar),
    /// A sequence, in order.
    Seq(Vec<Node>),
    /// A mapping, in source order (keys are unique).
    Map(Vec<(Node, Node)>),
}

/// A YAML node with its source position and explicit tag, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Where the node starts in its source (zero for nodes berth created).
    pub pos: Pos,
    /// An explicit tag as written (`!!str`, `!Ref`), if any.
    pub tag: Option<Box<str>>,
    /// The content.
    pub value: Value,
}

impl Node {
    /// A new string node at `pos`.
    pub fn string(text: impl Into<String>, pos: Pos) -> Node {
        Node {
            pos,
            tag: None,
            value: Value::Scalar(Scalar::string(text)),
        }
    }

    /// A plain scalar at `pos`, written as is: its YAML type is meant (`true`,
    /// `3`, `null`), unlike [`Node::string`]'s text.
    pub fn plain(text: impl Into<String>, pos: Pos) -> Node {
        Node {
            pos,
            tag: None,
            value: Value::Scalar(Scalar {
                text: text.into(),
                style: Style::Plain,
            }),
        }
    }

    /// A new empty mapping at `pos`.
    pub fn map(pos: Pos) -> Node {
        Node {
            pos,
            tag: None,
            value: Value::Map(Vec::new()),
        }
    }

    /// A new empty sequence at `pos`.
    pub fn seq(pos: Pos) -> Node {
        Node {
            pos,
            tag: None,
            value: Value::Seq(Vec::new()),
        }
    }

    /// A sequence of `items`, built rather than read (no position): what berth writes.
    pub fn seq_of(items: impl IntoIterator<Item = Node>) -> Node {
        Node {
            pos: Pos::default(),
            tag: None,
            value: Value::Seq(items.into_iter().collect()),
        }
    }

    /// A mapping of `entries` (string keys, in order), built rather than read.
    pub fn map_of<'k>(entries: impl IntoIterator<Item = (&'k str, Node)>) -> Node {
        let mut node = Node::map(Pos::default());
        for (key, value) in entries {
            node.push_entry(key, value);
        }
        node
    }

    /// Appends `key: value` to this mapping (a node of another kind is left as it is).
    pub fn push_entry(&mut self, key: &str, value: Node) {
        if let Value::Map(entries) = &mut self.value {
            entries.push((Node::string(key, Pos::default()), value));
        }
    }

    /// The scalar, if this is one.
    pub fn as_scalar(&self) -> Option<&Scalar> {
        match &self.value {
            Value::Scalar(s) => Some(s),
            _ => None,
        }
    }

    /// The text of a non-null scalar.
    pub fn as_str(&self) -> Option<&str> {
        self.as_scalar()
            .filter(|s| !s.is_null())
            .map(|s| s.text.as_str())
    }

    /// True for a null scalar (including an absent value written as `key:`).
    pub fn is_null(&self) -> bool {
        self.as_scalar().is_some_and(Scalar::is_null)
    }

    /// The entries, if this is a mapping.
    pub fn as_map(&self) -> Option<&[(Node, Node)]> {
        match &self.value {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    /// The entries, mutably, if this is a mapping.
    pub fn as_map_mut(&mut self) -> Option<&mut Vec<(Node, Node)>> {
        match &mut self.value {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    /// The items, if this is a sequence.
    pub fn as_seq(&self) -> Option<&[Node]> {
        match &self.value {
            Value::Seq(s) => Some(s),
            _ => None,
        }
    }

    /// The items, mutably, if this is a sequence.
    pub fn as_seq_mut(&mut self) -> Option<&mut Vec<Node>> {
        match &mut self.value {
            Value::Seq(s) => Some(s),
            _ => None,
        }
    }

    /// The value under a string key of a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.as_map()?
            .iter()
            .find(|(k, _)| k.as_scalar().is_some_and(|s| s.text == key))
            .map(|(_, v)| v)
    }

    /// The value under a string key of a mapping, mutably.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Node> {
        self.as_map_mut()?
            .iter_mut()
            .find(|(k, _)| k.as_scalar().is_some_and(|s| s.text == key))
            .map(|(_, v)| v)
    }

    /// The value under `key`, inserted (at the end, as `default()`) when
    /// missing. `None` when this node is not a mapping.
    pub fn entry(&mut self, key: &str, default: impl FnOnce() -> Node) -> Option<&mut Node> {
        let map = self.as_map_mut()?;
        let index = match map
            .iter()
            .position(|(k, _)| k.as_scalar().is_some_and(|s| s.text == key))
        {
            Some(i) => i,
            None => {
                map.push((Node::string(key, Pos::default()), default()));
                map.len() - 1
            }
        };
        Some(&mut map[index].1)
    }

    /// Replaces this node's content with a string, keeping its position.
    pub fn set_string(&mut self, text: impl Into<String>) {
        self.tag = None;
        self.value = Value::Scalar(Scalar::string(text));
    }

    /// Number of nodes in this tree, this one included.
    pub fn count(&self) -> usize {
        1 + match &self.value {
            Value::Scalar(_) => 0,
            Value::Seq(items) => items.iter().map(Node::count).sum(),
            Value::Map(entries) => entries.iter().map(|(k, v)| k.count() + v.count()).sum(),
        }
    }
}
