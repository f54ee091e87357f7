use pretty_assertions::assert_eq;
use serde_json::json;

use super::{failure, run, settings, text};
use filo_tools::EditTool;

async fn edit(content: &str, old: &str, new: &str) -> (Result<String, String>, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.txt");
    std::fs::write(&path, content).unwrap();
    let tool = EditTool::with_settings(settings(dir.path()));
    let result = run(
        &tool,
        json!({"path": "f.txt", "oldText": old, "newText": new}),
    )
    .await;
    let outcome = match result {
        Ok(out) => Ok(text(&out).to_string()),
        Err(err) => Err(failure(Err(err))),
    };
    (outcome, std::fs::read(&path).unwrap())
}

fn written(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap()
}

#[tokio::test]
async fn replaces_text_and_reports_a_diff() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("e.txt"), "Hello, world!\nsecond\n").unwrap();
    let tool = EditTool::with_settings(settings(dir.path()));
    let out = run(
        &tool,
        json!({"path": "e.txt", "oldText": "world", "newText": "testing"}),
    )
    .await
    .unwrap();
    assert_eq!(text(&out), "Successfully replaced 1 block(s) in e.txt.");
    let details = out.details.unwrap();
    assert_eq!(
        details["diff"],
        "-1 Hello, world!\n+1 Hello, testing!\n 2 second"
    );
    assert_eq!(details["firstChangedLine"], 1);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("e.txt")).unwrap(),
        "Hello, testing!\nsecond\n"
    );
}

#[tokio::test]
async fn not_found_and_missing_file_errors() {
    let (result, bytes) = edit("Hello, world!", "nonexistent", "x").await;
    assert_eq!(
        result.unwrap_err(),
        "Could not find the exact text in f.txt. The old text must match exactly including all whitespace and newlines."
    );
    assert_eq!(written(bytes), "Hello, world!");

    let dir = tempfile::tempdir().unwrap();
    let tool = EditTool::with_settings(settings(dir.path()));
    let message = failure(
        run(
            &tool,
            json!({"path": "gone.txt", "oldText": "a", "newText": "b"}),
        )
        .await,
    );
    assert_eq!(
        message,
        "Could not edit file: gone.txt. Error code: ENOENT."
    );
}

#[tokio::test]
async fn multiple_occurrences_are_rejected() {
    let (result, _) = edit("foo foo foo", "foo", "bar").await;
    assert_eq!(
        result.unwrap_err(),
        "Found 3 occurrences of the text in f.txt. The text must be unique. Please provide more context to make it unique."
    );
}

#[tokio::test]
async fn identical_replacement_is_rejected() {
    let (result, _) = edit("abc", "b", "b").await;
    assert_eq!(
        result.unwrap_err(),
        "No changes made to f.txt. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected."
    );
}

#[tokio::test]
async fn fuzzy_trailing_whitespace() {
    let (result, bytes) = edit(
        "line one   \nline two  \nline three\n",
        "line one\nline two\n",
        "replaced\n",
    )
    .await;
    assert!(result.is_ok());
    assert_eq!(written(bytes), "replaced\nline three\n");
}

#[tokio::test]
async fn fuzzy_fullwidth_nfkc() {
    let (result, bytes) = edit(
        "const x = \u{FF41}\u{FF42}\u{FF43};\n",
        "const x = abc;",
        "const x = 1;",
    )
    .await;
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(written(bytes), "const x = 1;\n");
}

#[tokio::test]
async fn fuzzy_smart_quotes() {
    let (result, bytes) = edit(
        "console.log(\u{2018}hello\u{2019});\n",
        "console.log('hello');",
        "console.log('world');",
    )
    .await;
    assert!(result.is_ok());
    assert_eq!(written(bytes), "console.log('world');\n");
    let (result, bytes) = edit("say(\u{201C}hi\u{201D})\n", "say(\"hi\")", "say(\"bye\")").await;
    assert!(result.is_ok());
    assert_eq!(written(bytes), "say(\"bye\")\n");
}

#[tokio::test]
async fn fuzzy_unicode_dashes_and_nbsp() {
    let (result, bytes) = edit(
        "range: 1\u{2013}5 and 6\u{2014}9\n",
        "range: 1-5 and 6-9",
        "range: all",
    )
    .await;
    assert!(result.is_ok());
    assert_eq!(written(bytes), "range: all\n");
    let (result, bytes) = edit("a\u{00A0}b\n", "a b", "c").await;
    assert!(result.is_ok());
    assert_eq!(written(bytes), "c\n");
}

#[tokio::test]
async fn exact_match_is_preferred_over_fuzzy() {
    // The exact text exists, so the file is not normalised (the curly quote on line 1 stays).
    let (result, bytes) = edit(
        "it\u{2019}s\nconst y = 'exact';\n",
        "const y = 'exact';",
        "const y = 'done';",
    )
    .await;
    assert!(result.is_ok());
    assert_eq!(written(bytes), "it\u{2019}s\nconst y = 'done';\n");
}

#[tokio::test]
async fn fuzzy_still_fails_when_absent() {
    let (result, _) = edit("\u{201C}quoted\u{201D}\n", "\"other\"", "x").await;
    assert!(
        result
            .unwrap_err()
            .starts_with("Could not find the exact text in f.txt.")
    );
}

