use serde_json::json;

use super::*;

fn u(
    input: Option<u64>,
    output: Option<u64>,
    cache_read: Option<u64>,
    cache_write: Option<u64>,
    total: Option<u64>,
) -> Usage {
    Usage {
        input,
        output,
        cache_read,
        cache_write,
        reasoning: None,
        total,
    }
}

#[test]
fn normalize_table() {
    // [OC-test] usage.test.ts normalizeUsage
    let cases = [
        (
            json!({"input": 1000, "output": 500, "cacheRead": 2000, "cacheWrite": 300}),
            Some(u(Some(1000), Some(500), Some(2000), Some(300), None)),
        ),
        (
            json!({"input_tokens": 1000, "output_tokens": 500, "cache_read_input_tokens": 2000, "cache_creation_input_tokens": 300}),
            Some(u(Some(1000), Some(500), Some(2000), Some(300), None)),
        ),
        (
            json!({"input": 1000, "cache_read": 1500, "cache_write": 200}),
            Some(u(Some(1000), None, Some(1500), Some(200), None)),
        ),
        (
            json!({"prompt_tokens": 30, "completion_tokens": 9, "total_tokens": 39, "cached_tokens": 19}),
            Some(u(Some(11), Some(9), Some(19), None, Some(39))),
        ),
        (
            json!({"prompt_tokens": 1113, "completion_tokens": 5, "total_tokens": 1118, "prompt_tokens_details": {"cached_tokens": 1024}}),
            Some(u(Some(89), Some(5), Some(1024), None, Some(1118))),
        ),
        (
            json!({"input": -4900, "output": 200, "cacheRead": 5000}),
            Some(u(Some(0), Some(200), Some(5000), None, None)),
        ),
        (
            json!({"prompt_tokens": -12, "completion_tokens": 4}),
            Some(u(Some(0), Some(4), None, None, None)),
        ),
        (json!(null), None),
        (json!({}), None),
        (json!("12"), None),
    ];
    for (raw, want) in cases {
        assert_eq!(normalize_usage(&raw), want, "{raw}");
    }
    // reasoning tokens (Responses and Chat Completions)
    let r = normalize_usage(&json!({"input_tokens": 120, "output_tokens": 30, "total_tokens": 250,
        "input_tokens_details": {"cached_tokens": 100}, "output_tokens_details": {"reasoning_tokens": 17}}))
    .unwrap();
    assert_eq!(
        r,
        Usage {
            reasoning: Some(17),
            ..u(Some(20), Some(30), Some(100), None, Some(250))
        }
    );
    let r = normalize_usage(
        &json!({"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150,
        "completion_tokens_details": {"reasoning_tokens": 11}}),
    )
    .unwrap();
    assert_eq!(
        r,
        Usage {
            reasoning: Some(11),
            ..u(Some(120), Some(30), None, None, Some(150))
        }
    );
}

