mod backends;
mod concurrency;
mod fixes;
mod golden;
mod model;
mod recover;
mod store;
mod surrogates;