#[tokio::test]
async fn duplicates_detected_after_normalisation() {
    let (result, _) = edit("it\u{2019}s here\nit's here\n", "it's here", "x").await;
    assert_eq!(
        result.unwrap_err(),
        "Found 2 occurrences of the text in f.txt. The text must be unique. Please provide more context to make it unique."
    );
}

#[tokio::test]
async fn lf_old_text_matches_crlf_file_and_crlf_is_kept() {
    let (result, bytes) = edit(
        "line1\r\nline2\r\nline3\r\n",
        "line1\nline2",
        "first\nsecond",
    )
    .await;
    assert!(result.is_ok());
    assert_eq!(written(bytes), "first\r\nsecond\r\nline3\r\n");
}

#[tokio::test]
async fn lf_files_stay_lf() {
    let (result, bytes) = edit("a\nb\nc\n", "b\r\n", "B\r\n").await;
    assert!(result.is_ok());
    assert_eq!(written(bytes), "a\nB\nc\n");
}

#[tokio::test]
async fn duplicates_across_crlf_and_lf() {
    let (result, _) = edit("x\r\ny\nx\ny\n", "x\ny", "z").await;
    assert!(
        result
            .unwrap_err()
            .starts_with("Found 2 occurrences of the text in f.txt.")
    );
}

#[tokio::test]
async fn bom_is_preserved() {
    let (result, bytes) = edit("\u{FEFF}first\r\nsecond\r\n", "first", "FIRST").await;
    assert!(result.is_ok());
    assert_eq!(written(bytes), "\u{FEFF}FIRST\r\nsecond\r\n");
}

/// Run the edit tool as the agent does: pi's `prepareArguments`, then the tool.
async fn multi(content: &str, args: serde_json::Value) -> (Result<String, String>, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.txt");
    std::fs::write(&path, content).unwrap();
    let tool = EditTool::with_settings(settings(dir.path()));
    let outcome = match run(&tool, args).await {
        Ok(out) => Ok(text(&out).to_string()),
        Err(err) => Err(failure(Err(err))),
    };
    (outcome, std::fs::read_to_string(&path).unwrap())
}

#[tokio::test]
async fn several_edits_are_matched_against_the_original() {
    // The second oldText only exists before the first edit is applied: pi matches against the
    // original file, not incrementally.
    let (result, after) = multi(
        "alpha\nbeta\ngamma\n",
        json!({"path": "f.txt", "edits": [
            {"oldText": "gamma", "newText": "GAMMA"},
            {"oldText": "alpha", "newText": "gamma"}
        ]}),
    )
    .await;
    assert_eq!(
        result.unwrap(),
        "Successfully replaced 2 block(s) in f.txt."
    );
    assert_eq!(after, "gamma\nbeta\nGAMMA\n");
}

#[tokio::test]
async fn overlapping_edits_are_refused_and_the_file_is_kept() {
    let (result, after) = multi(
        "one two three\n",
        json!({"path": "f.txt", "edits": [
            {"oldText": "two three", "newText": "x"},
            {"oldText": "one two", "newText": "y"}
        ]}),
    )
    .await;
    assert_eq!(
        result.unwrap_err(),
        "edits[1] and edits[0] overlap in f.txt. Merge them into one edit or target disjoint regions."
    );
    assert_eq!(after, "one two three\n");
}

#[tokio::test]
async fn multi_edit_texts_name_the_failing_entry() {
    let content = "a b a\nc\n";
    let cases = [
        (
            json!([{"oldText": "c", "newText": "C"}, {"oldText": "a", "newText": "A"}]),
            "Found 2 occurrences of edits[1] in f.txt. Each oldText must be unique. Please provide more context to make it unique.",
        ),
        (
            json!([{"oldText": "c", "newText": "C"}, {"oldText": "zz", "newText": "A"}]),
            "Could not find edits[1] in f.txt. The oldText must match exactly including all whitespace and newlines.",
        ),
        (
            json!([{"oldText": "c", "newText": "C"}, {"oldText": "", "newText": "A"}]),
            "edits[1].oldText must not be empty in f.txt.",
        ),
        (
            json!([{"oldText": "c", "newText": "c"}, {"oldText": "b", "newText": "b"}]),
            "No changes made to f.txt. The replacements produced identical content.",
        ),
        (
            json!([]),
            "Edit tool input is invalid. edits must contain at least one replacement.",
        ),
    ];
    for (edits, expected) in cases {
        let (result, after) = multi(content, json!({"path": "f.txt", "edits": edits})).await;
        assert_eq!(result.unwrap_err(), expected);
        assert_eq!(after, content);
    }
    let (result, _) = multi(
        content,
        json!({"path": "f.txt", "edits": [{"oldText": "", "newText": "x"}]}),
    )
    .await;
    assert_eq!(result.unwrap_err(), "oldText must not be empty in f.txt.");
}

#[tokio::test]
async fn legacy_shape_and_edits_as_a_json_string_are_accepted() {
    let (result, after) = multi(
        "x y\n",
        json!({"path": "f.txt", "edits": "[{\"oldText\":\"x\",\"newText\":\"X\"}]", "oldText": "y", "newText": "Y"}),
    )
    .await;
    assert_eq!(
        result.unwrap(),
        "Successfully replaced 2 block(s) in f.txt."
    );
    assert_eq!(after, "X Y\n");
    let prepared =
        filo_tools::edit::prepare_edit_arguments(json!({"path": "p", "edits": "not json"}));
    assert_eq!(prepared, json!({"path": "p", "edits": "not json"}));
}
