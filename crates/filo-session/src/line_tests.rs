//! The open pass's check of a message line (`index_message_line`, built on the allocation-free
//! `filo_ai::message::check`) against the typed path it stands in for (`parse_message_parts`),
//! and the check of a message against the typed deserializers: on every line of pi's session
//! files, and on systematic mutations of every kind of message in them — each value replaced by values of every JSON type (numbers at the edges of the
//! integer types, escapes, lone surrogates, nesting at the depth limit, serde_json's raw-value
//! token), each key removed, duplicated, escaped or unknown, each object turned into the array
//! form serde also accepts, each array cut or extended.

use std::fs;
use std::path::Path;

use std::borrow::Cow;

use filo_ai::message::check::{accepts_assistant, accepts_tool_result, accepts_user};
use filo_ai::{AssistantMessage, Message, ToolResultMessage, UserMessage};
use serde_json::Value;

use super::{index_message_line, parse_message_line, parse_message_parts, read_message_line};
use crate::store::Role;

/// A JSON text as a tree that can also hold what `Value` cannot: duplicate keys, escaped keys,
/// numbers out of range.
#[derive(Clone, Debug)]
enum J {
    /// A literal, a number or a string, as raw JSON text.
    Raw(String),
    Arr(Vec<J>),
    /// Keys as raw JSON string literals (quotes included).
    Obj(Vec<(String, J)>),
}

impl J {
    fn from_value(v: &Value) -> J {
        match v {
            Value::Array(a) => J::Arr(a.iter().map(J::from_value).collect()),
            Value::Object(o) => J::Obj(
                o.iter()
                    .map(|(k, v)| (Value::from(k.as_str()).to_string(), J::from_value(v)))
                    .collect(),
            ),
            // Long texts add nothing but time: every string kind comes in from the palette.
            Value::String(s) if s.chars().count() > 24 => {
                J::Raw(Value::from(s.chars().take(24).collect::<String>()).to_string())
            }
            other => J::Raw(other.to_string()),
        }
    }

    fn render(&self, out: &mut String) {
        match self {
            J::Raw(s) => out.push_str(s),
            J::Arr(a) => {
                out.push('[');
                for (i, e) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    e.render(out);
                }
                out.push(']');
            }
            J::Obj(o) => {
                out.push('{');
                for (i, (k, v)) in o.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(k);
                    out.push(':');
                    v.render(out);
                }
                out.push('}');
            }
        }
    }

    fn text(&self) -> String {
        let mut s = String::new();
        self.render(&mut s);
        s
    }

    /// Every node's path (indices into arrays and objects), the root first.
    fn paths(&self, here: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        out.push(here.clone());
        let n = match self {
            J::Raw(_) => 0,
            J::Arr(a) => a.len(),
            J::Obj(o) => o.len(),
        };
        for i in 0..n {
            here.push(i);
            self.child(i).paths(here, out);
            here.pop();
        }
    }

    fn child(&self, i: usize) -> &J {
        match self {
            J::Arr(a) => &a[i],
            J::Obj(o) => &o[i].1,
            J::Raw(_) => unreachable!("a leaf has no children"),
        }
    }

    fn at_mut(&mut self, path: &[usize]) -> &mut J {
        match path.split_first() {
            None => self,
            Some((&i, rest)) => match self {
                J::Arr(a) => a[i].at_mut(rest),
                J::Obj(o) => o[i].1.at_mut(rest),
                J::Raw(_) => unreachable!("a leaf has no children"),
            },
        }
    }
}

