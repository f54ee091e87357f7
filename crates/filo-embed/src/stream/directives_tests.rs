//! Vectors of design §3 C22 / spec §11.4 (OpenClaw `directive-tags.test.ts`, `media/parse.test.ts`,
//! `tokens.test.ts`, streaming-directive behaviour) and more cases per rule.

use super::directives::*;
use super::media::split_media_from_output;

fn media_of(input: &str) -> Vec<String> {
    split_media_from_output(input).media_urls
}

#[test]
fn every_pattern_compiles() {
    let mut all = all_patterns();
    all.extend(super::media::all_patterns());
    for p in all {
        assert!(p.compiles());
    }
}

#[test]
fn display_strip_vectors() {
    let (text, changed) = strip_inline_directive_tags_for_display(
        "hello [[reply_to_current]] world [[reply_to:abc-123]] [[audio_as_voice]]",
    );
    assert_eq!(text, "hello  world  ");
    assert!(changed);
    let (text, changed) =
        strip_inline_directive_tags_for_display("[[ reply_to : 123 ]]ok[[ audio_as_voice ]]");
    assert_eq!(text, "ok");
    assert!(changed);
    let (text, changed) = strip_inline_directive_tags_for_display("plain text");
    assert_eq!(text, "plain text");
    assert!(!changed);
    // a reply tag glued to a word does not count
    let (text, changed) = strip_inline_directive_tags_for_display("see x[[reply_to_current]]");
    assert_eq!(text, "see x[[reply_to_current]]");
    assert!(!changed);
}

#[test]
fn accepted_media_vectors() {
    let cases: &[(&str, &[&str])] = &[
        (
            "MEDIA:/Users/pete/My Files/Project Assets/render final.png",
            &["/Users/pete/My Files/Project Assets/render final.png"],
        ),
        (
            "MEDIA:\"/tmp/first image.png\" \"/tmp/second image.png\"",
            &["/tmp/first image.png", "/tmp/second image.png"],
        ),
        (
            "MEDIA:/tmp/a.png https://example.com/b.png",
            &["/tmp/a.png", "https://example.com/b.png"],
        ),
        (
            "MEDIA:./screenshots/image.png",
            &["./screenshots/image.png"],
        ),
        ("   MEDIA:./screenshot.png", &["./screenshot.png"]),
        ("MEDIA:image.png", &["image.png"]),
        (
            "MEDIA:/path/to/image.png\"}],\"details\":{\"provider\":\"openai\",\"model\":\"gpt-image-2\"}",
            &["/path/to/image.png"],
        ),
        ("MEDIA:/tmp/render,final.png", &["/tmp/render,final.png"]),
        (
            "MEDIA:https://example.com/video.mp4?token=ends,",
            &["https://example.com/video.mp4?token=ends"],
        ),
        (
            "MEDIA:\"https://example.com/video.mp4?token=ends,\"",
            &["https://example.com/video.mp4?token=ends,"],
        ),
        // more from OpenClaw's parse tests
        (
            "MEDIA:/tmp/album.v1/photo.png copy.png",
            &["/tmp/album.v1/photo.png copy.png"],
        ),
        ("MEDIA:~/Pictures/My File.png", &["~/Pictures/My File.png"]),
        (
            "MEDIA:C:\\Users\\pete\\Pictures\\snap.png",
            &["C:\\Users\\pete\\Pictures\\snap.png"],
        ),
        (
            "MEDIA:C:\\Users\\First  Last\\workspace\\shot.png",
            &["C:\\Users\\First  Last\\workspace\\shot.png"],
        ),
        (
            "MEDIA:media/a.png media/b.png",
            &["media/a.png", "media/b.png"],
        ),
        ("MEDIA:./a.png ./b.png", &["./a.png", "./b.png"]),
        (
            "MEDIA:'/tmp/first image.png' '/tmp/second image.png'",
            &["/tmp/first image.png", "/tmp/second image.png"],
        ),
        (
            "MEDIA:`/tmp/first image.png` `/tmp/second image.png`",
            &["/tmp/first image.png", "/tmp/second image.png"],
        ),
        (
            "MEDIA:/tmp/project screenshots/../../.env /tmp/safe/second.png",
            &["/tmp/safe/second.png"],
        ),
        (
            "MEDIA:'https://example.com/video.mp4?token=it's' /tmp/second.png",
            &[
                "https://example.com/video.mp4?token=it's",
                "/tmp/second.png",
            ],
        ),
        ("MEDIA:render final.png", &["render final.png"]),
        ("MEDIA:file:///tmp/shot.png", &["/tmp/shot.png"]),
    ];
    for (input, want) in cases {
        assert_eq!(media_of(input), *want, "{input:?}");
        assert_eq!(split_media_from_output(input).text, "", "{input:?}");
    }
}

