//! Resume from the DAG (playfilo spec §5.2, with the fixes of §10.3 #12–19): the session's
//! lineage comes from the DAG head, so a context changed by time travel is what resumes.

use filo_dag::short_id;
use filo_session::{EntryKind, SessionEntry, SessionManager};

use super::{Shared, lock};

fn same_kind(a: &SessionEntry, b: &SessionEntry) -> bool {
    a.kind.type_name() == b.kind.type_name()
        && match (&a.kind, &b.kind) {
            (EntryKind::Message(x), EntryKind::Message(y)) => x.role() == y.role(),
            _ => true,
        }
}

/// The session entries of lineage lines read back from the DAG (the lines it cannot read as
/// entries are left out, as they were when read through `Value`s): each line deserialized
/// straight into its typed entry, no JSON tree per entry.
pub(crate) fn entries_of(lines: &filo_dag::EntryLines) -> Vec<SessionEntry> {
    lines.iter().filter_map(entry_of_line).collect()
}

/// One lineage line as an entry; a line with a `type` and an `id` that filo cannot read is kept
/// as it is (see [`SessionEntry::opaque`]), so it never cuts the lineage below it.
fn entry_of_line(line: &str) -> Option<SessionEntry> {
    SessionEntry::from_line(line).ok().or_else(|| {
        serde_json::from_str::<serde_json::Value>(line)
            .ok()
            .and_then(|v| SessionEntry::opaque(&v))
    })
}

/// The node to resume from: the session's own head when the DB has it, else the last entry of the
/// file that was mirrored (scanning backwards past entries the DAG skipped).
///
/// `agrees` is true when the session's own head is the file's leaf: filo writes every jump into
/// the file too (the carryover, and the leaf moved onto it), so the file's path *is* the DAG
/// lineage and need not be read back. Sessions written by the reference (one global `PI_HEAD`,
/// carryovers only in the DAG) never take that path.
fn resume_target(
    shared: &Shared,
    manager: &SessionManager,
) -> Result<Option<(String, bool)>, filo_dag::DagError> {
    let head_ref = lock(&shared.state).head_ref.clone();
    let store = shared.store();
    if let Some(h) = store.get_ref(&head_ref)? {
        let leaf_ext = store.node(&h)?.and_then(|n| n.external_id);
        let agrees = leaf_ext.is_some() && leaf_ext.as_deref() == manager.leaf_id();
        return Ok(Some((h, agrees)));
    }
    // One query for the whole backwards scan.
    let found = store.node_ids_by_external_ids(manager.entry_ids())?;
    Ok(manager
        .entry_ids()
        .rev()
        .find_map(|id| found.get(id).map(|node| (node.clone(), false))))
}