/// Values of every kind the fields could meet.
fn palette() -> Vec<String> {
    let mut p: Vec<String> = [
        "null",
        "true",
        "false",
        "0",
        "1",
        "2",
        "3",
        "4",
        "-1",
        "-0",
        "1.5",
        "1e3",
        "0e999",
        "1e400",
        "-1e400",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775808",
        "-9223372036854775809",
        "18446744073709551615",
        "18446744073709551616",
        r#""""#,
        r#""text""#,
        r#""thinking""#,
        r#""image""#,
        r#""toolCall""#,
        r#""stop""#,
        r#""toolUse""#,
        r#""bogus""#,
        r#""\u0074ext""#,
        r#""line\nbreak \"quoted\" \\ \/""#,
        r#""\ud800""#,
        r#""\udc00x""#,
        r#""\ud83d\ude00""#,
        "[]",
        "{}",
        "[1]",
        "[null]",
        r#"["x"]"#,
        r#"{"a":1}"#,
        r#"{"a":1e400}"#,
        r#"{"stop":null}"#,
        r#"{"toolUse":null}"#,
        r#"{"stop":1}"#,
        r#"{"stop":null,"length":null}"#,
        r#"{"bogus":null}"#,
        r#"{"$serde_json::private::RawValue":"1"}"#,
        r#"{"$serde_json::private::RawValue":"[1"}"#,
        r#"{"$serde_json::private::RawValue":1}"#,
        r#"{"$serde_json::private::RawValue":"1","a":2}"#,
        r#"{"a":2,"$serde_json::private::RawValue":"[1"}"#,
        r#"{"type":"text","text":"x"}"#,
        r#"{"type":"text","text":"x","text":"y"}"#,
        r#"{"type":0,"text":"x"}"#,
        r#"{"type":3,"id":"i","name":"n","arguments":{}}"#,
        r#"{"type":"toolCall","id":"i","name":"n","arguments":{"$serde_json::private::RawValue":"{}"}}"#,
        r#"["text","x"]"#,
        r#"["text","x",null]"#,
        r#"["text","x",null,1]"#,
        r#"["image","d"]"#,
        r#"["toolCall","i","n",{}]"#,
        r#"[0,"x"]"#,
    ]
    .into_iter()
    .map(String::from)
    .collect();
    // Nesting around serde_json's limit of 128, wherever the value sits.
    for n in [100, 120, 124, 125, 126, 127, 128] {
        p.push("[".repeat(n) + &"]".repeat(n));
        p.push(r#"{"a":"#.repeat(n) + "1" + &"}".repeat(n));
    }
    p
}

/// Every mutation of `root`: what the module's doc comment lists.
fn mutations(root: &J, palette: &[String]) -> Vec<String> {
    let mut paths = Vec::new();
    root.paths(&mut Vec::new(), &mut paths);
    let mut out = vec![root.text()];
    let mut push = |j: J| out.push(j.text());
    for path in &paths {
        let node = {
            let mut r = root.clone();
            r.at_mut(path).clone()
        };
        let with = |f: &dyn Fn(&mut J)| {
            let mut r = root.clone();
            f(r.at_mut(path));
            r
        };
        for v in palette {
            push(with(&|n| *n = J::Raw(v.clone())));
        }
        match &node {
            J::Obj(o) => {
                for i in 0..o.len() {
                    push(with(&|n| {
                        if let J::Obj(o) = n {
                            o.remove(i);
                        }
                    }));
                    push(with(&|n| {
                        if let J::Obj(o) = n {
                            o.push(o[i].clone());
                        }
                    }));
                    push(with(&|n| {
                        if let J::Obj(o) = n {
                            let k = o[i].0.clone();
                            o.push((k, J::Raw("null".into())));
                        }
                    }));
                    push(with(&|n| {
                        if let J::Obj(o) = n {
                            // The same key, its first letter escaped.
                            let k = &o[i].0;
                            if let Some(c) = k[1..].chars().next() {
                                o[i].0 = format!("\"\\u{:04x}{}", c as u32, &k[1 + c.len_utf8()..]);
                            }
                        }
                    }));
                    push(with(&|n| {
                        if let J::Obj(o) = n {
                            let e = o.remove(i);
                            o.insert(0, e);
                        }
                    }));
                }
                for extra in ["1", "1e400", r#""\ud800""#, "[[[]]]"] {
                    push(with(&|n| {
                        if let J::Obj(o) = n {
                            o.push((r#""zz""#.into(), J::Raw(extra.into())));
                        }
                    }));
                }
                // The array form, whole, cut short, and with one element too many.
                let values: Vec<J> = o.iter().map(|(_, v)| v.clone()).collect();
                for keep in 0..=values.len() {
                    push(with(&|n| *n = J::Arr(values[..keep].to_vec())));
                }
                let mut longer = values.clone();
                longer.push(J::Raw("null".into()));
                push(with(&|n| *n = J::Arr(longer.clone())));
            }
            J::Arr(a) => {
                for i in 0..a.len() {
                    push(with(&|n| {
                        if let J::Arr(a) = n {
                            a.remove(i);
                        }
                    }));
                }
                for v in palette {
                    push(with(&|n| {
                        if let J::Arr(a) = n {
                            a.push(J::Raw(v.clone()));
                        }
                    }));
                }
            }
            J::Raw(_) => {}
        }
    }
    out
}

type Kept = Option<(String, Option<String>, Role)>;

/// What the open pass keeps of a line, by the typed path and by the check.
pub(super) fn both(line: &str) -> (Kept, Kept) {
    let typed = parse_message_parts(line).map(|l| {
        let role = match l.message {
            Message::User(_) => Role::User,
            Message::Assistant(_) => Role::Assistant,
            Message::ToolResult(_) => Role::ToolResult,
        };
        (l.id.into_owned(), l.parent_id.map(Cow::into_owned), role)
    });
    let checked = index_message_line(line)
        .map(|l| (l.id.into_owned(), l.parent_id.map(Cow::into_owned), l.role));
    (typed, checked)
}

/// The check and the typed deserializers agree on the message `text`, for each of the three
/// messages, and so do the index and the typed path on a line holding it.
fn assert_agree(text: &str) -> [bool; 3] {
    let typed = [
        serde_json::from_str::<UserMessage>(text).is_ok(),
        serde_json::from_str::<AssistantMessage>(text).is_ok(),
        serde_json::from_str::<ToolResultMessage>(text).is_ok(),
    ];
    let checked = [
        accepts_user(text),
        accepts_assistant(text),
        accepts_tool_result(text),
    ];
    assert_eq!(
        checked, typed,
        "check vs typed (user, assistant, toolResult) on {text}"
    );
    let line =
        format!(r#"{{"type":"message","id":"a","parentId":"p","timestamp":"t","message":{text}}}"#);
    let (typed_line, checked_line) = both(&line);
    assert_eq!(checked_line, typed_line, "index vs typed on {line}");
    assert_line_is_its_value(&line);
    assert_read_agrees(&line);
    typed
}

/// A lazy line read back in one pass gives the entry the typed path gives (on any line).
pub(super) fn assert_read_agrees(line: &str) {
    assert_eq!(
        read_message_line(line),
        parse_message_line(line),
        "one-pass read vs typed path on {line}"
    );
}

/// `SessionEntry::from_line` gives what `from_value` of the parsed line gives (for a line
/// that is JSON: the lines it is used on are a `Value`'s text).
fn assert_line_is_its_value(line: &str) {
    use crate::entry::SessionEntry;
    if let Ok(v) = serde_json::from_str::<Value>(line) {
        let entry = SessionEntry::from_line(line).ok();
        assert_eq!(
            entry,
            SessionEntry::from_value(&v).ok(),
            "from_line vs from_value on {line}"
        );
        // And back: a line the typed entry would write differently is written back as read;
        // the direct writing of a typed message line is its JSON tree's text.
        if let Some(mut e) = entry {
            if e.verbatim.is_some() {
                assert_eq!(e.to_line(), line, "kept line on {line}");
            }
            e.verbatim = None;
            assert_eq!(e.to_line(), e.to_value().to_string(), "to_line on {line}");
        }
    }
}

/// The `message` objects of a session file's message lines.
fn messages_of(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "message")
        .map(|v| v["message"].clone())
        .filter(|m| m.is_object())
        .collect()
}

fn pi_fixtures() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../filo-cli/tests/fixtures/pi073");
    let mut files: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    assert!(files.len() >= 3, "pi's session fixtures in {dir:?}");
    files
        .into_iter()
        .map(|p| (p.display().to_string(), fs::read_to_string(&p).unwrap()))
        .collect()
}

#[test]
fn the_check_agrees_with_the_typed_path_on_every_line_of_the_files() {
    #[derive(serde::Deserialize)]
    struct Line<'a> {
        #[serde(borrow)]
        message: Option<&'a serde_json::value::RawValue>,
    }
    let mut accepted = 0;
    for (_, text) in pi_fixtures() {
        for line in text.lines() {
            let (typed, checked) = both(line);
            assert_eq!(checked, typed, "index vs typed on {line}");
            assert_line_is_its_value(line);
            assert_read_agrees(line);
            accepted += usize::from(typed.is_some());
            let Ok(Line { message: Some(raw) }) = serde_json::from_str::<Line<'_>>(line) else {
                continue;
            };
            // The message's text as it sits in the line, and re-serialized.
            let again = serde_json::from_str::<Value>(raw.get())
                .unwrap()
                .to_string();
            for text in [raw.get(), again.as_str()] {
                assert_agree(text);
            }
        }
    }
    assert!(accepted > 25, "most message lines are kept: {accepted}");
}

