//! `application/x-www-form-urlencoded` as browsers' `URLSearchParams` writes it: for query
//! values and for form bodies (OAuth token exchanges).

/// One name or value: ASCII letters, digits and `*-._` stay, a space becomes `+`, every other
/// byte of the UTF-8 text becomes `%XX`.
pub fn encode_component(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => {
                out.push(char::from(byte));
            }
            b' ' => out.push('+'),
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}

/// `name=value` pairs joined by `&`.
pub fn encode_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    pairs
        .into_iter()
        .map(|(k, v)| format!("{}={}", encode_component(k), encode_component(v)))
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_like_url_search_params() {
        assert_eq!(encode_component("v1"), "v1");
        assert_eq!(encode_component("a b&c=d/é*~"), "a+b%26c%3Dd%2F%C3%A9*%7E");
        assert_eq!(
            encode_pairs([
                ("grant_type", "refresh_token"),
                ("refresh_token", "1//0g+x")
            ]),
            "grant_type=refresh_token&refresh_token=1%2F%2F0g%2Bx"
        );
    }
}
