//! `filo --list-models` on the built-in catalog against pi 1.6.0's own table: both run with a
//! (fake) key for every provider of the catalog and nothing else
//! (`fixtures/pi-1.6.0/list-models.json`, recorded by `scripts/record-pi/list-models.mjs`), and
//! print the same bytes: the same 1,688 models of the same providers, in the same order, with
//! the same columns; the same for searches.

use std::path::Path;

use filo_testkit::MockProvider;
use serde_json::Value;

use super::common::Home;

fn recording() -> Value {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pi-1.6.0/list-models.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[tokio::test]
async fn list_models_equals_pi_16() {
    let mock = MockProvider::start(vec![]).await;
    let home = Home::new(&mock);
    std::fs::remove_file(home.path().join(".filo/agent/models.json")).unwrap();
    let pi = recording();
    assert_eq!(pi["pi"], "@earendil-works/pi-coding-agent 1.6.0");
    let keys: Vec<(String, String)> = pi["keys"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
        .collect();
    for case in ["all", "search opus", "search kimi", "search nothing"] {
        let recorded = &pi[case];
        let mut args = vec!["--list-models".to_owned()];
        args.extend(
            recorded["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap().to_owned()),
        );
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut command = home.command(&args);
        for (k, v) in &keys {
            command.env(k, v);
        }
        let out = command.output().await.unwrap();
        assert_eq!(
            out.status.code(),
            recorded["code"].as_i64().map(|c| c as i32),
            "{case}"
        );
        let table = String::from_utf8(out.stdout).unwrap();
        let want = recorded["stdout"].as_str().unwrap();
        if table != want {
            let first = table
                .lines()
                .zip(want.lines())
                .position(|(a, b)| a != b)
                .unwrap_or_else(|| table.lines().count().min(want.lines().count()));
            panic!(
                "--list-models {case}: first difference at line {first}: filo {:?}, pi {:?} ({} vs {} lines)",
                table.lines().nth(first),
                want.lines().nth(first),
                table.lines().count(),
                want.lines().count()
            );
        }
        if case == "all" {
            let rows = table.lines().count() - 1;
            assert_eq!(rows, 1688, "every chat model of pi 1.6 with a key");
            for default in ["claude-opus-5-5", "gpt-6.2-sol", "gemini-4-argon"] {
                assert!(table.contains(default), "{default}");
            }
            assert!(table.lines().any(|l| l.starts_with("azure ")), "azure");
            assert!(!table.contains("azure-openai-responses"), "the old id");
        }
    }
}
