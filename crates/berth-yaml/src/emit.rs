//! A deterministic block-style emitter in the layout kubectl and kustomize
//! print: two-space indent, sequences under a key not indented further.

use std::fmt::Write as _;

use crate::scalar::{is_literal_safe, is_plain_safe, is_printable, is_single_quote_safe};
use crate::{Node, Scalar, Style, Value};

/// Appends `docs` to `out` as a stream, `---` between documents.
pub fn write_stream<'a>(out: &mut String, docs: impl IntoIterator<Item = &'a Node>) {
    for (i, doc) in docs.into_iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        write_document(out, doc);
    }
}

/// Appends one document (without a `---` marker) to `out`.
pub fn write_document(out: &mut String, node: &Node) {
    if let Some(tag) = &node.tag {
        out.push_str(tag);
        out.push(if matches!(node.value, Value::Scalar(_)) {
            ' '
        } else {
            '\n'
        });
    }
    match &node.value {
        Value::Map(entries) if !entries.is_empty() => write_map(out, entries, 0, false),
        Value::Seq(items) if !items.is_empty() => write_seq(out, items, 0, false),
        Value::Map(_) => out.push_str("{}\n"),
        Value::Seq(_) => out.push_str("[]\n"),
        Value::Scalar(s) => write_scalar(out, s, 0),
    }
}

fn indent(out: &mut String, n: usize) {
    out.extend(std::iter::repeat_n(' ', n));
}

fn write_map(out: &mut String, entries: &[(Node, Node)], at: usize, first_inline: bool) {
    for (i, (key, value)) in entries.iter().enumerate() {
        if i > 0 || !first_inline {
            indent(out, at);
        }
        write_key(out, key);
        out.push(':');
        write_child(out, value, at, true);
    }
}

fn write_seq(out: &mut String, items: &[Node], at: usize, first_inline: bool) {
    for (i, item) in items.iter().enumerate() {
        if i > 0 || !first_inline {
            indent(out, at);
        }
        out.push('-');
        write_child(out, item, at, false);
    }
}

/// Writes what follows `key:` or `-` at indentation `at`, through the end of line.
fn write_child(out: &mut String, node: &Node, at: usize, under_key: bool) {
    if let Some(tag) = &node.tag {
        out.push(' ');
        out.push_str(tag);
    }
    let tagged = node.tag.is_some();
    match &node.value {
        Value::Scalar(s) if s.style == Style::Plain && s.text.is_empty() => out.push('\n'),
        Value::Scalar(s) => {
            out.push(' ');
            write_scalar(out, s, at + 2);
        }
        Value::Map(entries) if entries.is_empty() => out.push_str(" {}\n"),
        Value::Seq(items) if items.is_empty() => out.push_str(" []\n"),
        Value::Map(entries) if under_key || tagged => {
            out.push('\n');
            write_map(out, entries, at + 2, false);
        }
        Value::Map(entries) => {
            out.push(' ');
            write_map(out, entries, at + 2, true);
        }
        Value::Seq(items) if under_key => {
            out.push('\n');
            write_seq(out, items, at, false);
        }
        Value::Seq(items) if tagged => {
            out.push('\n');
            write_seq(out, items, at + 2, false);
        }
        Value::Seq(items) => {
            out.push(' ');
            write_seq(out, items, at + 2, true);
        }
    }
}

fn write_key(out: &mut String, key: &Node) {
    if let Some(tag) = &key.tag {
        out.push_str(tag);
        out.push(' ');
    }
    match &key.value {
        Value::Scalar(s) => write_inline_scalar(out, s),
        _ => write_flow(out, key),
    }
}

/// A scalar in a value position, through the end of its last line;
/// `content_indent` is where a block scalar's lines start.
fn write_scalar(out: &mut String, s: &Scalar, content_indent: usize) {
    let multi_line = s.text.contains('\n');
    let literal = match s.style {
        Style::Literal | Style::Folded => is_literal_safe(&s.text),
        Style::Plain | Style::SingleQuoted => multi_line && is_literal_safe(&s.text),
        Style::DoubleQuoted => false,
    };
    if literal {
        write_literal(out, &s.text, content_indent);
    } else {
        write_inline_scalar(out, s);
        out.push('\n');
    }
}

/// A scalar on one line: plain, single- or double-quoted.
fn write_inline_scalar(out: &mut String, s: &Scalar) {
    match s.style {
        // A plain scalar's text is written back plain so its type is kept.
        Style::Plain if is_plain_safe(&s.text) => out.push_str(&s.text),
        Style::Plain if s.text.is_empty() => out.push_str("\"\""),
        Style::SingleQuoted if is_single_quote_safe(&s.text) => {
            out.push('\'');
            out.push_str(&s.text.replace('\'', "''"));
            out.push('\'');
        }
        _ => write_double_quoted(out, &s.text),
    }
}

fn write_double_quoted(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c if is_printable(c) => out.push(c),
            c if (c as u32) <= 0xff => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) <= 0xffff => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('"');
}

fn write_literal(out: &mut String, text: &str, at: usize) {
    let body = text.trim_end_matches('\n');
    let trailing = text.len() - body.len();
    out.push_str(match trailing {
        0 => "|-\n",
        1 => "|\n",
        _ => "|+\n",
    });
    for line in body.split('\n') {
        if !line.is_empty() {
            indent(out, at);
            out.push_str(line);
        }
        out.push('\n');
    }
    for _ in 1..trailing {
        out.push('\n');
    }
}

/// Flow style, for the rare non-scalar mapping key.
fn write_flow(out: &mut String, node: &Node) {
    match &node.value {
        Value::Scalar(s)
            if s.style == Style::Plain
                && is_plain_safe(&s.text)
                && !s.text.contains([',', '[', ']', '{', '}']) =>
        {
            out.push_str(&s.text)
        }
        Value::Scalar(s) => write_double_quoted(out, &s.text),
        Value::Seq(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_flow(out, item);
            }
            out.push(']');
        }
        Value::Map(entries) => {
            out.push('{');
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_flow(out, k);
                out.push_str(": ");
                write_flow(out, v);
            }
            out.push('}');
        }
    }
}
