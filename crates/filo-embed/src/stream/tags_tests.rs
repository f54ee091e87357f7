//! Vectors of design §3 C21 / spec §8.3 for the streaming stripper (OpenClaw's subscriber
//! tests), more cases per rule, and the split-invariance property.

use proptest::prelude::*;

use super::*;

fn visible(text: &str) -> String {
    strip_block_tags(text, false).visible
}

#[test]
fn subscriber_vectors() {
    let mut s = TagStripper::new(true);
    assert_eq!(s.push("<final>Hi there</final>").visible, "Hi there");
    let mut s = TagStripper::new(true);
    let out = s.push("</final>Oops no start");
    assert_eq!(out.visible, "");
    assert_eq!(s.finish().visible, "");
    assert_eq!(visible("Hello world"), "Hello world");
    let kept = "The fix strips leaked `<thinking>` tags from messages.";
    assert_eq!(visible(kept), kept);
    let fenced = "Example:\n  ````\n<thinking>code example</thinking>\n  ````\nDone.";
    assert_eq!(visible(fenced), fenced);
    let out = visible("Hello <thinking>internal thought</thinking> world");
    assert!(out.contains("Hello") && out.contains("world"), "{out:?}");
    assert!(!out.contains("internal thought"));
}

#[test]
fn thinking_tags_are_removed_with_their_content() {
    let cases: &[(&str, &str)] = &[
        (
            "Hello <think>internal reasoning</think> world!",
            "Hello  world!",
        ),
        (
            "Before <thinking>some thought</thinking> after",
            "Before  after",
        ),
        ("A <thought>hmm</thought> B", "A  B"),
        ("X <antthinking>internal</antthinking> Y", "X  Y"),
        ("<think>first</think>A<think>second</think>B", "AB"),
        ("A < think >content< /think > B", "A  B"),
        (
            "A <THINK>hidden</THINK> <Thinking>also hidden</Thinking> B",
            "A   B",
        ),
        // no nesting counter: the first close leaves thinking
        ("<think>a <think>b</think> c</think>d", " cd"),
        // a stray close is just removed
        ("text </think> more", "text  more"),
        // unclosed: the rest is thinking
        ("Before <think>unclosed", "Before "),
        // not tags
        ("a <thinker> b", "a <thinker> b"),
        ("1 < 2 and 3 > 2", "1 < 2 and 3 > 2"),
        ("<think", "<think"),
        ("a <", "a <"),
        ("x <think attr='1'>y</think>", "x <think attr='1'>y"),
    ];
    for (text, want) in cases {
        assert_eq!(visible(text), *want, "{text:?}");
    }
}

#[test]
fn thinking_text_is_collected_separately() {
    let out = strip_block_tags("A<think>why</think>B<thinking> more", false);
    assert_eq!(out.visible, "AB");
    assert_eq!(out.thinking, "why more");
}

#[test]
fn final_tags() {
    // without enforcement final tags just disappear
    assert_eq!(visible("A<final>1</final>B<final>2</final>C"), "A1B2C");
    // with enforcement only text inside <final> shows
    let enforce = |t: &str| strip_block_tags(t, true).visible;
    assert_eq!(
        enforce("thinking out loud <final>Answer</final> trailing"),
        "Answer"
    );
    assert_eq!(enforce("no final tag at all"), "");
    assert_eq!(enforce("<final>open to the end"), "open to the end");
    assert_eq!(
        enforce("<think><final>no</final></think><final>yes</final>"),
        "yes"
    );
    // tags inside code do not count
    assert_eq!(
        enforce("<final>use `</final>` here</final>"),
        "use `</final>` here"
    );
}

#[test]
fn code_protects_tags() {
    let cases = [
        "Use the tag like this:\n```\n<think>reasoning</think>\n```\nThat's it!",
        "Example:\n~~~js\n<think>code</think>\n~~~",
        "Inline ``<think>`` here",
        "```\n<think>not protected\n~~~\n</think>text",
    ];
    for text in cases {
        assert_eq!(visible(text), text, "{text:?}");
    }
    // after the fence closes, tags count again
    assert_eq!(
        visible("```\n<think>code</think>\n```\n<think>real hidden</think>visible"),
        "```\n<think>code</think>\n```\nvisible"
    );
    // an indented (4 spaces) marker does not open a fence
    assert_eq!(visible("    ~~~\n<think>x</think>y"), "    ~~~\ny");
    // … but backticks there open an inline span that runs to the end
    assert_eq!(
        visible("    ```\n<think>x</think>y"),
        "    ```\n<think>x</think>y"
    );
}

#[test]
fn inline_code_state_carries_across_deltas() {
    let mut s = TagStripper::new(false);
    let mut out = s.push("open `code <think>");
    out.append(s.push("kept</think>` then <think>gone</think> end"));
    out.append(s.finish());
    assert_eq!(out.visible, "open `code <think>kept</think>` then  end");
}

#[test]
fn undecided_text_is_held_back_until_the_next_delta() {
    let mut s = TagStripper::new(false);
    assert_eq!(s.push("Hello <thi").visible, "Hello ");
    assert_eq!(s.pending(), "<thi");
    assert_eq!(s.push("nk>secret</th").visible, "");
    assert!(s.is_thinking());
    assert_eq!(s.push("ink> world").visible, " world");
    assert!(!s.is_thinking());
    // at the end a partial tag is plain text
    assert_eq!(s.push(" <fin").visible, " ");
    assert_eq!(s.finish().visible, "<fin");
}

#[test]
fn reset_forgets_state() {
    let mut s = TagStripper::new(true);
    s.push("<final>a");
    assert!(s.in_final());
    s.reset();
    assert!(!s.in_final());
    assert_eq!(s.push("b").visible, "");
}

fn split_at_chars(text: &str, cuts: &[usize]) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (chars.len() + 1)).collect();
    points.extend([0, chars.len()]);
    points.sort_unstable();
    points.dedup();
    points
        .windows(2)
        .map(|w| chars[w[0]..w[1]].iter().collect())
        .collect()
}

fn tagged_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z é]{1,8}",
        Just("<think>".to_owned()),
        Just("</think>".to_owned()),
        Just("< Thinking >".to_owned()),
        Just("</ thought>".to_owned()),
        Just("<final>".to_owned()),
        Just("</final>".to_owned()),
        Just("<thinker>".to_owned()),
        Just("<".to_owned()),
        Just("`".to_owned()),
        Just("``".to_owned()),
        Just("\n```\n".to_owned()),
        Just("\n  ~~~~\n".to_owned()),
        Just("\n".to_owned()),
        Just("   ".to_owned()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any split of a text into deltas gives the same output as the whole text.
    #[test]
    fn any_split_gives_the_same_output(
        pieces in proptest::collection::vec(tagged_piece(), 0..40),
        cuts in proptest::collection::vec(0usize..500, 0..30),
        enforce in any::<bool>(),
    ) {
        let text = pieces.concat();
        let whole = strip_block_tags(&text, enforce);
        let mut s = TagStripper::new(enforce);
        let mut streamed = Stripped::default();
        for delta in split_at_chars(&text, &cuts) {
            streamed.append(s.push(&delta));
        }
        streamed.append(s.finish());
        prop_assert_eq!(streamed, whole);
    }

    /// Without tags or code, text passes through unchanged.
    #[test]
    fn plain_text_is_unchanged(text in "[a-zA-Z0-9 .,!?\n>é日]{0,200}") {
        prop_assert_eq!(visible(&text), text);
    }
}
