use filo_session::{SessionError, SessionManager};

use super::{assistant, user};

#[test]
fn appends_chain_and_move_the_leaf() {
    let mut s = SessionManager::in_memory("/p");
    let a = s.append_message(user("a")).unwrap();
    let b = s.append_thinking_level_change("low").unwrap();
    let c = s.append_message(assistant("c")).unwrap();
    assert_eq!(s.entry(&a).unwrap().parent_id, None);
    assert_eq!(s.entry(&b).unwrap().parent_id.as_deref(), Some(a.as_str()));
    assert_eq!(s.entry(&c).unwrap().parent_id.as_deref(), Some(b.as_str()));
    assert_eq!(s.leaf_id(), Some(c.as_str()));
    let path: Vec<_> = s.branch_path(None).iter().map(|e| e.id.clone()).collect();
    assert_eq!(path, [a.clone(), b, c]);
    assert!(matches!(
        s.branch("missing"),
        Err(SessionError::EntryNotFound(_))
    ));
    assert_eq!(
        SessionError::EntryNotFound("x".into()).to_string(),
        "Entry x not found"
    );
    s.reset_leaf();
    let root2 = s.append_message(user("new root")).unwrap();
    assert_eq!(s.entry(&root2).unwrap().parent_id, None);
    assert_eq!(s.roots().len(), 2);
    assert_eq!(s.children(&a).len(), 1);
}

#[test]
fn labels_last_wins_and_clear() {
    let mut s = SessionManager::in_memory("/p");
    let a = s.append_message(user("a")).unwrap();
    s.append_label_change(&a, Some("one")).unwrap();
    s.append_label_change(&a, Some("two")).unwrap();
    assert_eq!(s.label(&a), Some("two"));
    s.append_label_change(&a, None).unwrap();
    assert_eq!(s.label(&a), None);
    assert!(s.append_label_change("zzz", Some("x")).is_err());
}

#[test]
fn branched_session_keeps_path_and_on_path_labels() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = SessionManager::create("/p", dir.path());
    let a = s.append_message(user("a")).unwrap();
    let b = s.append_message(assistant("b")).unwrap();
    s.append_label_change(&a, Some("start")).unwrap();
    s.append_message(user("off path")).unwrap();
    let old_file = s.session_file().unwrap().to_path_buf();
    s.create_branched_session(&b).unwrap();
    assert_ne!(s.session_file().unwrap(), old_file);
    assert_eq!(
        s.header().parent_session.as_deref(),
        Some(old_file.to_str().unwrap())
    );
    assert_eq!(s.label(&a), Some("start"));
    assert_eq!(s.entries().len(), 3); // a, b, new label
    assert!(s.is_persisted());
    let reopened = SessionManager::open(s.session_file().unwrap(), "/x").unwrap();
    assert_eq!(reopened.entries().len(), 3);
}
