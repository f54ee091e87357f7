#![allow(clippy::unwrap_used, clippy::print_stdout)]
use std::time::Instant;
use filo_dag::{Expect, NewBlob, NodeCommit, Parent, Store, role};
use filo_dag::render::{LifeOptions, life};

fn c(i: usize) -> NodeCommit {
    NodeCommit::new(if i % 2 == 0 { role::USER } else { role::ASSISTANT }, 1_767_258_000_000 + i as i64)
        .external_id(format!("{:08x}", i)).system_prompt("You are Filo.")
        .part(NewBlob::text(format!("message number {i}: some text of a realistic length here")))
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("x.db")).unwrap();
    let t = Instant::now();
    let mut last = String::new();
    for b in 0..20 {
        let commits: Vec<NodeCommit> = (b*1000..(b+1)*1000).map(|i| c(i).parent(if i % 1000 == 0 { Parent::Ref("PI_HEAD".into()) } else { Parent::Previous }).move_ref("PI_HEAD", Expect::Any)).collect();
        last = store.commit_batch(&commits).unwrap().last().unwrap().id.clone();
    }
    println!("commit 20k: {:?}", t.elapsed());
    let t = Instant::now();
    let l = store.lineage(&last, None).unwrap();
    println!("lineage 20k: {:?} {}", t.elapsed(), l.len());
    let t = Instant::now();
    let b = store.blobs(l.iter().flat_map(|n| &n.parts)).unwrap();
    println!("blobs: {:?} {}", t.elapsed(), b.len());
    let t = Instant::now();
    let e = store.load_entries(Some(&last)).unwrap();
    println!("load_entries: {:?} {}", t.elapsed(), e.len());
    // life with 1000 siblings
    let parent = l[100].id.clone();
    let mut focus = String::new();
    for s in 0..1000 {
        let mut batch = vec![c(100_000 + s * 10).parent(Parent::Node(parent.clone()))];
        for k in 1..4 { batch.push(c(100_000 + s * 10 + k).parent(Parent::Previous)); }
        let done = store.commit_batch(&batch).unwrap();
        if s == 500 { focus = done[0].id.clone(); }
    }
    let t = Instant::now();
    let counts = store.descendant_counts(&parent).unwrap();
    println!("counts: {:?} {}", t.elapsed(), counts.len());
    let t = Instant::now();
    let kids = store.children(&parent).unwrap();
    println!("children: {:?} {}", t.elapsed(), kids.len());
    let t = Instant::now();
    let b = store.blobs(kids.iter().flat_map(|n| &n.parts)).unwrap();
    println!("kid blobs: {:?} {}", t.elapsed(), b.len());
    let t = Instant::now();
    let out = life(&store, &LifeOptions { focus: Some(focus.clone()), ..LifeOptions::default() }, 0).unwrap();
    println!("life: {:?} {}", t.elapsed(), out.lines().count());
}
