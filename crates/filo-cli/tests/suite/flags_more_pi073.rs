//! More command-line flags of pi 0.73.1 against what the real pi did on the same input
//! (`tests/fixtures/pi073/flags-more.json`, recorded by `scripts/record-pi/record.py
//! flags_more_case`): `--fork` (its conflicts, misses and the copy it makes), `--session` misses,
//! `--skill` / `-ns`, `--prompt-template` / `-np` as they reach the model, and where
//! `--session-dir`, the environment and the `sessionDir` setting put a new session.
//!
//! Paths differ only by where each tool keeps things: pi's recording ran with HOME `<TMP>/home`
//! and agent dir `<TMP>/home/agent`; filo's test HOME is the temporary directory itself, its agent
//! dir `.filo/agent`. Both sides are brought to `<TMP>` and `<AGENT>` before comparing.

use std::path::Path;

use filo_testkit::{MockProvider, Turn};
use serde_json::{Value, json};

use super::common::{Home, jsonl};
use super::pi073::fixture;

/// pi's recorded text with its agent dir named `<AGENT>`.
fn pi_text(value: &Value) -> String {
    value
        .as_str()
        .unwrap_or_default()
        .replace("<TMP>/home/agent", "<AGENT>")
}

/// filo's text with its HOME named `<TMP>` and its agent dir `<AGENT>`.
fn filo_text(home: &Home, text: &str) -> String {
    let root = home.path().to_str().unwrap();
    text.replace(&format!("{root}/.filo/agent"), "<AGENT>")
        .replace(root, "<TMP>")
}

/// A recorded argument list with `<TMP>` made this HOME (the recording's own session path is
/// replaced by `source`).
fn args_for(home: &Home, recorded: &Value, pi_source: &str, source: &Path) -> Vec<String> {
    let root = home.path().to_str().unwrap();
    recorded["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let a = a.as_str().unwrap();
            if a == pi_source {
                source.to_str().unwrap().to_owned()
            } else {
                a.replace("<TMP>", root)
            }
        })
        .collect()
}