#[test]
fn rejected_local_paths_leave_no_media_and_no_text() {
    for input in [
        "MEDIA:../../../etc/passwd",
        "MEDIA:../../.env",
        "MEDIA:~user/Pictures/My File.png",
        "MEDIA:~/Pictures/../../.ssh/id_rsa",
        "MEDIA:./foo/../../../etc/shadow",
        "MEDIA:file:///tmp/../secret.png",
    ] {
        let split = split_media_from_output(input);
        assert!(split.media_urls.is_empty(), "{input:?}");
        assert_eq!(split.text, "", "{input:?}");
    }
}

#[test]
fn unsafe_remote_urls_stay_as_text() {
    for input in [
        "MEDIA:http://example.com/a.png",
        "MEDIA:https://localhost/a.png",
        "MEDIA:https://127.0.0.1/a.png",
        "MEDIA:https://169.254.169.254/latest/meta-data",
        "MEDIA:https://[::1]/a.png",
        "MEDIA:https://intranet/a.png",
        "MEDIA:https://media.local/a.png",
    ] {
        let split = split_media_from_output(input);
        assert!(split.media_urls.is_empty(), "{input:?}");
        assert_eq!(split.text, input);
    }
    let split = split_media_from_output(
        "MEDIA:C:\\Users\\First Last\\workspace\\shot.png https://127.0.0.1/secret.png",
    );
    assert_eq!(
        split.media_urls,
        ["C:\\Users\\First Last\\workspace\\shot.png"]
    );
    assert_eq!(split.text, "https://127.0.0.1/secret.png");
}

#[test]
fn text_and_voice_vectors() {
    let split = split_media_from_output("Hello [[audio_as_voice]] world");
    assert_eq!(split.text, "Hello world");
    assert!(split.audio_as_voice);
    assert!(split.media_urls.is_empty());
    let split = split_media_from_output("Hello [[audio_as_voice]]");
    assert_eq!(split.text, "Hello");
    assert!(split.audio_as_voice);
    let split = split_media_from_output("Caption\n    MEDIA:https://example.com/a.png");
    assert_eq!(split.text, "Caption");
    assert_eq!(split.media_urls, ["https://example.com/a.png"]);
    for unchanged in ["The MEDIA: tag fails to deliver", "MEDIA:screenshot"] {
        let split = split_media_from_output(unchanged);
        assert_eq!(split.text, unchanged);
        assert!(split.media_urls.is_empty());
    }
    let fenced = "Before\nMEDIA:https://example.com/a.png\n```text\nMEDIA:https://example.com/ignored.png\n```\nAfter";
    let split = split_media_from_output(fenced);
    assert_eq!(split.media_urls, ["https://example.com/a.png"]);
    assert_eq!(
        split.text,
        "Before\n```text\nMEDIA:https://example.com/ignored.png\n```\nAfter"
    );
    // an indented code block after a blank line is not parsed either
    let split = split_media_from_output("Intro\n\n    MEDIA:/tmp/a.png");
    assert!(split.media_urls.is_empty());
    // plain text passes through (trailing whitespace trimmed only)
    let split = split_media_from_output("  indented\n\n\nparagraphs  \n");
    assert_eq!(split.text, "  indented\n\n\nparagraphs");
    assert_eq!(split_media_from_output("   \n ").text, "");
}

#[test]
fn reply_directive_vectors() {
    let parsed = parse_reply_directives("[[reply_to_current]] Hi there", Some("m-1"), None);
    assert_eq!(parsed.text, "Hi there");
    assert_eq!(parsed.reply_to_id.as_deref(), Some("m-1"));
    assert!(parsed.reply_to_current && parsed.reply_to_tag);
    let parsed =
        parse_reply_directives("[[reply_to: a ]] one [[reply_to:b]] two", Some("m-1"), None);
    assert_eq!(parsed.text, "one two");
    assert_eq!(parsed.reply_to_id.as_deref(), Some("b"));
    assert!(!parsed.reply_to_current);
    let parsed = parse_reply_directives("[[reply_to_current]] x", None, None);
    assert_eq!(parsed.reply_to_id, None);
    let parsed = parse_reply_directives("  NO_REPLY ", None, None);
    assert!(parsed.is_silent);
    assert_eq!(parsed.text, "");
    let parsed = parse_reply_directives("HEARTBEAT_OK", None, Some("HEARTBEAT_OK"));
    assert!(parsed.is_silent);
    let parsed = parse_reply_directives(
        "Look [[audio_as_voice]]\nMEDIA:https://example.com/v.ogg",
        None,
        None,
    );
    assert_eq!(parsed.text, "Look");
    assert_eq!(parsed.media_urls, ["https://example.com/v.ogg"]);
    assert!(parsed.audio_as_voice && !parsed.is_silent);
    // no tags: text untouched
    let parsed = parse_reply_directives("a  b\n  c", None, None);
    assert_eq!(parsed.text, "a  b\n  c");
    assert!(!parsed.reply_to_tag);
}