/// Rebuild the session tree from the DAG lineage. Returns notices for the user.
pub(crate) fn resume_from_dag(shared: &Shared, manager: &mut SessionManager) -> Vec<String> {
    shared.flush();
    if manager.is_empty() {
        return Vec::new();
    }
    let mut notices = Vec::new();
    match super::catchup::mirror_missing(shared, manager) {
        Ok(c) if c.mirrored > 0 => notices.push(format!(
            "Playfilo: {} entr{} of the session file had not reached the memory (the last run ended abruptly); mirrored now",
            c.mirrored,
            if c.mirrored == 1 { "y" } else { "ies" }
        )),
        Ok(_) => {}
        Err(e) => {
            lock(&shared.state).errors += 1;
            notices.push(format!(
                "Playfilo: entries of the session file that are not in the memory could not be mirrored ({e}); resumed from the session file"
            ));
            // The DAG lacks part of the file: it must not decide the lineage.
            return notices;
        }
    }
    let target = match resume_target(shared, manager) {
        Ok(Some((t, true))) => {
            // The file is the lineage: keep it, move the heads, log the boot.
            if let Some(leaf) = manager.leaf_id() {
                lock(&shared.state)
                    .nodes
                    .insert(leaf.to_string(), t.clone());
            }
            boot(shared, &t);
            return notices;
        }
        Ok(Some((t, false))) => t,
        Ok(None) => return notices,
        Err(e) => {
            shared.fail("finding the resume point", &e);
            notices.push(format!(
                "Playfilo: could not read the DAG ({e}); resumed from the session file"
            ));
            return notices;
        }
    };
    // Usually the DAG is only a little ahead of the file (a run killed after its entries were
    // mirrored, another agent's few turns): read back only what lies past the point where the
    // file's branch joins the lineage, not the whole lineage.
    match join_with_file(shared, manager, &target) {
        Ok(Some(join)) => return resume_past_join(shared, manager, &target, join, notices),
        Ok(None) => {}
        Err(e) => {
            shared.fail("finding where the file joins the lineage", &e);
        }
    }
    let lines = match shared.store().load_entry_lines(Some(&target)) {
        Ok(l) => l,
        Err(e) => {
            shared.fail("loading the lineage", &e);
            notices.push(format!(
                "Playfilo: could not load the lineage ({e}); resumed from the session file"
            ));
            return notices;
        }
    };
    let mut dag = entries_of(&lines);
    // Boot inheritance stops at this session's first entry when the lineage still passes it.
    if let Some(first) = manager.entry_ids().next().map(str::to_string)
        && let Some(k) = dag.iter().position(|e| e.id == first)
    {
        dag.drain(..k);
        if let Some(e) = dag.first_mut() {
            e.parent_id = None;
        }
    }
    // The file's copy keeps usage, signatures and stop reasons; the DAG decides the lineage.
    for e in &mut dag {
        if let Some(f) = manager.entry(&e.id).filter(|f| same_kind(f, e)) {
            let parent = e.parent_id.take();
            *e = f.clone();
            e.parent_id = parent;
        }
    }
    // The DAG may start mid-history: a session resumed from a file it never saw mirrors only
    // what came after. The file supplies the path up to the first mirrored entry's parent.
    let unmirrored_parent = dag
        .first()
        .and_then(|first| manager.entry(&first.id))
        .and_then(|f| f.parent_id.clone())
        .filter(|p| manager.entry(p).is_some() && !dag.iter().any(|e| &e.id == p));
    if let Some(pid) = unmirrored_parent {
        let mut prefix: Vec<SessionEntry> = manager
            .branch_path(Some(&pid))
            .into_iter()
            .cloned()
            .collect();
        if let Some(first) = dag.first_mut() {
            first.parent_id = Some(pid);
        }
        prefix.append(&mut dag);
        dag = prefix;
    }
    let file_path: Vec<String> = manager
        .branch_ids(None)
        .into_iter()
        .map(str::to_string)
        .collect();
    let dag_path: Vec<String> = dag.iter().map(|e| e.id.clone()).collect();
    let leaf = dag.last().map(|e| e.id.clone());
    manager.merge_in_memory(dag);
    if let Some(l) = &leaf {
        let _ = manager.branch(l);
    }
    if let Some(l) = &leaf {
        lock(&shared.state).nodes.insert(l.clone(), target.clone());
    }
    boot(shared, &target);
    if file_path != dag_path {
        notices.push(format!(
            "Resumed from the Playfilo DAG at {}: the session file's history differs from the DAG lineage (time travel or another agent); the DAG wins.",
            short_id(&target)
        ));
    }
    notices
}

/// Where the file's current branch joins the DAG lineage of `target`.
struct Join {
    /// The lineage node of the file's entry `entry`.
    node: String,
    entry: String,
    /// Whether `entry` is the file's leaf (the DAG is only ahead) or earlier on its branch (the
    /// DAG went elsewhere after it).
    at_leaf: bool,
}

/// How far back from the DAG head the join with the file is looked for, in nodes (doubling from
/// the first), before the whole lineage is read instead.
const JOIN_FIRST: usize = 64;
const JOIN_MAX: usize = 4_096;

