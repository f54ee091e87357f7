//! The bundled catalog is generated from pi's (`scripts/catalog/generate.mjs`): the script,
//! run on a trimmed snapshot of pi 1.6.0's catalog kept in the repository
//! (`scripts/catalog/fixture/pi-snapshot.json`, two models per provider), produces records that
//! are in `data/catalog.json` exactly, in the same order. A hand edit of the catalog, or a
//! change to the script that was not followed by a refresh, fails here.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn generate_from_fixture() -> Value {
    let root = repo();
    let out = Command::new("node")
        .arg(root.join("scripts/catalog/generate.mjs"))
        .arg("--snapshot")
        .arg(root.join("scripts/catalog/fixture/pi-snapshot.json"))
        .args(["--out", "-"])
        .output()
        .expect("node must be installed to run scripts/catalog/generate.mjs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn key(record: &Value) -> (String, String) {
    let text = |k: &str| record[k].as_str().unwrap_or_default().to_string();
    (text("provider"), text("id"))
}

/// The position of each of `part`'s records in `whole` (by `key`), asserting they are equal.
fn positions(
    part: &[Value],
    whole: &[Value],
    key: impl Fn(&Value) -> (String, String),
) -> Vec<usize> {
    part.iter()
        .map(|r| {
            let at = whole
                .iter()
                .position(|w| key(w) == key(r))
                .unwrap_or_else(|| panic!("not in the catalog: {r}"));
            assert_eq!(&whole[at], r, "differs from the script's output");
            at
        })
        .collect()
}

#[test]
fn catalog_is_generated_from_pi() {
    let generated = generate_from_fixture();
    let catalog: Value = serde_json::from_str(include_str!("../../data/catalog.json")).unwrap();
    assert_eq!(generated["source"], catalog["source"]);
    assert_eq!(catalog["source"], "@earendil-works/pi-ai 1.6.0");
    let list = |v: &Value, k: &str| v[k].as_array().unwrap().clone();
    // Every provider: the fixture keeps them all.
    let provider_key = |r: &Value| (r["id"].as_str().unwrap().to_string(), String::new());
    assert_eq!(
        list(&generated, "providers").len(),
        list(&catalog, "providers").len()
    );
    let at = positions(
        &list(&generated, "providers"),
        &list(&catalog, "providers"),
        provider_key,
    );
    assert!(at.windows(2).all(|w| w[0] < w[1]), "provider order {at:?}");
    // The fixture's models, in the catalog's order (pi's default first in each provider).
    let models = list(&generated, "models");
    assert!(models.len() > 50, "{}", models.len());
    let at = positions(&models, &list(&catalog, "models"), key);
    assert!(at.windows(2).all(|w| w[0] < w[1]), "model order {at:?}");
}

#[test]
fn the_catalog_loads_whole() {
    let catalog: Value = serde_json::from_str(include_str!("../../data/catalog.json")).unwrap();
    let registry = filo_ai::ProviderRegistry::builtin().unwrap();
    // Nothing dropped on load: every record of the file is a model of the registry.
    let models = catalog["models"].as_array().unwrap();
    assert_eq!(registry.models().len(), models.len());
    for record in models {
        let (provider, id) = key(record);
        let model = registry.model(&provider, &id).unwrap();
        let parsed: filo_ai::Model = serde_json::from_value(record.clone()).unwrap();
        assert_eq!(model, parsed, "{provider}/{id}");
        // No field of the record is lost on the way in.
        let fields = |v: &Value| {
            let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            k.sort();
            k
        };
        let back = serde_json::to_value(&model).unwrap();
        assert_eq!(fields(&back), fields(record), "{provider}/{id}");
    }
}
