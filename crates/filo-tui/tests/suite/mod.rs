mod app;
mod frames;
mod support;