/// The nearest ancestor of `target` (itself included) that is the node of an entry on the file's
/// current branch, with that entry's parent's node as the node's parent — a lineage that, being
/// content-addressed, is below it exactly the file's path to that entry. `None` when none lies
/// within [`JOIN_MAX`] nodes of the head (or the file has no branch).
fn join_with_file(
    shared: &Shared,
    manager: &SessionManager,
    target: &str,
) -> Result<Option<Join>, filo_dag::DagError> {
    let branch = manager.branch_ids(None);
    if branch.is_empty() {
        return Ok(None);
    }
    let store = shared.store();
    let mut depth = JOIN_FIRST;
    loop {
        // The file's last `depth + 1` branch entries and the lineage's last `depth` nodes.
        let from = branch.len().saturating_sub(depth + 1);
        let window = &branch[from..];
        let position: std::collections::HashMap<&str, usize> = window
            .iter()
            .enumerate()
            .map(|(i, id)| (*id, from + i))
            .collect();
        let nodes = store.node_ids_by_external_ids(window.iter().copied())?;
        let lineage = store.lineage(target, Some(depth))?;
        for node in &lineage {
            let Some(ext) = node.external_id.as_deref() else {
                continue;
            };
            let Some(&at) = position.get(ext) else {
                continue;
            };
            if nodes.get(ext) != Some(&node.id) {
                continue;
            }
            // The parent link must be the file's too (a root joins only the file's root).
            let parent_ok = match (at.checked_sub(1).map(|p| branch[p]), &node.parent_id) {
                (None, None) => true,
                (Some(parent), Some(pid)) => nodes.get(parent) == Some(pid),
                _ => false,
            };
            if !parent_ok {
                continue;
            }
            return Ok(Some(Join {
                node: node.id.clone(),
                entry: ext.to_owned(),
                at_leaf: at + 1 == branch.len(),
            }));
        }
        if lineage.len() < depth || depth >= JOIN_MAX || depth >= branch.len() {
            return Ok(None);
        }
        depth *= 4;
    }
}

/// [`resume_from_dag`] past a [`Join`]: the file's path up to the join entry stays as it is,
/// the lineage after it is read back and becomes the branch.
fn resume_past_join(
    shared: &Shared,
    manager: &mut SessionManager,
    target: &str,
    join: Join,
    mut notices: Vec<String>,
) -> Vec<String> {
    let lines = match shared
        .store()
        .load_entry_lines_after(target, Some((&join.node, &join.entry)))
    {
        Ok(l) => l,
        Err(e) => {
            shared.fail("loading the lineage", &e);
            notices.push(format!(
                "Playfilo: could not load the lineage ({e}); resumed from the session file"
            ));
            return notices;
        }
    };
    let mut dag = entries_of(&lines);
    // The file's copy keeps usage, signatures and stop reasons; the DAG decides the lineage.
    for e in &mut dag {
        if let Some(f) = manager.entry(&e.id).filter(|f| same_kind(f, e)) {
            let parent = e.parent_id.take();
            *e = f.clone();
            e.parent_id = parent;
        }
    }
    let leaf = dag
        .last()
        .map_or_else(|| join.entry.clone(), |e| e.id.clone());
    let moved = !dag.is_empty() || !join.at_leaf;
    manager.merge_in_memory(dag);
    let _ = manager.branch(&leaf);
    lock(&shared.state)
        .nodes
        .insert(leaf.clone(), target.to_owned());
    boot(shared, target);
    if moved {
        notices.push(format!(
            "Resumed from the Playfilo DAG at {}: the session file's history differs from the DAG lineage (time travel or another agent); the DAG wins.",
            short_id(target)
        ));
    }
    notices
}

/// A resume: this session takes `PI_HEAD` (the user chose it) and its own head, and `BOOT` is
/// logged.
fn boot(shared: &Shared, target: &str) {
    {
        let current = shared.store().get_ref("PI_HEAD").ok().flatten();
        lock(&shared.state).pi_head_seen = current;
    }
    shared.move_heads(target);
    shared.log(filo_dag::action_type::BOOT, None, Some(target), None);
}

#[cfg(test)]
mod tests {
    use filo_dag::{Parent, Store, golden};
    use filo_session::SessionEntry;

    use super::entries_of;
    use crate::extension::{EntryContext, SessionInfo};
    use crate::playfilo::entry_commit;

