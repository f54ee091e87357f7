use super::*;

fn queue(items: &[&str], cap: usize, drop: DropPolicy) -> FollowupQueue<String> {
    let mut q = FollowupQueue::new(QueueSettings {
        cap,
        drop,
        ..QueueSettings::default()
    });
    for i in items {
        q.push((*i).to_owned(), false);
    }
    q
}

fn names(q: &FollowupQueue<String>) -> Vec<&str> {
    q.items.iter().map(|i| i.item.as_str()).collect()
}

#[test]
fn modes_and_policies_parse_like_openclaw() {
    assert_eq!(QueueMode::parse(" Abort "), Some(QueueMode::Interrupt));
    assert_eq!(QueueMode::parse("steering"), Some(QueueMode::Steer));
    assert_eq!(QueueMode::parse("follow-ups"), Some(QueueMode::Followup));
    assert_eq!(QueueMode::parse("coalesce"), Some(QueueMode::Collect));
    assert_eq!(QueueMode::parse("queue"), None);
    assert_eq!(QueueMode::default(), QueueMode::Collect);
    assert_eq!(DropPolicy::parse("oldest"), Some(DropPolicy::Old));
    assert_eq!(DropPolicy::parse("newest"), Some(DropPolicy::New));
    assert_eq!(DropPolicy::parse("summary"), Some(DropPolicy::Summarize));
}

#[test]
fn runtime_settings_are_normalised_and_missing_ones_kept() {
    let mut s = QueueSettings {
        mode: QueueMode::Followup,
        ..QueueSettings::default()
    };
    s.apply(
        QueueMode::Collect,
        Some(-12.0),
        Some(9.8),
        Some(DropPolicy::New),
    );
    assert_eq!(
        s,
        QueueSettings {
            mode: QueueMode::Collect,
            debounce_ms: 0,
            cap: 9,
            drop: DropPolicy::New
        }
    );
    let mut s = QueueSettings {
        mode: QueueMode::Followup,
        ..QueueSettings::default()
    };
    s.apply(QueueMode::Steer, None, Some(0.0), None);
    assert_eq!(
        s,
        QueueSettings {
            mode: QueueMode::Steer,
            ..QueueSettings::default()
        }
    );
}

#[test]
fn summary_elisions_keep_order_at_every_limit() {
    let cases: [(Option<f64>, &[&str], &[&str]); 9] = [
        (None, &["new"], &["first", "second"]),
        (Some(1.5), &["new"], &["first", "second"]),
        (
            Some(1.0 - f64::EPSILON / 2.0),
            &[],
            &["first", "second", "new"],
        ),
        (Some(2.0), &["second", "new"], &["first"]),
        (Some(0.0), &[], &["first", "second", "new"]),
        (Some(-1.0), &[], &["first", "second", "new"]),
        (Some(f64::NEG_INFINITY), &[], &["first", "second", "new"]),
        (Some(f64::INFINITY), &["first", "second", "new"], &[]),
        (Some(f64::NAN), &["first", "second", "new"], &[]),
    ];
    for (limit, retained, elided) in cases {
        let mut q = queue(&["new"], 1, DropPolicy::Summarize);
        q.dropped_count = 2;
        q.summary_lines = vec!["first".into(), "second".into()];
        let a = q.admit(Clone::clone, limit);
        assert!(a.admitted);
        assert_eq!(a.dropped, vec!["new".to_owned()], "{limit:?}");
        assert!(q.items.is_empty());
        assert_eq!(q.dropped_count, 3);
        assert_eq!(q.summary_lines, retained, "{limit:?}");
        assert_eq!(a.elided, elided, "{limit:?}");
    }
}

#[test]
fn the_summary_prompt_renders_without_clearing() {
    let mut q = queue(&[], 1, DropPolicy::Summarize);
    q.dropped_count = 2;
    q.summary_lines = vec!["first".into(), "second".into()];
    let p = q.summary_prompt("message").unwrap();
    assert_eq!(
        p,
        "[Queue overflow] Dropped 2 messages due to cap.\nSummary:\n- first\n- second"
    );
    assert_eq!(q.dropped_count, 2);
    q.dropped_count = 1;
    assert!(
        q.summary_prompt("message")
            .unwrap()
            .starts_with("[Queue overflow] Dropped 1 message due to cap.")
    );
    q.dropped_count = 0;
    assert_eq!(q.summary_prompt("message"), None);
}