#[test]
fn the_check_agrees_with_the_typed_messages_on_mutations_of_every_kind_of_message() {
    let palette = palette();
    // One message per role and set of block types: pi's fixtures have them all but images,
    // which a hand-written user message brings.
    let mut bases: Vec<Value> = Vec::new();
    let mut shapes = std::collections::HashSet::new();
    let mut all = Vec::new();
    for (_, text) in pi_fixtures() {
        all.extend(messages_of(&text));
    }
    all.push(serde_json::json!({"role":"user","content":[{"type":"text","text":"see"},{"type":"image","data":"aGk=","mimeType":"image/png"}],"timestamp":1}));
    all.push(serde_json::json!({"role":"assistant","content":[{"type":"thinking","thinking":"hm","thinkingSignature":"sig","redacted":false},{"type":"text","text":"a","textSignature":"t"},{"type":"toolCall","id":"c","name":"n","arguments":{"k":[1,"v"]},"thoughtSignature":"s"}],"api":"a","provider":"p","model":"m","usage":{"input":1,"output":2,"cacheRead":3,"cacheWrite":4,"totalTokens":10,"cost":{"input":0.5,"output":1,"cacheRead":0,"cacheWrite":0,"total":1.5}},"stopReason":"error","timestamp":2,"responseId":"r","errorMessage":"e"}));
    all.push(serde_json::json!({"role":"toolResult","toolCallId":"c","toolName":"n","content":[{"type":"text","text":"out"}],"details":{"diff":"x","n":[1]},"isError":true,"timestamp":3}));
    for m in all {
        let kinds: Vec<String> = m["content"]
            .as_array()
            .map(|a| a.iter().map(|b| b["type"].to_string()).collect())
            .unwrap_or_else(|| vec!["string".into()]);
        let keys: Vec<String> = m.as_object().unwrap().keys().cloned().collect();
        if shapes.insert((m["role"].to_string(), kinds, keys)) {
            bases.push(m);
        }
    }
    assert!(bases.len() >= 6, "bases: {}", bases.len());
    let (mut total, mut accepted) = (0, 0);
    for base in &bases {
        for text in mutations(&J::from_value(base), &palette) {
            total += 1;
            accepted += usize::from(assert_agree(&text).iter().any(|a| *a));
        }
    }
    // Both outcomes are well represented, so the agreement means something.
    assert!(total > 15_000, "mutations: {total}");
    assert!(
        accepted > total / 10 && accepted < total * 9 / 10,
        "{accepted} of {total}"
    );
}