#[tokio::test]
async fn fork_and_session_flags_answer_as_pi_073() {
    let pi = fixture("flags-more.json");
    let mock = MockProvider::start(vec![
        Turn::text("first answer"),
        Turn::text("second answer"),
        Turn::text("forked answer"),
    ])
    .await;
    let home = Home::new(&mock);
    let model = ["--provider", "mock", "--model", "mock-model"];
    let (code, _, err) = home.filo(&[&model[..], &["-p", "first"]].concat()).await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = home
        .filo(&[&model[..], &["-p", "-c", "second"]].concat())
        .await;
    assert_eq!(code, 0, "{err}");
    let source = home.sessions().pop().unwrap();
    let source_lines = jsonl(&source);
    let pi_source = pi["fork conflict session"]["args"][1].as_str().unwrap();
    std::fs::write(home.path().join("empty.jsonl"), "").unwrap();
    let headless: String = std::fs::read_to_string(&source)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(home.path().join("headless.jsonl"), headless).unwrap();

    for case in [
        "fork conflict session",
        "fork conflict continue",
        "fork conflict resume",
        "fork conflict no-session",
        "fork conflict all",
        "fork missing id",
        "session missing id",
        "fork empty file",
        "fork headless file",
    ] {
        let recorded = &pi[case];
        let args = args_for(&home, recorded, pi_source, &source);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, out, err) = home.filo(&args).await;
        assert_eq!(
            (code as i64, out.as_str(), filo_text(&home, &err)),
            (
                recorded["code"].as_i64().unwrap(),
                recorded["stdout"].as_str().unwrap(),
                pi_text(&recorded["stderr"])
            ),
            "{case}"
        );
    }
    // Nothing was written by the refused runs: the source alone is in the session dir.
    assert_eq!(home.sessions(), vec![source.clone()]);

    // A fork by id prefix: a new file naming its source, every entry copied as it was.
    let recorded = &pi["fork by id"];
    let id = source_lines[0]["id"].as_str().unwrap()[..8].to_owned();
    let (code, out, err) = home
        .filo(&[&model[..], &["--fork", &id, "-p", "third"]].concat())
        .await;
    assert_eq!(
        (code as i64, out.as_str()),
        (
            recorded["code"].as_i64().unwrap(),
            recorded["stdout"].as_str().unwrap()
        ),
        "{err}"
    );
    let new: Vec<_> = home
        .sessions()
        .into_iter()
        .filter(|p| p != &source)
        .collect();
    assert_eq!(json!(new.len()), recorded["files"]);
    let lines = jsonl(&new[0]);
    let mut header = lines[0].clone();
    header.as_object_mut().unwrap().remove("id");
    header.as_object_mut().unwrap().remove("timestamp");
    let mut want = recorded["header"].clone();
    want["parentSession"] = json!(source.to_str().unwrap());
    want["cwd"] = json!(home.project().to_str().unwrap());
    assert_eq!(header, want);
    assert_eq!(
        json!(lines[1..source_lines.len()] == source_lines[1..]),
        recorded["copied"]
    );
    let after: Vec<String> = lines[source_lines.len()..]
        .iter()
        .map(|l| {
            format!(
                "{}:{}",
                l["type"].as_str().unwrap(),
                l["message"]["role"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(json!(after), recorded["after"]);
    let body = mock.last_request().unwrap().body;
    let users: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| {
            m["content"]
                .as_str()
                .or_else(|| m["content"][0]["text"].as_str())
                .unwrap()
        })
        .collect();
    assert_eq!(json!(users), recorded["requestUserTexts"]);
}

#[tokio::test]
async fn skill_and_template_flags_reach_the_model_as_pi_073() {
    let pi = fixture("flags-more.json");
    let cases = [
        "skills default",
        "skill path",
        "skill file",
        "-ns",
        "-ns skill path",
        "template default",
        "template path",
        "-np",
        "-np template path",
        "skill command",
    ];
    for case in cases {
        let recorded = &pi[format!("prompt {case}")];
        let mock = MockProvider::start(vec![Turn::text("ok")]).await;
        let home = Home::new(&mock);
        let agent = home.path().join(".filo/agent");
        let write = |path: &Path, text: &str| {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(
            &agent.join("skills/tidy/SKILL.md"),
            "---\nname: tidy\ndescription: Tidy a file & keep <its> \"style\".\n---\nTidy steps.\n",
        );
        write(
            &home.path().join("extra/lint/SKILL.md"),
            "---\nname: lint\ndescription: Lint the project.\n---\nLint steps.\n",
        );
        write(
            &agent.join("prompts/review.md"),
            "---\ndescription: Review a file\n---\nReview $1 carefully, then $@.\n",
        );
        write(
            &home.path().join("extra/explain.md"),
            "Explain $ARGUMENTS in one line.\n",
        );
        let root = home.path().to_str().unwrap();
        let mut args = vec![
            "--provider".to_owned(),
            "mock".into(),
            "--model".into(),
            "mock-model".into(),
            "-p".into(),
            "--no-session".into(),
            "--no-dag".into(),
        ];
        args.extend(
            recorded["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap().replace("<TMP>", root)),
        );
        args.push(recorded["prompt"].as_str().unwrap().to_owned());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, _, err) = home.filo(&args).await;
        assert_eq!(
            code as i64,
            recorded["code"].as_i64().unwrap(),
            "{case}: {err}"
        );
        let body = mock.last_request().unwrap().body;
        let system = body["messages"][0]["content"].as_str().unwrap_or_default();
        let skills = system.find("\n\nThe following skills").map(|start| {
            let end = system.find("</available_skills>").unwrap() + "</available_skills>".len();
            filo_text(&home, &system[start..end])
        });
        assert_eq!(
            skills,
            recorded["skills"]
                .as_str()
                .map(|_| pi_text(&recorded["skills"])),
            "{case}"
        );
        let user = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .rfind(|m| m["role"] == "user")
            .unwrap()["content"]
            .clone();
        let user: Value = serde_json::from_str(&filo_text(&home, &user.to_string())).unwrap();
        let want: Value = serde_json::from_str(
            &recorded["user"]
                .to_string()
                .replace("<TMP>/home/agent", "<AGENT>"),
        )
        .unwrap();
        assert_eq!(user, want, "{case}");
    }
}

#[tokio::test]
async fn session_dir_flag_environment_and_setting_as_pi_073() {
    let pi = fixture("flags-more.json");
    for case in [
        "flag",
        "env",
        "setting",
        "flag over env and setting",
        "env over setting",
    ] {
        let recorded = &pi[format!("session-dir {case}")];
        let mock = MockProvider::start(vec![Turn::text("ok")]).await;
        let home = Home::new(&mock);
        let root = home.path().to_str().unwrap().to_owned();
        let here = |v: &Value| v.as_str().unwrap().replace("<TMP>", &root);
        if let Some(dir) = recorded["setting"].as_str() {
            home.write_settings(&json!({"sessionDir": dir.replace("<TMP>", &root)}));
        }
        // filo's name for pi's PI_CODING_AGENT_SESSION_DIR.
        let env: Vec<(&str, String)> = recorded["env"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| ("FILO_SESSION_DIR", here(v)))
            .collect();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let mut args: Vec<String> = recorded["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(here)
            .collect();
        args.extend(["--provider", "mock", "--model", "mock-model", "-p", "hi"].map(String::from));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, _, err) = home.filo_with_env(&args, &env).await;
        assert_eq!(
            code as i64,
            recorded["code"].as_i64().unwrap(),
            "{case}: {err}"
        );
        let mut landed = serde_json::Map::new();
        for entry in std::fs::read_dir(home.path()).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.starts_with("sd-") {
                continue;
            }
            let files: Vec<String> = std::fs::read_dir(entry.path())
                .unwrap()
                .flatten()
                .map(|f| {
                    let is_session = f.file_type().unwrap().is_file()
                        && f.file_name().to_string_lossy().ends_with(".jsonl");
                    if is_session {
                        "<session>.jsonl".to_owned()
                    } else {
                        f.file_name().to_string_lossy().into_owned()
                    }
                })
                .collect();
            landed.insert(name, json!(files));
        }
        assert_eq!(Value::Object(landed), recorded["landed"], "{case}");
        assert!(
            home.sessions().is_empty(),
            "{case}: nothing in the default dir"
        );
    }
}
