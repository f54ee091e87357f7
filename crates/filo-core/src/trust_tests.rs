use super::*;

fn setup() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let root = canonical(t.path());
    let home = root.join("home");
    let proj = root.join("work").join("proj");
    fs::create_dir_all(&home).unwrap();
    fs::create_dir_all(&proj).unwrap();
    (t, root, home, proj)
}

fn query<'a>(cwd: &'a Path, home: &'a Path) -> TrustQuery<'a> {
    TrustQuery {
        cwd,
        home,
        command_line: None,
        default: DefaultProjectTrust::Ask,
        can_prompt: false,
    }
}

#[test]
fn protected_resources_are_pis_list_and_a_bare_pi_folder_is_not_one() {
    let (_t, root, home, proj) = setup();
    fs::create_dir_all(proj.join(".pi")).unwrap();
    assert!(protected_resources(&proj, &home).is_empty());
    fs::write(proj.join(".pi/settings.json"), "{}").unwrap();
    fs::create_dir_all(proj.join(".filo/skills")).unwrap();
    fs::create_dir_all(root.join("work/.agents/skills")).unwrap();
    // The user's own ~/.agents/skills is not a project resource.
    fs::create_dir_all(home.join(".agents/skills")).unwrap();
    assert_eq!(
        protected_resources(&proj, &home),
        [
            PathBuf::from(".pi/settings.json"),
            PathBuf::from(".filo/skills"),
            PathBuf::from("../.agents/skills"),
        ]
    );
    assert!(protected_resources(&home, &home).is_empty());
}

#[test]
fn decision_order_is_command_line_then_closest_saved_then_default() {
    let (_t, root, home, proj) = setup();
    fs::create_dir_all(proj.join(".pi/prompts")).unwrap();
    let store = TrustStore::new(&root.join("filo"), Some(&root.join("pi")));
    let undecided = |trusted, source| Resolution::Decided { trusted, source };
    assert_eq!(
        resolve(&store, &query(&proj, &home)).0,
        undecided(false, TrustSource::Default(DefaultProjectTrust::Ask))
    );
    let can_prompt = TrustQuery {
        can_prompt: true,
        ..query(&proj, &home)
    };
    assert_eq!(resolve(&store, &can_prompt).0, Resolution::Ask);
    let always = TrustQuery {
        default: DefaultProjectTrust::Always,
        ..query(&proj, &home)
    };
    assert_eq!(
        resolve(&store, &always).0,
        undecided(true, TrustSource::Default(DefaultProjectTrust::Always))
    );
    // A parent's decision applies; the folder's own wins over it.
    store.set(&root.join("work"), true).unwrap();
    let saved = |path: &Path, trusted| SavedDecision {
        path: path.to_path_buf(),
        trusted,
        from_pi: false,
    };
    assert_eq!(
        resolve(&store, &query(&proj, &home)).0,
        undecided(true, TrustSource::Saved(saved(&root.join("work"), true)))
    );
    store.set(&proj, false).unwrap();
    assert_eq!(
        resolve(&store, &always).0,
        undecided(false, TrustSource::Saved(saved(&proj, false)))
    );
    let approve = TrustQuery {
        command_line: Some(true),
        ..query(&proj, &home)
    };
    assert_eq!(
        resolve(&store, &approve).0,
        undecided(true, TrustSource::CommandLine)
    );
    // Nothing protected: trusted, unless a decision says otherwise.
    let plain = root.join("plain");
    fs::create_dir_all(&plain).unwrap();
    assert_eq!(
        resolve(&store, &query(&plain, &home)).0,
        undecided(true, TrustSource::NothingProtected)
    );
}

#[test]
fn the_file_is_written_as_pi_writes_it_and_pis_is_read_as_the_fallback() {
    let (_t, root, _home, proj) = setup();
    let pi = root.join("pi");
    fs::create_dir_all(&pi).unwrap();
    fs::write(
        pi.join("trust.json"),
        format!("{{\n  \"{}\": true\n}}\n", proj.display()),
    )
    .unwrap();
    let store = TrustStore::new(&root.join("filo"), Some(&pi));
    let got = store.get(&proj).unwrap().unwrap();
    assert!(got.trusted && got.from_pi);
    // "Trust parent folder": the parent saved, the folder's own decision forgotten.
    let options = trust_options(&proj, true);
    let labels: Vec<&str> = options.iter().map(|o| o.label.as_str()).collect();
    assert_eq!(labels.len(), 5, "{labels:?}");
    store.set(&proj, false).unwrap();
    store.set(&root.join("b"), true).unwrap();
    store.set_many(&options[1].updates).unwrap();
    let text = fs::read_to_string(root.join("filo/trust.json")).unwrap();
    assert_eq!(
        text,
        format!(
            "{{\n  \"{}\": true,\n  \"{}\": true\n}}\n",
            root.join("b").display(),
            root.join("work").display()
        )
    );
    assert!(!root.join("filo/trust.json.lock").exists());
    // pi's file is never written.
    assert_eq!(
        fs::read_to_string(pi.join("trust.json")).unwrap(),
        format!("{{\n  \"{}\": true\n}}\n", proj.display())
    );
}

#[test]
fn a_damaged_file_is_reported_and_never_overwritten() {
    let (_t, root, home, proj) = setup();
    fs::create_dir_all(proj.join(".pi/skills")).unwrap();
    let filo = root.join("filo");
    fs::create_dir_all(&filo).unwrap();
    fs::write(filo.join("trust.json"), "{\"/x\": \"yes\"}").unwrap();
    let store = TrustStore::new(&filo, None);
    let (resolution, error) = resolve(&store, &query(&proj, &home));
    assert_eq!(
        resolution,
        Resolution::Decided {
            trusted: false,
            source: TrustSource::Default(DefaultProjectTrust::Ask)
        }
    );
    assert!(
        error
            .unwrap()
            .to_string()
            .contains("must be true, false, or null")
    );
    assert!(store.set(&proj, true).is_err());
    assert_eq!(
        fs::read_to_string(filo.join("trust.json")).unwrap(),
        "{\"/x\": \"yes\"}"
    );
}

#[test]
fn the_notice_names_what_was_skipped() {
    let (_t, _root, home, proj) = setup();
    assert_eq!(skipped_notice(&proj, &home), None);
    fs::create_dir_all(proj.join(".pi")).unwrap();
    fs::write(proj.join(".pi/settings.json"), "{}").unwrap();
    fs::write(proj.join(".pi/SYSTEM.md"), "x").unwrap();
    assert_eq!(
        skipped_notice(&proj, &home).unwrap(),
        "project not trusted: skipped .pi/settings.json, .pi/SYSTEM.md (run with --approve, or save a decision with /trust)"
    );
}