    /// pi 1.6's system entries, its context edit and its compaction with a checkpoint, mirrored
    /// as filo mirrors them, come back from the lineage as the same entries, each under the
    /// one before: none of them cuts the lineage (they used to be dropped, and the entries
    /// under them with them). A line of an unknown role is kept too.
    #[test]
    fn pi_16_system_and_context_edit_entries_never_cut_the_lineage() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../filo-cli/tests/fixtures/pi-1.6.0");
        let ctx = EntryContext {
            session: SessionInfo {
                session_id: "s".into(),
                session_file: None,
                cwd: "/".into(),
            },
            model: None,
            thinking_level: filo_ai::ThinkingLevel::default(),
            system_prompt: String::new(),
            tools: Vec::new(),
        };
        for wire in ["openai", "anthropic"] {
            let store = Store::open_in_memory().unwrap();
            let text =
                std::fs::read_to_string(dir.join(format!("session16-{wire}.jsonl"))).unwrap();
            let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
            // A message of a role no version knows, spliced in after the first system entry.
            let sys = lines
                .iter()
                .position(|l| l.contains(r#""role":"system""#))
                .unwrap();
            let sys_id = SessionEntry::from_line(&lines[sys]).unwrap().id;
            let next = &lines[sys + 1];
            let planted = format!(
                r#"{{"type":"message","id":"future01","parentId":"{sys_id}","timestamp":"t","message":{{"role":"future-role","content":"x","timestamp":1}}}}"#
            );
            lines[sys + 1] = next.replace(
                &format!(r#""parentId":"{sys_id}""#),
                r#""parentId":"future01""#,
            );
            lines.insert(sys + 1, planted);
            let dirt = tempfile::tempdir().unwrap();
            let path = dirt.path().join("s.jsonl");
            std::fs::write(&path, lines.join("\n") + "\n").unwrap();
            let file = filo_session::file::read_session_file(&path).unwrap();
            assert_eq!(
                file.entries.len(),
                lines.len() - 1,
                "{wire}: {:?}",
                file.warnings
            );
            let mut parent: Option<String> = None;
            for (i, entry) in file.entries.iter().enumerate() {
                let mut c =
                    entry_commit(entry, &ctx, parent.as_deref(), 1_796_000_000_000 + i as i64);
                if parent.is_none() {
                    c = c.parent(Parent::Root);
                }
                parent = Some(store.commit_node(&c).unwrap().id);
            }
            let got = entries_of(&store.load_entry_lines(parent.as_deref()).unwrap());
            let ids = |es: &[SessionEntry]| es.iter().map(|e| e.id.clone()).collect::<Vec<_>>();
            assert_eq!(ids(&got), ids(&file.entries), "{wire}: the whole lineage");
            for (g, f) in got.iter().zip(&file.entries) {
                assert_eq!(g.kind.type_name(), f.kind.type_name(), "{wire}: {}", f.id);
            }
            for pair in got.windows(2) {
                assert_eq!(
                    pair[1].parent_id.as_deref(),
                    Some(pair[0].id.as_str()),
                    "{wire}"
                );
            }
        }
    }

    /// The entries the resume reads from the lineage's lines are the ones it read from the
    /// lineage's `Value`s: on every entry of pi's session fixtures mirrored into a DAG as filo
    /// mirrors them (with a model, so assistants carry their config), and on the reference's
    /// golden database.
    #[test]
    fn the_lines_give_the_entries_the_values_gave() {
        let store = Store::open_in_memory().unwrap();
        golden::build(&store).unwrap();
        let mut heads = vec![golden::ids::ROW12.to_string()];
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../filo-cli/tests/fixtures/pi073");
        let ctx = EntryContext {
            session: SessionInfo {
                session_id: "s".into(),
                session_file: None,
                cwd: "/".into(),
            },
            model: serde_json::from_value(serde_json::json!({
                "id": "m\"😀", "name": "m", "api": "anthropic-messages", "provider": "é\n",
                "baseUrl": "http://127.0.0.1:1"
            }))
            .ok(),
            thinking_level: filo_ai::ThinkingLevel::default(),
            system_prompt: "prompt".into(),
            tools: vec![("read".into(), "Read a file".into())],
        };
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        files.sort();
        let mut total = 0;
        for path in files {
            let file = filo_session::file::read_session_file(&path).unwrap();
            let mut parent: Option<String> = None;
            for (i, entry) in file.entries.iter().enumerate() {
                let mut c =
                    entry_commit(entry, &ctx, parent.as_deref(), 1_767_258_000_000 + i as i64);
                if parent.is_none() {
                    c = c.parent(Parent::Root);
                }
                parent = Some(store.commit_node(&c).unwrap().id);
            }
            heads.extend(parent);
            total += file.entries.len();
        }
        assert!(total > 50, "{total} entries mirrored");
        let mut compared = 0;
        for head in &heads {
            let values = store.load_entries(Some(head)).unwrap();
            let want: Vec<SessionEntry> = values
                .iter()
                .filter_map(|v| {
                    SessionEntry::from_value(v)
                        .ok()
                        .or_else(|| SessionEntry::opaque(v))
                })
                .collect();
            let got = entries_of(&store.load_entry_lines(Some(head)).unwrap());
            assert_eq!(got, want, "lineage of {head}");
            compared += got.len();
        }
        assert!(compared > 50, "{compared} entries compared");
    }
}