#[test]
fn streaming_accumulator_holds_split_tags_and_carries_reply_targets() {
    let mut acc = DirectiveAccumulator::new();
    // a tag split across chunks is held back
    assert_eq!(
        acc.consume("Hello [[reply_to", false, Some("m-9"))
            .map(|r| r.text),
        Some("Hello".to_owned())
    );
    let next = acc.consume("_current]] world", false, Some("m-9"));
    let next = next.map(|r| (r.text, r.reply_to_id));
    assert_eq!(next, Some(("world".to_owned(), Some("m-9".to_owned()))));
    // the reply target stays active for the rest of the message
    let more = acc.consume(" more", true, Some("m-9"));
    assert_eq!(more.and_then(|r| r.reply_to_id), Some("m-9".to_owned()));

    // a tag-only chunk passes its target to the next renderable chunk
    let mut acc = DirectiveAccumulator::new();
    assert!(acc.consume("[[reply_to:abc]]", false, None).is_none());
    let next = acc.consume("Answer", true, None);
    assert_eq!(next.and_then(|r| r.reply_to_id), Some("abc".to_owned()));

    // silent chunks and silent prefixes render nothing; a trailing token is stripped
    let mut acc = DirectiveAccumulator::new();
    assert!(acc.consume("NO", false, None).is_none());
    assert!(acc.consume("NO_REPLY", true, None).is_none());
    let mut acc = DirectiveAccumulator::new();
    let out = acc.consume("Done.\n\nNO_REPLY", true, None).map(|r| r.text);
    assert_eq!(out.as_deref(), Some("Done."));

    // reset forgets the active target
    let mut acc = DirectiveAccumulator::new();
    acc.consume("[[reply_to:x]] hi", true, None);
    acc.reset();
    assert_eq!(
        acc.consume("plain", true, None).and_then(|r| r.reply_to_id),
        None
    );
}

#[test]
fn unicode_whitespace_separates_references() {
    // A no-break space is whitespace to the reference splitter (it once stalled it).
    assert_eq!(
        media_of("MEDIA:/tmp/a.png\u{a0}/tmp/b.png"),
        ["/tmp/a.png", "/tmp/b.png"]
    );
    assert_eq!(
        media_of("MEDIA:\"/tmp/x y.png\"\u{3000}/tmp/z.png"),
        ["/tmp/x y.png", "/tmp/z.png"]
    );
}

#[test]
fn only_text_that_may_still_become_a_directive_is_held_back() {
    for text in [
        "answer part A msg [[E1008]timeout] answer part B",
        "answer ending [",
    ] {
        let mut acc = DirectiveAccumulator::new();
        let streamed = acc
            .consume(text, false, None)
            .map(|r| r.text)
            .unwrap_or_default();
        let rest = acc
            .consume("", true, None)
            .map(|r| r.text)
            .unwrap_or_default();
        let joined = if rest.is_empty() {
            streamed
        } else if streamed.is_empty() {
            rest
        } else {
            format!("{streamed} {rest}")
        };
        assert_eq!(joined, text.trim_end(), "{text:?}");
    }
    // a closing bracket split between chunks still completes the tag
    let mut acc = DirectiveAccumulator::new();
    assert!(acc.consume("[[reply_to:abc]", false, None).is_none());
    let out = acc.consume("] Hi", false, None);
    assert_eq!(
        out.map(|r| (r.text, r.reply_to_id)),
        Some(("Hi".to_owned(), Some("abc".to_owned())))
    );
    // a lone trailing bracket may start a tag
    let mut acc = DirectiveAccumulator::new();
    assert_eq!(
        acc.consume("Hey [", false, None).map(|r| r.text).as_deref(),
        Some("Hey")
    );
    let out = acc.consume("[reply_to_current]] there", false, Some("m-2"));
    assert_eq!(out.and_then(|r| r.reply_to_id).as_deref(), Some("m-2"));
}