#[test]
fn openai_chat_usage_table() {
    // [OC-test] toOpenAiChatCompletionsUsage
    let cases = [
        (
            normalize_usage(&json!({"output_tokens": 20, "total_tokens": 100})),
            json!({"prompt_tokens": 0, "completion_tokens": 20, "total_tokens": 100}),
        ),
        (
            Some(u(Some(30), Some(40), None, None, Some(50))),
            json!({"prompt_tokens": 30, "completion_tokens": 40, "total_tokens": 70}),
        ),
        (
            normalize_usage(&json!({"total_tokens": 42})),
            json!({"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 42}),
        ),
        (
            normalize_usage(
                &json!({"prompt_tokens": 10, "completion_tokens": 8, "completion_tokens_details": {"reasoning_tokens": 6}, "total_tokens": 18}),
            ),
            json!({"prompt_tokens": 10, "completion_tokens": 8, "completion_tokens_details": {"reasoning_tokens": 6}, "total_tokens": 18}),
        ),
        (
            None,
            json!({"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}),
        ),
        (
            Some(u(Some(10), Some(5), None, Some(100), Some(200))),
            json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 200}),
        ),
        (
            Some(u(Some(594), Some(79), Some(30848), Some(0), Some(31521))),
            json!({"prompt_tokens": 31442, "completion_tokens": 79, "total_tokens": 31521, "prompt_tokens_details": {"cached_tokens": 30848}}),
        ),
        (
            Some(u(Some(1000), Some(50), Some(0), Some(0), Some(1050))),
            json!({"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050}),
        ),
    ];
    for (usage, want) in cases {
        assert_eq!(
            Usage::to_openai_chat_usage(usage.as_ref()),
            want,
            "{usage:?}"
        );
    }
    // negative output clamps before the total is derived
    let neg = normalize_usage(&json!({"input": 3, "output": -5})).unwrap();
    assert_eq!(
        Usage::to_openai_chat_usage(Some(&neg)),
        json!({"prompt_tokens": 3, "completion_tokens": 0, "total_tokens": 3})
    );
    let neg = normalize_usage(&json!({"input": 3, "output": -5, "total": 7})).unwrap();
    assert_eq!(
        Usage::to_openai_chat_usage(Some(&neg)),
        json!({"prompt_tokens": 3, "completion_tokens": 0, "total_tokens": 7})
    );
}

#[test]
fn derivations() {
    for (usage, want) in [
        (u(None, None, Some(100), None, None), true),
        (u(None, None, None, Some(50), None), true),
        (u(None, None, Some(100), Some(50), None), true),
        (u(None, None, Some(0), Some(0), None), false),
        (Usage::default(), false),
    ] {
        assert_eq!(usage.has_nonzero(), want, "{usage:?}");
    }
    assert_eq!(
        u(Some(1000), None, Some(500), Some(200), None).prompt_tokens(),
        Some(1700)
    );
    assert_eq!(
        u(Some(1000), None, None, None, None).prompt_tokens(),
        Some(1000)
    );
    assert_eq!(Usage::default().prompt_tokens(), None);
    let last = u(Some(55_000), None, Some(25_000), Some(1_000), None);
    let acc = u(Some(75_000), Some(5_000), Some(25_000), None, Some(105_000));
    assert_eq!(
        context_prompt_tokens(Some(44_000), Some(&last), Some(&acc)),
        Some(44_000)
    );
    assert_eq!(
        context_prompt_tokens(None, Some(&last), Some(&acc)),
        Some(81_000)
    );
    assert_eq!(context_prompt_tokens(None, None, Some(&acc)), Some(100_000));
    let usage = u(Some(1000), None, Some(500), Some(200), None);
    assert_eq!(session_total_tokens(Some(&usage), None), Some(1700));
    assert_eq!(session_total_tokens(Some(&usage), Some(2500)), Some(2500));
    let close = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-6);
    assert!(close(throughput(Some(1000.0), Some(2000.0)), 500.0));
    assert!(close(throughput(Some(1.0), Some(0.001)), 1_000_000.0));
    for (t, ms) in [
        (Some(1000.0), Some(0.0)),
        (Some(1000.0), None),
        (None, Some(2000.0)),
        (Some(f64::NAN), Some(2000.0)),
        (Some(1000.0), Some(f64::NAN)),
    ] {
        assert_eq!(throughput(t, ms), None, "{t:?} {ms:?}");
    }
}

#[test]
fn run_usage_sums_but_keeps_the_last_total() {
    // [spec-derived] two calls reporting totals 1 000 and 1 200 → total 1 200, input/output summed.
    let mut run = RunUsage::default();
    assert_eq!(run.totals(), None);
    run.add_call(&u(Some(600), Some(400), None, None, Some(1_000)), 0.01);
    run.add_call(
        &u(Some(900), Some(100), Some(150), Some(50), Some(1_200)),
        0.02,
    );
    let t = run.totals().unwrap();
    assert_eq!(
        (t.input, t.output, t.cache_read, t.cache_write, t.total),
        (Some(1_500), Some(500), Some(150), Some(50), Some(1_200))
    );
    assert!((run.cost_usd - 0.03).abs() < 1e-12);
    assert_eq!(run.prompt_tokens(), Some(1_100));
    assert_eq!(run.calls(), 2);
    // a call without a reported total falls back to the running sum
    run.add_call(&u(Some(10), Some(5), None, None, None), f64::NAN);
    assert_eq!(run.total, 1_500 + 10 + 500 + 5 + 150 + 50);
    assert!(
        (run.cost_usd - 0.03).abs() < 1e-12,
        "non-finite cost ignored"
    );
    assert_eq!(run.last_call, Some(u(Some(10), Some(5), None, None, None)));
}