#[test]
fn the_one_pass_read_gives_the_typed_entry_on_the_generated_session_and_edge_lines() {
    // The generated 10k session's kinds of line, as the resume benchmark writes them.
    let user = r#"{"role":"user","content":[{"type":"text","text":"x"}],"timestamp":1}"#;
    let assistant = r#"{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"toolCall","id":"c","name":"bash","arguments":{"command":"ls"}}],"api":"openai-completions","provider":"mock","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":2}"#;
    let tool = r#"{"role":"toolResult","toolCallId":"c","toolName":"bash","content":[{"type":"text","text":"out"}],"isError":false,"timestamp":3}"#;
    let mut one_pass = 0;
    for m in [user, assistant, tool] {
        let base = format!(
            r#"{{"type":"message","id":"a","parentId":"p","timestamp":"t","message":{m}}}"#
        );
        let mut lines = vec![base.clone()];
        // The role elsewhere, twice, escaped, or naming another role than the shape.
        let rest = &m[m.find(',').unwrap()..];
        let role = &m[1..m.find(',').unwrap()];
        lines.push(base.replacen(m, &format!("{{{}{role}}}", &rest[1..rest.len() - 1]), 1));
        lines.push(base.replacen(
            m,
            &format!("{{{role}{rest}").replacen('}', &format!(",{role}}}"), 1),
            1,
        ));
        lines.push(base.replacen(m, &format!("{{{role},{role}{rest}"), 1));
        lines.push(base.replacen(m, &format!("{{{role},\"r\\u006fle\":\"user\"{rest}"), 1));
        lines.push(base.replacen(m, &format!("{{\"r\\u006fle\"{}{rest}", &role[6..]), 1));
        for other in ["user", "assistant", "toolResult", "system"] {
            lines.push(base.replacen(role, &format!(r#""role":"{other}""#), 1));
        }
        lines.push(base.replacen(role, r#""role":"us\u0065r""#, 1));
        lines.push(base.replacen(role, r#""role":1"#, 1));
        // Nesting at serde_json's limit, where the in-place read is one level deeper.
        for depth in [120, 124, 125, 126, 127, 128] {
            let deep = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
            lines.push(base.replacen(
                r#""timestamp":"t""#,
                &format!(r#""timestamp":"t","z":{deep}"#),
                1,
            ));
            lines.push(base.replacen(role, &format!(r#"{role},"z":{deep}"#), 1));
        }
        for line in &lines {
            assert_read_agrees(line);
            one_pass += usize::from(super::read_in_one_pass(line).is_some());
        }
    }
    // The one pass decides most of them; the rest fall back to the typed path.
    assert!(one_pass >= 30, "decided in one pass: {one_pass}");
}
