//! The models a session may switch to: a fixed list, or a registry's models listed only when
//! something needs them all (a one-shot run that names its model never does, so it never
//! parses the rest of the bundled catalog).

use std::sync::{Arc, OnceLock};

use filo_ai::{Model, ProviderRegistry};

/// Every model a session knows, in the registry's order, with the start model added at the end
/// when the registry does not list it.
#[derive(Debug, Clone, Default)]
pub struct ModelList {
    /// The list, once made (at once for [`ModelList::from`] a `Vec`).
    list: OnceLock<Vec<Model>>,
    /// Where the list comes from when it is made on first use.
    registry: Option<Arc<ProviderRegistry>>,
    /// A model to add after the registry's when it does not list it.
    extra: Option<Model>,
}

impl From<Vec<Model>> for ModelList {
    fn from(models: Vec<Model>) -> Self {
        ModelList {
            list: OnceLock::from(models),
            registry: None,
            extra: None,
        }
    }
}

impl ModelList {
    /// The registry's models and then `model` unless the registry lists it (by provider and
    /// id), listed on first use.
    pub fn from_registry(registry: Arc<ProviderRegistry>, model: Option<Model>) -> Self {
        ModelList {
            list: OnceLock::new(),
            registry: Some(registry),
            extra: model,
        }
    }

    /// Add `model` at the end unless a model with its provider and id is listed.
    pub fn with(mut self, model: Option<Model>) -> Self {
        let Some(model) = model else { return self };
        if let Some(list) = self.list.get_mut() {
            if !list.iter().any(|x| x.same_as(&model)) {
                list.push(model);
            }
        } else if self.extra.is_none() {
            self.extra = Some(model);
        } else if !self.extra.as_ref().is_some_and(|e| e.same_as(&model)) {
            let mut list = self.all().to_vec();
            if !list.iter().any(|x| x.same_as(&model)) {
                list.push(model);
            }
            self.list = OnceLock::from(list);
        }
        self
    }

    /// Every model, made on first use.
    pub fn all(&self) -> &[Model] {
        if let Some(list) = self.list.get() {
            return list;
        }
        let Some(registry) = &self.registry else {
            return self.list.get_or_init(Vec::new);
        };
        match &self.extra {
            Some(m) if !self.listed(registry, m) => self.list.get_or_init(|| {
                let mut list = registry.models().to_vec();
                list.push(m.clone());
                list
            }),
            _ => registry.models(),
        }
    }

    fn listed(&self, registry: &ProviderRegistry, m: &Model) -> bool {
        registry.models_of(&m.provider).any(|x| x.id == m.id)
    }

    /// The first model with this provider and id, as `all().iter().find(…)` would give it,
    /// without listing every model.
    pub fn find(&self, provider: &str, id: &str) -> Option<&Model> {
        let is = |m: &Model| m.provider == provider && m.id == id;
        match (self.list.get(), &self.registry) {
            (None, Some(registry)) => registry
                .models_of(provider)
                .find(|m| m.id == id)
                .or(self.extra.as_ref().filter(|m| is(m))),
            _ => self.all().iter().find(|m| is(m)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry() -> Arc<ProviderRegistry> {
        Arc::new(ProviderRegistry::builtin().unwrap())
    }

    /// What the session kept before: the registry's list, the start model pushed when missing.
    fn eager(registry: &ProviderRegistry, model: Option<&Model>) -> Vec<Model> {
        let mut list = registry.models().to_vec();
        if let Some(m) = model
            && !list.iter().any(|x| x.same_as(m))
        {
            list.push(m.clone());
        }
        list
    }

    #[test]
    fn a_lazy_list_is_the_eager_list() {
        let r = registry();
        let listed = r.model("anthropic", "claude-sonnet-4-5").unwrap();
        let made_up = r.model("ollama", "qwen3:8b").unwrap();
        let renamed = Model {
            name: "same key, another name".into(),
            ..listed.clone()
        };
        for start in [None, Some(&listed), Some(&made_up), Some(&renamed)] {
            let want = eager(&r, start);
            let lazy = || ModelList::from_registry(registry(), start.cloned());
            let by_with = || ModelList::from_registry(registry(), None).with(start.cloned());
            let from_vec = || ModelList::from(r.models().to_vec()).with(start.cloned());
            for list in [lazy(), by_with(), from_vec()] {
                // Looked up before and after the list is made.
                for (p, id) in [
                    ("anthropic", "claude-sonnet-4-5"),
                    ("ollama", "qwen3:8b"),
                    ("openai", "gpt-4o"),
                    ("nope", "x"),
                ] {
                    let eager_find = want.iter().find(|m| m.provider == p && m.id == id);
                    assert_eq!(list.find(p, id), eager_find, "{p}/{id} {start:?}");
                }
                assert_eq!(list.all(), want.as_slice());
                assert_eq!(
                    list.find("ollama", "qwen3:8b"),
                    want.iter().find(|m| m.same_as(&made_up))
                );
            }
        }
        // A second start model on a lazy list.
        let two = ModelList::from_registry(registry(), Some(made_up.clone()))
            .with(Some(r.model("llamacpp", "x").unwrap()));
        let mut want = eager(&r, Some(&made_up));
        want.push(r.model("llamacpp", "x").unwrap());
        assert_eq!(two.all(), want.as_slice());
        assert!(ModelList::default().all().is_empty());
    }
}
