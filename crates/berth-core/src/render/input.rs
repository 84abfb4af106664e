//! Render inputs: a text, or characters read as they arrive (a pipe), and the
//! documents of either, one at a time.

use std::cell::{Cell, RefCell};

use berth_yaml::{Documents, Limits, Node};

use super::RenderError;
use crate::place::File;

/// The text of an input read as it arrives, piece by piece. The edge that reads
/// (stdin, a pipe) implements it, so the core stays free of I/O.
pub trait TextStream {
    /// The next piece of text; `None` at the end, or once the stream failed.
    fn next_text(&mut self) -> Option<String>;
    /// Why the text stopped before the input's end (a read error, a size
    /// limit, bytes that are not UTF-8), if it did.
    fn failure(&mut self) -> Option<String>;
}

/// The characters of a [`TextStream`], for the parser; notes `{{` on the way.
struct StreamChars<'s> {
    stream: &'s mut dyn TextStream,
    text: String,
    pos: usize,
    previous_brace: bool,
    templated: &'s Cell<bool>,
}

impl Iterator for StreamChars<'_> {
    type Item = char;

    fn next(&mut self) -> Option<char> {
        loop {
            // ASCII, nearly all of a manifest, without decoding.
            let c = match self.text.as_bytes().get(self.pos) {
                Some(&b) if b.is_ascii() => Some(char::from(b)),
                Some(_) => self.text[self.pos..].chars().next(),
                None => None,
            };
            if let Some(c) = c {
                self.pos += c.len_utf8();
                return Some(c);
            }
            self.text = self.stream.next_text()?;
            self.pos = 0;
            let joined = self.previous_brace && self.text.starts_with('{');
            if joined || self.text.contains("{{") {
                self.templated.set(true);
            }
            self.previous_brace = self.text.ends_with('{');
        }
    }
}

/// One input: its name (for messages) and its text, a stream of it, or objects
/// already parsed.
pub struct Input {
    /// A file path, `<stdin>`, `kustomize DIR`'s or a chart's output, or `Berth ns/name
    /// spec.workloads`: what its findings' places are in.
    pub file: File,
    /// The YAML text (empty for a stream or objects).
    pub text: String,
    /// Set for an input read as it arrives: each document is rendered, and its
    /// errors reported, before the next one has been written.
    pub stream: Option<RefCell<Box<dyn TextStream>>>,
    /// Objects that are trees already (the controller's workloads, from JSON):
    /// rendered as they are, with no text in between.
    pub objects: Vec<Node>,
    /// A Helm chart's output, rendered with berth's image values
    /// (`helmValues:`): a copy of a component's image there that is berth's
    /// answer came from those values, and overrides do reach it.
    pub values_set: bool,
    /// A Helm chart's output: a key written twice keeps its last value, as `helm
    /// install` takes it (Kubeflow's katib chart writes a label twice). A user's own
    /// file keeps the error.
    pub last_key_wins: bool,
}

impl Input {
    /// An input whose whole text is at hand.
    pub fn text(file: impl Into<File>, text: impl Into<String>) -> Input {
        Input {
            file: file.into(),
            text: text.into(),
            stream: None,
            objects: Vec::new(),
            values_set: false,
            last_key_wins: false,
        }
    }

    /// Objects already parsed, each one document.
    pub fn objects(file: impl Into<File>, objects: Vec<Node>) -> Input {
        Input {
            file: file.into(),
            text: String::new(),
            stream: None,
            objects,
            values_set: false,
            last_key_wins: false,
        }
    }

    /// An input read as it arrives.
    pub fn stream(file: impl Into<File>, text: Box<dyn TextStream>) -> Input {
        Input {
            file: file.into(),
            text: String::new(),
            stream: Some(RefCell::new(text)),
            objects: Vec::new(),
            values_set: false,
            last_key_wins: false,
        }
    }
}

impl std::fmt::Debug for Input {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Input")
            .field("file", &self.file)
            .field("text_len", &self.text.len())
            .field("stream", &self.stream.is_some())
            .field("objects", &self.objects.len())
            .finish()
    }
}

/// Why [`for_each_document`] stopped.
enum Stop {
    Yaml(berth_yaml::Error),
    Render(RenderError),
}

fn each_document(
    docs: impl Iterator<Item = Result<Node, berth_yaml::Error>>,
    each: &mut dyn FnMut(Node) -> Result<(), RenderError>,
) -> Result<(), Stop> {
    for doc in docs {
        each(doc.map_err(Stop::Yaml)?).map_err(Stop::Render)?;
    }
    Ok(())
}

/// Calls `each` with every document of `input` in order, a stream's as each
/// one arrives; the first error ends it. Returns the keys a chart's output
/// wrote twice (read last-wins, as helm does; see [`Input::last_key_wins`]).
pub(crate) fn for_each_document(
    input: &Input,
    limits: Limits,
    each: &mut dyn FnMut(Node) -> Result<(), RenderError>,
) -> Result<Vec<berth_yaml::Replaced>, RenderError> {
    if !input.objects.is_empty() {
        input.objects.iter().try_for_each(|o| each(o.clone()))?;
        return Ok(Vec::new());
    }
    let limits = Limits {
        last_key_wins: input.last_key_wins,
        ..limits
    };
    let mut stream = input.stream.as_ref().map(RefCell::borrow_mut);
    let templated = Cell::new(false);
    let (outcome, replaced) = match stream.as_deref_mut() {
        Some(text) => {
            let chars = StreamChars {
                stream: text.as_mut(),
                text: String::new(),
                pos: 0,
                previous_brace: false,
                templated: &templated,
            };
            let mut docs = Documents::from_chars(chars, limits);
            (each_document(&mut docs, each), docs.take_replaced())
        }
        None => {
            let mut docs = Documents::new(&input.text, limits);
            (each_document(&mut docs, each), docs.take_replaced())
        }
    };
    if let Err(Stop::Render(error)) = outcome {
        return Err(error);
    }
    // A stream cut short (a limit, a read error) explains a YAML error at its cut.
    if let Some(message) = stream.as_deref_mut().and_then(|s| s.failure()) {
        return Err(RenderError::Read {
            file: input.file.to_string(),
            message,
        });
    }
    let Err(Stop::Yaml(source)) = outcome else {
        return Ok(replaced);
    };
    let templated = templated.get() || input.text.contains("{{");
    let file = input.file.to_string();
    Err(if templated {
        RenderError::Template { file, source }
    } else {
        RenderError::Yaml { file, source }
    })
}