#[test]
fn summary_lines_never_cut_through_a_character() {
    let mut q = queue(
        &[&format!("{}😀tail", "a".repeat(158))],
        1,
        DropPolicy::Summarize,
    );
    q.admit(Clone::clone, None);
    assert_eq!(q.summary_lines, vec![format!("{}…", "a".repeat(158))]);
    assert_eq!(summary_line("  spaced \n\t out  ", 160), "spaced out");
}

#[test]
fn in_flight_and_protected_items_are_never_victims() {
    let mut q = queue(&["m1", "m2", "m3", "m4"], 2, DropPolicy::Old);
    let first = q.items[0].id;
    q.in_flight.insert(first);
    let a = q.admit(Clone::clone, None);
    assert_eq!(a.dropped, vec!["m2".to_owned(), "m3".to_owned()]);
    assert_eq!(names(&q), ["m1", "m4"]);

    let mut q = FollowupQueue::new(QueueSettings {
        cap: 3,
        drop: DropPolicy::Old,
        ..QueueSettings::default()
    });
    q.push("priority".to_owned(), true);
    for n in ["a", "b", "c"] {
        q.push(n.to_owned(), false);
    }
    let a = q.admit(Clone::clone, None);
    assert!(a.admitted);
    assert_eq!(a.dropped, vec!["a".to_owned(), "b".to_owned()]);
    assert_eq!(names(&q), ["priority", "c"]);

    // Only protected or in-flight work left: the newcomer is refused and nothing changes.
    let mut q = FollowupQueue::new(QueueSettings {
        cap: 1,
        drop: DropPolicy::Old,
        ..QueueSettings::default()
    });
    let active = q.push("active".to_owned(), false);
    q.push("priority".to_owned(), true);
    q.in_flight.insert(active);
    let a = q.admit(Clone::clone, None);
    assert!(!a.admitted && a.dropped.is_empty());
    assert_eq!(names(&q), ["active", "priority"]);
    // `new` refuses the newcomer.
    let mut q = queue(&["x"], 1, DropPolicy::New);
    assert!(!q.admit(Clone::clone, None).admitted);
}

#[test]
fn overflow_survivors_are_delivered_in_order_while_one_is_in_flight() {
    let mut q = queue(&["m1"], 3, DropPolicy::Summarize);
    let mut delivered = Vec::new();
    let mut dropped = Vec::new();
    let first = q.begin_next().unwrap();
    delivered.push(first.item.clone());
    for i in 2..=8 {
        let a = q.admit(Clone::clone, None);
        dropped.extend(a.dropped);
        if a.admitted {
            q.push(format!("m{i}"), false);
        }
    }
    q.finish(first.id, true);
    while let Some(next) = q.begin_next() {
        delivered.push(next.item.clone());
        q.finish(next.id, true);
    }
    assert_eq!(delivered, ["m1", "m6", "m7", "m8"]);
    assert_eq!(dropped, ["m2", "m3", "m4", "m5"]);
    assert!(q.items.is_empty() && q.in_flight.is_empty());
}

#[test]
fn a_failed_delivery_stays_queued_for_the_next_drain() {
    let mut q = queue(&["retry-me", "after"], 20, DropPolicy::Summarize);
    let next = q.begin_next().unwrap();
    assert!(
        q.begin_next().is_some_and(|n| n.item == "after"),
        "the in-flight one is skipped"
    );
    q.finish(next.id, false);
    assert_eq!(names(&q), ["retry-me", "after"]);
    assert!(q.in_flight.len() == 1);
}

#[test]
fn the_collect_prompt_and_cross_channel_routes() {
    let p = collect_prompt(
        &["first msg", "second msg"],
        Some("[Queue overflow] Dropped 1 message due to cap."),
    );
    assert_eq!(
        p,
        "[Queued messages while agent was busy]\n\n[Queue overflow] Dropped 1 message due to cap.\n\n---\nQueued #1\nfirst msg\n\n---\nQueued #2\nsecond msg"
    );
    assert!(!has_cross_channel([
        (None, false),
        (Some("slack:channel:A"), false),
        (Some("slack:channel:A"), false)
    ]));
    assert!(has_cross_channel([
        (Some("slack:channel:A"), false),
        (Some("slack:channel:B"), false)
    ]));
    assert!(has_cross_channel([
        (Some("slack:channel:A"), false),
        (None, true)
    ]));
}
