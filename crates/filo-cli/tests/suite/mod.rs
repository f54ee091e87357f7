mod agent;
mod dag;
