mod frames;
mod support;
