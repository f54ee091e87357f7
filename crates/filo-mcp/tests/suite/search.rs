//! pi's BM25 ranking for `tool_search`, and loading through the tool.

use std::sync::{Arc, Mutex};

use filo_agent::{AgentTool, ToolCallContext};
use filo_mcp::search::{SearchDoc, ToolSearch, rank, tokenize};
use serde_json::json;

fn doc(name: &str, text: &str) -> SearchDoc {
    SearchDoc {
        name: name.into(),
        text: text.into(),
        namespace: String::new(),
    }
}

#[test]
fn tokens_split_identifiers_drop_stop_words_and_singularise() {
    assert_eq!(
        tokenize("readFile the HTTPServer issues"),
        ["read", "file", "http", "server", "issue"]
    );
    assert_eq!(
        tokenize("mcp__dev-radius__search_code"),
        ["mcp", "dev", "radiu", "search", "code"]
    );
    // pi's naive singular: any word over three letters ending in one `s` loses it.
}

#[test]
fn names_beat_descriptions_coverage_beats_score_and_exact_names_come_first() {
    let docs = [
        doc("mcp__gh__list_issues", "List the issues of a repository"),
        doc(
            "mcp__gh__search_code",
            "Search code across repositories; mentions issues issues issues",
        ),
        doc("mcp__gh__get_issue", "Get one issue by number"),
        doc("mcp__fs__read_file", "Read a file from disk"),
    ];
    let names = |q: &str, n: usize| {
        rank(q, &docs, n)
            .into_iter()
            .map(|(n, _)| n)
            .collect::<Vec<_>>()
    };
    // `issue` in the name outranks many mentions in a description.
    let r = names("issues", 4);
    assert_eq!(r.len(), 3);
    assert!(r[2] == "mcp__gh__search_code", "{r:?}");
    // The whole local name in the query wins among equal coverage.
    assert_eq!(names("get issue", 1), ["mcp__gh__get_issue"]);
    // A query that is exactly a tool's (local) name ranks it first.
    assert_eq!(names("read_file", 1), ["mcp__fs__read_file"]);
    assert!(names("nothing matches", 5).is_empty());
}

struct Named(&'static str, &'static str);
impl AgentTool for Named {
    fn name(&self) -> &str {
        self.0
    }
    fn label(&self) -> &str {
        self.0
    }
    fn description(&self) -> &str {
        self.1
    }
    fn parameters(&self) -> serde_json::Value {
        json!({"type": "object"})
    }
    fn execute(
        &self,
        _: ToolCallContext,
    ) -> futures::future::BoxFuture<'_, Result<filo_agent::ToolOutput, filo_agent::ToolError>> {
        Box::pin(async { Ok(filo_agent::ToolOutput::text("")) })
    }
}

#[tokio::test]
async fn tool_search_loads_matches_and_records_them_in_details() {
    let loaded = Arc::new(Mutex::new(Default::default()));
    let tools: Vec<(Arc<dyn AgentTool>, SearchDoc)> = vec![
        (
            Arc::new(Named("mcp__a__weather", "Get the weather forecast\nmore")),
            doc("mcp__a__weather", "Get the weather forecast"),
        ),
        (
            Arc::new(Named("mcp__a__sum", "Add numbers")),
            doc("mcp__a__sum", "Add numbers"),
        ),
    ];
    let search = ToolSearch {
        candidates: tools,
        loaded: loaded.clone(),
    };
    let out = search
        .execute(ToolCallContext::new(
            "1",
            json!({"query": "weather forecast"}),
        ))
        .await
        .unwrap();
    assert_eq!(out.details, Some(json!({"loaded": ["mcp__a__weather"]})));
    let filo_ai::ContentBlock::Text(t) = &out.content[0] else {
        panic!()
    };
    assert_eq!(
        t.text,
        "Loaded 1 tool. They are available from your next call:\n- mcp__a__weather: Get the weather forecast"
    );
    assert!(loaded.lock().unwrap().contains("mcp__a__weather"));
    // Already loaded tools are not searched again.
    let again = search
        .execute(ToolCallContext::new("2", json!({"query": "weather"})))
        .await
        .unwrap();
    let filo_ai::ContentBlock::Text(t) = &again.content[0] else {
        panic!()
    };
    assert_eq!(t.text, "No matching tools found.");
    let bad = search
        .execute(ToolCallContext::new("3", json!({"query": " "})))
        .await
        .unwrap_err();
    assert_eq!(bad.to_string(), "query must not be empty");
    let bad = search
        .execute(ToolCallContext::new("3", json!({"query": "x", "limit": 0})))
        .await
        .unwrap_err();
    assert_eq!(bad.to_string(), "limit must be a positive integer");
}
